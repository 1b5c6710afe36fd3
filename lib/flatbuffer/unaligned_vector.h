// flatbuffer/unaligned_vector.h — reading vectors of 8-byte scalars from
// untrusted FlatBuffers.
//
// The FlatBuffers verifier checks a vector's alignment only to its 4-byte
// length prefix, so in a verified but crafted buffer the elements of a
// [uint64], [int64] or [double] vector may sit at an address that is 4- but
// not 8-aligned. Vector<T>::Get, its iterators and ReadScalar dereference a
// T pointer there, which is undefined behaviour; these read the bytes.

#ifndef ETPACK_FLATBUFFER_UNALIGNED_VECTOR_H_
#define ETPACK_FLATBUFFER_UNALIGNED_VECTOR_H_

#include <flatbuffers/flatbuffers.h>

#include <cstring>
#include <type_traits>
#include <vector>

namespace etpack {

// Element i of `v`. REQUIRES: i < v.size().
template <typename T>
T UnalignedAt(const flatbuffers::Vector<T>& v, flatbuffers::uoffset_t i) {
  static_assert(std::is_arithmetic_v<T>, "scalar vectors only");
  T x;
  std::memcpy(&x, v.Data() + static_cast<size_t>(i) * sizeof(T), sizeof(T));
  return flatbuffers::EndianScalar(x);
}

// All of `v`, in order.
template <typename T>
std::vector<T> UnalignedCopy(const flatbuffers::Vector<T>& v) {
  std::vector<T> out(v.size());
  for (flatbuffers::uoffset_t i = 0; i < v.size(); ++i) out[i] = UnalignedAt(v, i);
  return out;
}

}  // namespace etpack

#endif  // ETPACK_FLATBUFFER_UNALIGNED_VECTOR_H_
