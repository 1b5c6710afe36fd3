// program_walk.h (internal) — visiting the tensors of a verified Program.

#ifndef ETPACK_PROGRAM_WALK_H_
#define ETPACK_PROGRAM_WALK_H_

#include <cstdint>

#include "etpack/status.h"
#include "program_etpack_generated.h"

namespace etpack {

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
