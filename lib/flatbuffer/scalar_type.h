// scalar_type.h (internal) — element sizes of ExecuTorch scalar types and
// tensor byte counts, as the runtime computes them (docs/formats.md §1.5).

#ifndef ETPACK_SCALAR_TYPE_H_
#define ETPACK_SCALAR_TYPE_H_

#include <cstdint>
#include <string>

#include "etpack/status.h"

namespace etpack {

// Bytes per element of scalar type `code`, or 0 for a code the runtime
// rejects (outside 0..29) or that has no defined size (reserved codes).
uint32_t ScalarTypeElementSize(int code);

// "FLOAT", "BFLOAT16", ...; "scalar_type <code>" for codes without a name.
std::string ScalarTypeName(int code);

// numel(sizes) * element size, overflow-checked. `what` names the tensor
// in errors: a string, or a callable returning one (called only for an
// error, so a check over every tensor builds no names). Negative sizes and
// unknown types are errors.
template <typename Sizes, typename What>
Result<uint64_t> TensorNbytes(int scalar_type, const Sizes& sizes, const What& what);

}  // namespace etpack

#include "flatbuffer/scalar_type_inl.h"

#endif  // ETPACK_SCALAR_TYPE_H_
