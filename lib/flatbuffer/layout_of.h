// layout_of.h (internal) — a TensorLayout from a flatbuffer table that
// states one: a .pte or .bpte Tensor, a .ptd TensorLayout. Each format's
// table has scalar_type(), sizes() and dim_order(); this is the one place
// they become a layout.

#ifndef ETPACK_FLATBUFFER_LAYOUT_OF_H_
#define ETPACK_FLATBUFFER_LAYOUT_OF_H_

#include <string>

#include "etpack/status.h"
#include "etpack/tensor_layout.h"

namespace etpack {

// The table's layout. A missing sizes or dim_order reads as empty (for
// dim_order that matches only a 0-dim layout, as at runtime).
template <typename Table>
TensorLayout LayoutOf(const Table& t) {
  TensorLayout l;
  l.scalar_type = static_cast<int>(t.scalar_type());
  if (t.sizes() != nullptr) l.sizes.assign(t.sizes()->begin(), t.sizes()->end());
  if (t.dim_order() != nullptr) l.dim_order.assign(t.dim_order()->begin(), t.dim_order()->end());
  return l;
}

// The same, refusing a table without sizes (of a file being read):
// kCorrupt "<what>.sizes is missing".
template <typename Table>
Result<TensorLayout> LayoutOf(const Table& t, const std::string& what) {
  if (t.sizes() == nullptr) return Corrupt(what + ".sizes is missing");
  return LayoutOf(t);
}

}  // namespace etpack

#endif  // ETPACK_FLATBUFFER_LAYOUT_OF_H_
