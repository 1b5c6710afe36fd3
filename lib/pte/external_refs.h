// pte/external_refs.h (internal) — where each EXTERNAL tensor of a program
// finds its bytes: what the check of a program with its data
// (CheckExternalReferences), the split (ExternalizeConstants), the way back
// (InternalizeData) and the program-with-data planner share
// (external_refs.cc).

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

// The runtime merges the keys of a program's data files into one map,
// which refuses duplicates: which file would win is not defined. Reading
// (CheckDataSet) and writing (PlanProgramWithData) refuse them alike, with
// this kInvalidArgument naming the key and both files.
Status KeyInTwoFiles(const std::string& key, const std::string& first, const std::string& second);

// Every EXTERNAL tensor of `pte`, in program order, resolved in `data` by
// the rules (and with the errors) of CheckExternalReferences.
Result<std::vector<ExternalRef>> ResolveExternalTensors(const PteFile& pte,
                                                        const std::vector<const PtdFile*>& data);

}  // namespace etpack

#endif  // ETPACK_PTE_EXTERNAL_REFS_H_
