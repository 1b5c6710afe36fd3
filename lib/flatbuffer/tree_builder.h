// flatbuffer/tree_builder.h (internal) — builds a flatbuffer from a JSON tree
// in flatc form (etpack/json.h), driven by the embedded binary schema.
//
// Why not flatc's object API: its Pack() drops empty vectors, but for
// ExecuTorch an absent vector and a present empty one differ (a plan's
// `delegates: []` must be present, `compile_specs` may be either). Why not
// flatc's JSON parser: errors name the path and the value, and every input
// of the one builder (table_builder.h) gives the same bytes.

#ifndef ETPACK_FLATBUFFER_TREE_BUILDER_H_
#define ETPACK_FLATBUFFER_TREE_BUILDER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "etpack/json.h"
#include "etpack/status.h"
#include "flatbuffer/build_options.h"
#include "flatbuffer/schema_info.h"

namespace etpack {

// Builds a finished flatbuffer (root + file identifier) from `root`, a tree
// in flatc form for the schema's root table. Accepted forms:
//   scalars: JSON numbers or booleans; enums also by name; float fields also
//     "inf", "-inf", "nan"; out-of-range integers are errors
//   [ubyte]: an array of byte values (bulk bytes reach a flatbuffer through
//     a copy's typed edits instead: flatbuffer/table_copy.h)
//   unions: "<field>_type" (member table name, or its integer code) + "<field>"
//   null or missing member: field absent
// Errors name the path: "execution_plan[0].values[3].val.sizes[1]: ...",
// after options.root_path.
// Unknown members are errors. The result is below 2 GiB or an error.
Result<std::vector<uint8_t>> BuildFlatbuffer(SchemaId schema, const json::Value& root,
                                             const BuildOptions& options = {});

}  // namespace etpack

#endif  // ETPACK_FLATBUFFER_TREE_BUILDER_H_
