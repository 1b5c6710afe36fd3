// pte/external_refs.h (internal) — where each EXTERNAL tensor of a program
// finds its bytes, and which keys etpack made up itself: what the check of
// a program with its data (CheckExternalReferences), the split
// (ExternalizeConstants) and the way back (InternalizeData) share.

#ifndef ETPACK_PTE_EXTERNAL_REFS_H_
#define ETPACK_PTE_EXTERNAL_REFS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "etpack/ptd_file.h"
#include "etpack/pte_file.h"
#include "etpack/status.h"
#include "program_etpack_generated.h"

namespace etpack {

// An EXTERNAL tensor, execution_plan[plan].values[value], and the .ptd
// entry holding its bytes.
struct ExternalRef {
  uint32_t plan = 0;
  uint32_t value = 0;
  const PtdFile* file = nullptr;
  size_t entry = 0;  // into file->entries()
};

// Every EXTERNAL tensor of `pte`, in program order, resolved in `data` by
// the rules (and with the errors) of CheckExternalReferences.
Result<std::vector<ExternalRef>> ResolveExternalTensors(const PteFile& pte,
                                                        const std::vector<const PtdFile*>& data);

// The key ExternalizeConstants gives the constant at
// execution_plan[p].values[v] when it has no name of its own:
// "constant.<method name, or p when it has none>.<v>", followed by
// ".<n>" (n = 1, 2, ...) when an earlier name took it.
std::string ConstantKeyBase(const pte_fb::Program& program, uint32_t p, uint32_t v);

// Whether `key`, the key of the EXTERNAL tensor at execution_plan[p].values[v],
// is one etpack made up rather than the exporter's name: one made from the
// content (kContentKeyPrefix) or the one ConstantKeyBase gives this very
// tensor (with or without its ".<n>").
bool IsMadeUpKey(const pte_fb::Program& program, uint32_t p, uint32_t v, std::string_view key);

}  // namespace etpack

#endif  // ETPACK_PTE_EXTERNAL_REFS_H_
