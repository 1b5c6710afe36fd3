// The checks and names of TensorLayout (etpack/tensor_layout.h): what every
// format that stores a tensor's shape (.ptd layouts, .pte tensors, bundled
// values, imports) measures a layout with.

#include "etpack/tensor_layout.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "etpack/list_text.h"
#include "flatbuffer/scalar_type.h"

namespace etpack {

namespace {

// "[2, 3]": how a layout's sizes and dim_order read in messages.
template <typename Int>
std::string Join(const std::vector<Int>& v) {
  // Appended, not "[" + text: GCC 12 at -O3 warns (-Wrestrict) about the
  // insert at the front that operator+ makes.
  std::string text = "[";
  text += ListText(v);
  text += "]";
  return text;
}

}  // namespace

std::string DescribeLayout(const TensorLayout& l) {
  return ScalarTypeName(l.scalar_type) + Join(l.sizes) + " dim_order " + Join(l.dim_order);
}

std::string DescribeLayout(const std::optional<TensorLayout>& layout) {
  return layout ? DescribeLayout(*layout) : std::string();
}

std::string LayoutDifferences(const TensorLayout& there, const TensorLayout& here) {
  std::string text;
  auto differ = [&](const char* field, const std::string& a, const std::string& b) {
    if (a == b) return;
    text += (text.empty() ? "" : "; ") + std::string(field) + " " + a + " there, " + b + " here";
  };
  differ("dtype", ScalarTypeName(there.scalar_type), ScalarTypeName(here.scalar_type));
  differ("sizes", Join(there.sizes), Join(here.sizes));
  differ("dim_order", Join(there.dim_order), Join(here.dim_order));
  return text;
}

Status CheckRank(uint64_t rank, const std::string& what) {
  if (rank <= kMaxTensorRank) return Status::OK();
  return InvalidArgument(what + ": rank " + std::to_string(rank) +
                         " exceeds the runtime's limit of " + std::to_string(kMaxTensorRank) +
                         " dimensions");
}

Result<TensorLayout> LayoutOfInts(int scalar_type, const std::vector<int64_t>& sizes,
                                  const std::vector<int64_t>& dim_order, const std::string& what) {
  TensorLayout l;
  l.scalar_type = scalar_type;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0 || sizes[i] > INT32_MAX) {
      return OutOfRange(what + ": sizes[" + std::to_string(i) + "] = " + std::to_string(sizes[i]) +
                        " is not a size the format holds (0 to " + std::to_string(INT32_MAX) + ")");
    }
    l.sizes.push_back(static_cast<int32_t>(sizes[i]));
  }
  for (size_t i = 0; i < dim_order.size(); ++i) {
    if (dim_order[i] < 0 || dim_order[i] > UINT8_MAX) {
      return InvalidArgument(what + ": dim_order[" + std::to_string(i) + "] = " +
                             std::to_string(dim_order[i]) + " is not a dimension index (0 to 255)");
    }
    l.dim_order.push_back(static_cast<uint8_t>(dim_order[i]));
  }
  return l;
}

Result<uint64_t> LayoutNbytes(const TensorLayout& layout, const std::string& what) {
  ETPACK_RETURN_IF_ERROR(CheckRank(layout.sizes.size(), what));
  if (layout.dim_order.size() != layout.sizes.size()) {
    return InvalidArgument(what + ": dim_order has " + std::to_string(layout.dim_order.size()) +
                           " entries for " + std::to_string(layout.sizes.size()) + " dimensions");
  }
  std::vector<bool> seen(layout.sizes.size(), false);
  for (uint8_t d : layout.dim_order) {
    if (d >= seen.size() || seen[d]) {
      return InvalidArgument(what + ": dim_order " + Join(layout.dim_order) +
                             " is not a permutation of 0.." +
                             std::to_string(static_cast<int>(layout.sizes.size()) - 1));
    }
    seen[d] = true;
  }
  Result<uint64_t> n = TensorNbytes(layout.scalar_type, layout.sizes, what);
  if (!n.ok()) return InvalidArgument(n.status().message());
  return n;
}

}  // namespace etpack
