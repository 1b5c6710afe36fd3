// flatbuffer_tree.h (internal) — schema-driven conversion between a JSON
// tree (etpack/json.h) and a flatbuffer, through the binary schemas that
// the build generates from schema/*.fbs and embeds in the library.
//
// Why not flatc's object API: its Pack() drops empty vectors, but for
// ExecuTorch an absent vector and a present empty one differ (a plan's
// `delegates: []` must be present, `compile_specs` may be either). Why not
// flatc's JSON parser: the tree carries blobs (sources), not byte arrays.

#ifndef ETPACK_FLATBUFFER_TREE_H_
#define ETPACK_FLATBUFFER_TREE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "etpack/json.h"
#include "etpack/status.h"

namespace reflection {
struct Schema;
}

namespace etpack {

enum class SchemaId {
  kProgram,     // schema/program.fbs, root Program, "ET12"
  kFlatTensor,  // schema/flat_tensor.fbs, root FlatTensor, "FT01"
  kBundledProgram,  // schema/bundled_program.fbs, root BundledProgram, "BP08"
};

// The embedded binary schema. Never fails: it is part of the build.
const reflection::Schema& GetSchema(SchemaId id);

// Member `field` of the object `table` (a node of the tree being built)
// reads as `*value` instead of what the tree holds, added when the tree has
// no such member; a null value makes the field absent. This is how a planner
// rewrites a few fields of a large tree it does not own without copying it.
// Both pointers must stay valid for the build.
struct FieldOverride {
  const json::Value* table = nullptr;
  std::string_view field;
  const json::Value* value = nullptr;
};

struct TreeBuildOptions {
  // Data alignment of [ubyte] vectors, by "Table.field" (e.g.
  // "Buffer.storage"), overriding the schema's force_align. This is how
  // constant_tensor_alignment and delegate_alignment take effect.
  std::vector<std::pair<std::string, uint64_t>> vector_alignment;
  // Later entries for the same table and field win. An override of a
  // field the table's type does not have is an error.
  std::vector<FieldOverride> overrides;
};

// Builds a finished flatbuffer (root + file identifier) from `root`, a tree
// in flatc form for the schema's root table. Accepted forms:
//   scalars: JSON numbers or booleans; enums also by name; float fields also
//     "inf", "-inf", "nan"; out-of-range integers are errors
//   [ubyte]: an array of byte values, or a blob (read into the buffer)
//   unions: "<field>_type" (member table name, or its integer code) + "<field>"
//   null or missing member: field absent
// Errors name the path: "execution_plan[0].values[3].val.sizes[1]: ...".
// Unknown members are errors. The result is below 2 GiB or an error.
Result<std::vector<uint8_t>> BuildFlatbuffer(SchemaId schema,
                                             const json::Value& root,
                                             const TreeBuildOptions& options = {});

// Converts a verified flatbuffer (root at data[0]) to a tree in the input
// form of the golden CASE.input.json files: every scalar field with its
// value (defaults included), enums as integers, union types by member table
// name, absent offset fields omitted (present empty vectors stay []),
// [ubyte] vectors as blobs that borrow from `data` and keep `keep_alive`
// alive, except dim_order (dimension indices, an array of integers).
// REQUIRES: the buffer passed the schema's verifier.
Result<json::Value> FlatbufferToTree(SchemaId schema, const uint8_t* data,
                                     uint64_t size,
                                     std::shared_ptr<const void> keep_alive);

// Renders a flatbuffer exactly like
//   flatc --json --strict-json --defaults-json --raw-binary SCHEMA -- FILE
// (the golden CASE.flatc.json files). REQUIRES: verified buffer.
Result<std::string> FlatbufferToFlatcJson(SchemaId schema, const uint8_t* data,
                                          uint64_t size);

}  // namespace etpack

#endif  // ETPACK_FLATBUFFER_TREE_H_
