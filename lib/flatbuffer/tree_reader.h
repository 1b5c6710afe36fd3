// flatbuffer/tree_reader.h (internal) — reads a flatbuffer back: into a JSON
// tree in flatc form (etpack/json.h), or rendered as flatc's JSON text.

#ifndef ETPACK_FLATBUFFER_TREE_READER_H_
#define ETPACK_FLATBUFFER_TREE_READER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "etpack/json.h"
#include "etpack/status.h"
#include "flatbuffer/schema_info.h"

namespace etpack {

struct TreeReadOptions {
  // Fields read as absent, by "Table.field" (e.g. "Buffer.storage"): bulk
  // bytes that the caller takes from the buffer itself.
  std::vector<std::string> omit;
  // Check every table, field, string and vector against the buffer's
  // bounds before reading it, and name the path of the first that fails.
  // Without it the buffer must already have passed the schema's verifier.
  bool verify = false;
};

// Converts a flatbuffer (root at data[0]) to a tree in the input form of the
// golden CASE.input.json files: every scalar field with its value (defaults
// included), enums as integers, union types by member table name, absent
// offset fields omitted (present empty vectors stay []), [ubyte] vectors as
// arrays of byte values. Errors (kCorrupt) name the path.
Result<json::Value> FlatbufferToTree(SchemaId schema, const uint8_t* data, uint64_t size,
                                     const TreeReadOptions& options = {});

// Renders a flatbuffer exactly like
//   flatc --json --strict-json --defaults-json --raw-binary SCHEMA -- FILE
// (the golden CASE.flatc.json files). REQUIRES: verified buffer.
Result<std::string> FlatbufferToFlatcJson(SchemaId schema, const uint8_t* data, uint64_t size);

}  // namespace etpack

#endif  // ETPACK_FLATBUFFER_TREE_READER_H_
