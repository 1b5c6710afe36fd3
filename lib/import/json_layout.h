// A tensor layout written in a JSON document (a .ptd manifest's
// tensor_layout, a case file's tensor): the document's own shape (which
// members, integers or not) is the importer's; the ranges and the layout's
// validity are the library's one rule (etpack/tensor_layout.h), so every
// importer refuses the same layouts with the same codes and words.

#ifndef ETPACK_IMPORT_JSON_LAYOUT_H_
#define ETPACK_IMPORT_JSON_LAYOUT_H_

#include <string>

#include "core/json_document.h"
#include "etpack/json.h"
#include "etpack/status.h"
#include "etpack/tensor_layout.h"

namespace etpack {

// A scalar type given by its schema name ("FLOAT", case-sensitive) or its
// integer code: one with an element size. kInvalidArgument naming the
// JSON path and the value otherwise (a name: with the names there are).
Result<int> JsonScalarType(const JsonDocument& cx, const json::Value& v, const std::string& path);

// The layout of `scalar_type` with `sizes` and `dim_order` (nullptr or
// null: 0..rank-1), each an array of integers at `sizes_path`,
// `order_path` (kInvalidArgument naming the path otherwise); the values'
// ranges (LayoutOfInts) and the layout's validity (LayoutNbytes) are
// checked as the library checks them, errors named cx.Where(path).
Result<TensorLayout> JsonLayout(const JsonDocument& cx, int scalar_type, const json::Value& sizes,
                                const json::Value* dim_order, const std::string& path);

}  // namespace etpack

#endif  // ETPACK_IMPORT_JSON_LAYOUT_H_
