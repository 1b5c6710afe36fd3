#include "import/json_layout.h"

#include <cstdint>
#include <string>
#include <vector>

#include "flatbuffer/scalar_type.h"

namespace etpack {
namespace {

// Codes beyond the schema's byte enum cannot be written.
constexpr int kMaxCode = 127;

// An array of integers as int64 (a value above INT64_MAX is kept as
// INT64_MAX: out of every layout range all the same, and named by its path).
Result<std::vector<int64_t>> Ints(const JsonDocument& cx, const json::Value& v,
                                  const std::string& path) {
  if (v.kind() != json::Kind::kArray) return cx.BadValue(path, v, "is not an array");
  std::vector<int64_t> out;
  out.reserve(v.items().size());
  for (size_t i = 0; i < v.items().size(); ++i) {
    const json::Value& d = v.items()[i];
    if (d.kind() == json::Kind::kInt) {
      out.push_back(d.as_int());
    } else if (d.kind() == json::Kind::kUInt) {
      out.push_back(d.as_uint() > INT64_MAX ? INT64_MAX : static_cast<int64_t>(d.as_uint()));
    } else {
      return cx.BadValue(IndexPath(path, i), d, "is not an integer");
    }
  }
  return out;
}

}  // namespace

Result<int> JsonScalarType(const JsonDocument& cx, const json::Value& v, const std::string& path) {
  if (v.kind() == json::Kind::kString) {
    for (int code = 0; code <= kMaxCode; ++code) {
      if (ScalarTypeElementSize(code) != 0 && ScalarTypeName(code) == v.as_string()) return code;
    }
    std::string names;
    for (int code = 0; code <= kMaxCode; ++code) {
      if (ScalarTypeElementSize(code) == 0) continue;
      if (!names.empty()) names += ' ';
      names += ScalarTypeName(code);
    }
    return cx.BadValue(path, v,
                       "is not a scalar type name (names are case-sensitive: " + names +
                           "; or give the integer code)");
  }
  if (v.kind() == json::Kind::kInt && v.as_int() >= 0 && v.as_int() <= kMaxCode &&
      ScalarTypeElementSize(static_cast<int>(v.as_int())) != 0) {
    return static_cast<int>(v.as_int());
  }
  return cx.BadValue(path, v, "is not a scalar type with a known element size");
}

Result<TensorLayout> JsonLayout(const JsonDocument& cx, int scalar_type, const json::Value& sizes,
                                const json::Value* dim_order, const std::string& path) {
  const std::string sizes_path = MemberPath(path, "sizes");
  ETPACK_ASSIGN_OR_RETURN(const std::vector<int64_t> size_ints, Ints(cx, sizes, sizes_path));
  // Refused before a layout of that many dimensions is built.
  ETPACK_RETURN_IF_ERROR(CheckRank(size_ints.size(), cx.Where(path)));
  std::vector<int64_t> order_ints;
  if (dim_order == nullptr || dim_order->is_null()) {
    for (size_t i = 0; i < size_ints.size(); ++i) order_ints.push_back(static_cast<int64_t>(i));
  } else {
    ETPACK_ASSIGN_OR_RETURN(order_ints, Ints(cx, *dim_order, MemberPath(path, "dim_order")));
  }
  ETPACK_ASSIGN_OR_RETURN(TensorLayout layout,
                          LayoutOfInts(scalar_type, size_ints, order_ints, cx.Where(path)));
  ETPACK_RETURN_IF_ERROR(LayoutNbytes(layout, cx.Where(path)).status());
  return layout;
}

}  // namespace etpack
