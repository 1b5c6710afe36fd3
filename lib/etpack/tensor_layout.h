// etpack/tensor_layout.h — a tensor's dtype, shape and dimension order, as
// .ptd entries, .pte tensors and bundled test values all describe it.

#ifndef ETPACK_TENSOR_LAYOUT_H_
#define ETPACK_TENSOR_LAYOUT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "etpack/status.h"

namespace etpack {

// ExecuTorch ScalarType codes: the values TensorLayout::scalar_type holds.
namespace dtype {
inline constexpr int kByte = 0;  // uint8
inline constexpr int kChar = 1;  // int8
inline constexpr int kShort = 2;
inline constexpr int kInt = 3;
inline constexpr int kLong = 4;
inline constexpr int kHalf = 5;
inline constexpr int kFloat = 6;
inline constexpr int kDouble = 7;
inline constexpr int kBool = 11;
inline constexpr int kBFloat16 = 15;
inline constexpr int kUInt16 = 27;
inline constexpr int kUInt32 = 28;
inline constexpr int kUInt64 = 29;
}  // namespace dtype

struct TensorLayout {
  int scalar_type = 0;             // an ExecuTorch ScalarType code (dtype::k...)
  std::vector<int32_t> sizes;      // each >= 0
  std::vector<uint8_t> dim_order;  // a permutation of 0..rank-1

  bool operator==(const TensorLayout& o) const {
    return scalar_type == o.scalar_type && sizes == o.sizes && dim_order == o.dim_order;
  }
  bool operator!=(const TensorLayout& o) const { return !(*this == o); }
};

// The runtime's limit on a tensor's rank (kTensorDimensionLimit): every
// tensor etpack writes or reads (.pte tensors, .ptd layouts, bundled values,
// imported checkpoints) is held to it.
inline constexpr size_t kMaxTensorRank = 16;

// kInvalidArgument naming `what` and `rank` when rank > kMaxTensorRank.
// Check the rank before building a layout of that many dimensions.
Status CheckRank(uint64_t rank, const std::string& what);

// A layout from the wider integers a front end holds (Python ints, JSON
// numbers): each size must fit the format's int32 and not be negative
// (kOutOfRange), each dim_order entry its uint8 (kInvalidArgument); the
// error names `what`, the index and the value: "w: sizes[1] = -3 is not a
// size the format holds (0 to 2147483647)". Whether the result is a valid
// layout is LayoutNbytes' to say.
Result<TensorLayout> LayoutOfInts(int scalar_type, const std::vector<int64_t>& sizes,
                                  const std::vector<int64_t>& dim_order, const std::string& what);

// "FLOAT[4, 3] dim_order [0, 1]", for messages.
std::string DescribeLayout(const TensorLayout& layout);
// The same for a layout that may be absent (a blob has none): "" then. Two
// items' texts are equal exactly when their layouts are (both absent, or
// equal), so the text can stand for the layout as a map's key.
std::string DescribeLayout(const std::optional<TensorLayout>& layout);

// What differs between two layouts of one name, each field with both
// values: "dtype FLOAT there, HALF here; sizes [2, 3] there, [3, 2] here"
// (`there` is the first one met); empty when they are equal.
std::string LayoutDifferences(const TensorLayout& there, const TensorLayout& here);

// Bytes a tensor of this layout occupies. kInvalidArgument naming `what`
// for a layout that is not valid (rank above kMaxTensorRank, negative size,
// dim_order not a permutation, unknown dtype, a byte count beyond 64 bits).
Result<uint64_t> LayoutNbytes(const TensorLayout& layout, const std::string& what);

}  // namespace etpack

#endif  // ETPACK_TENSOR_LAYOUT_H_
