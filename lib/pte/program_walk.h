// program_walk.h (internal) — visiting the tensors of a verified Program,
// and what the reader and the checks both say about them.

#ifndef ETPACK_PROGRAM_WALK_H_
#define ETPACK_PROGRAM_WALK_H_

#include <cstdint>
#include <string>

#include "etpack/status.h"
#include "program_etpack_generated.h"

namespace etpack {

// Where the runtime finds a tensor's bytes (docs/formats.md §2.8): in the
// constant segment, or as the initial value of a memory-planned tensor.
inline bool IsExternal(const etpack::pte_fb::Tensor& t) {
  return t.extra_tensor_info() != nullptr &&
         t.extra_tensor_info()->location() == etpack::pte_fb::TensorDataLocation::EXTERNAL;
}
inline bool IsConstantTensor(const etpack::pte_fb::Tensor& t) {
  return !IsExternal(t) && t.data_buffer_idx() > 0 && t.allocation_info() == nullptr;
}
inline bool IsMutableWithInit(const etpack::pte_fb::Tensor& t) {
  return !IsExternal(t) && t.data_buffer_idx() > 0 && t.allocation_info() != nullptr;
}

// "execution_plan[p].values[v]", for messages.
inline std::string TensorPath(uint32_t p, uint32_t v) {
  return "execution_plan[" + std::to_string(p) + "].values[" + std::to_string(v) + "]";
}

// Calls fn(plan index, value index, tensor) for every Tensor value, in
// order, and stops at the first error fn returns.
// REQUIRES: `program` passed the FlatBuffers verifier.
template <typename Fn>
Status ForEachTensor(const etpack::pte_fb::Program& program, Fn fn) {
  const auto* plans = program.execution_plan();
  if (plans == nullptr) return Status::OK();
  for (uint32_t p = 0; p < plans->size(); ++p) {
    const auto* values = plans->Get(p)->values();
    if (values == nullptr) continue;
    for (uint32_t v = 0; v < values->size(); ++v) {
      const etpack::pte_fb::Tensor* t = values->Get(v)->val_as_Tensor();
      if (t != nullptr) ETPACK_RETURN_IF_ERROR(fn(p, v, *t));
    }
  }
  return Status::OK();
}

}  // namespace etpack

#endif  // ETPACK_PROGRAM_WALK_H_
