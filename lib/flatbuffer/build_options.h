// flatbuffer/build_options.h (internal) — what every input of the one
// builder (table_builder.h) is built with: the JSON tree (tree_builder.h),
// the exporter's objects (object_builder.h) and a flatbuffer copied with
// edits (table_copy.h).

#ifndef ETPACK_FLATBUFFER_BUILD_OPTIONS_H_
#define ETPACK_FLATBUFFER_BUILD_OPTIONS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace etpack {

struct BuildOptions {
  // Data alignment of [ubyte] vectors, by "Table.field" (e.g.
  // "Buffer.storage"), overriding the schema's force_align. This is how
  // constant_tensor_alignment and delegate_alignment take effect.
  std::vector<std::pair<std::string, uint64_t>> vector_alignment;
  // What errors call the root: paths read "<root_path>.execution_plan[0]..."
  // ("program" for a .pte, the member of PteInput the tree came from).
  std::string root_path;
};

}  // namespace etpack

#endif  // ETPACK_FLATBUFFER_BUILD_OPTIONS_H_
