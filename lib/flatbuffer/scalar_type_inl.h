// Template part of scalar_type.h.
#ifndef ETPACK_SCALAR_TYPE_INL_H_
#define ETPACK_SCALAR_TYPE_INL_H_

#include <string>
#include <type_traits>

namespace etpack {

namespace scalar_type_internal {
template <typename What>
std::string Name(const What& what) {
  if constexpr (std::is_invocable_v<const What&>) {
    return what();
  } else {
    return std::string(what);
  }
}
}  // namespace scalar_type_internal

template <typename Sizes, typename What>
Result<uint64_t> TensorNbytes(int scalar_type, const Sizes& sizes, const What& what) {
  using scalar_type_internal::Name;
  const uint32_t elem = ScalarTypeElementSize(scalar_type);
  if (elem == 0) {
    return Corrupt(Name(what) + ": scalar_type " + std::to_string(scalar_type) +
                   " has no element size");
  }
  uint64_t n = elem;
  for (auto dim : sizes) {
    if (dim < 0) {
      return Corrupt(Name(what) + ": negative size " + std::to_string(dim));
    }
    const uint64_t d = static_cast<uint64_t>(dim);
    if (d != 0 && n > UINT64_MAX / d) {
      return Corrupt(Name(what) + ": element count overflows 64 bits");
    }
    n *= d;
  }
  return n;
}

}  // namespace etpack

#endif  // ETPACK_SCALAR_TYPE_INL_H_
