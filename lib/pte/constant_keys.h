// pte/constant_keys.h (internal) — the key a constant tensor of a program
// has as a .ptd entry. One rule, for every part that names constants by key:
// `repack --external-constants` (ExternalizeConstants) writes them under
// these keys and `update` finds them by the same keys.

#ifndef ETPACK_PTE_CONSTANT_KEYS_H_
#define ETPACK_PTE_CONSTANT_KEYS_H_

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "program_etpack_generated.h"

namespace etpack {

// The key a constant at execution_plan[p].values[v] without a name of its
// own gets: "constant.<method name, or p when it has none>.<v>" (ConstantKeys
// appends ".<n>", n = 1, 2, ..., when an earlier name took it).
std::string ConstantKeyBase(const pte_fb::Program& program, uint32_t p, uint32_t v);

// Whether `key`, the key of the EXTERNAL tensor at execution_plan[p].values[v],
// is one etpack made up rather than the exporter's name: one made from the
// content (kContentKeyPrefix, etpack/external_data.h) or the one
// ConstantKeyBase gives this very tensor (with or without its ".<n>"). The
// way back (InternalizeData) drops such keys.
bool IsMadeUpKey(const pte_fb::Program& program, uint32_t p, uint32_t v, std::string_view key);

class ConstantKeys {
 public:
  // Every fully_qualified_name of `program`'s tensors is taken: a made-up
  // key never collides with a name the exporter gave, here or in a .ptd.
  // REQUIRES: `program` passed the verifier, and outlives this object.
  explicit ConstantKeys(const pte_fb::Program& program);

  // The key of the constant tensor t = execution_plan[p].values[v]: its
  // fully_qualified_name when non-empty, else ConstantKeyBase with ".<n>"
  // (n = 1, 2, ...) appended until the key is not taken; the key is then
  // taken.
  // Call it for the constants in ForEachTensor's order (program_walk.h):
  // which key is made depends on the ones made before.
  std::string Of(uint32_t p, uint32_t v, const pte_fb::Tensor& t);

 private:
  const pte_fb::Program& program_;
  std::set<std::string> taken_;
};

}  // namespace etpack

#endif  // ETPACK_PTE_CONSTANT_KEYS_H_
