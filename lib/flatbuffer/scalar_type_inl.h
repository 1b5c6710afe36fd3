// Template part of scalar_type.h.
#ifndef ETPACK_SCALAR_TYPE_INL_H_
#define ETPACK_SCALAR_TYPE_INL_H_

namespace etpack {

template <typename Sizes>
Result<uint64_t> TensorNbytes(int scalar_type, const Sizes& sizes, const std::string& what) {
  const uint32_t elem = ScalarTypeElementSize(scalar_type);
  if (elem == 0) {
    return Corrupt(what + ": scalar_type " + std::to_string(scalar_type) + " has no element size");
  }
  uint64_t n = elem;
  for (auto dim : sizes) {
    if (dim < 0) {
      return Corrupt(what + ": negative size " + std::to_string(dim));
    }
    const uint64_t d = static_cast<uint64_t>(dim);
    if (d != 0 && n > UINT64_MAX / d) {
      return Corrupt(what + ": element count overflows 64 bits");
    }
    n *= d;
  }
  return n;
}

}  // namespace etpack

#endif  // ETPACK_SCALAR_TYPE_INL_H_
