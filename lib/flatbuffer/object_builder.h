// flatbuffer/object_builder.h (internal) — builds a flatbuffer from the
// caller's objects (an exporter's, read through etpack/object_reader.h),
// driven by the embedded binary schema: the third input of the one builder
// (table_builder.h), beside a JSON tree (tree_builder.h) and a verified
// flatbuffer copied with typed edits (table_copy.h).

#ifndef ETPACK_FLATBUFFER_OBJECT_BUILDER_H_
#define ETPACK_FLATBUFFER_OBJECT_BUILDER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "etpack/object_reader.h"
#include "etpack/status.h"
#include "flatbuffer/build_options.h"
#include "flatbuffer/schema_info.h"

namespace etpack {

// The error for `holder` having no attribute `name` where `expected` was
// wanted, through reader.WrongType(): "<path>: expected <expected>, found a
// <class> without attribute '<name>'" (`path`: the attribute's).
Status MissingAttribute(ObjectReader& reader, const std::string& path, const std::string& expected,
                        ObjectReader::Object holder, std::string_view name);

// A flatbuffer of `schema` built from the caller's objects (etpack/object_reader.h
// says how values are expected), leaving out the root's fields named in
// `skip_root_fields`: their values are not read, but a vector field that
// the object holds as a list (present, even if not empty) is built as an
// empty vector, so that "present" survives for the caller to fill in, as
// the reference serializer writes [] where its object has []. None, a
// missing attribute and a skipped table are left out. Errors name options.root_path and the
// path below it; a wrong type or missing attribute comes from
// reader.WrongType(). Built as BuildFlatbuffer builds the same structure.
Result<std::vector<uint8_t>> BuildFlatbufferFromObjects(
    SchemaId schema, ObjectReader& reader, ObjectReader::Object root,
    const std::vector<std::string>& skip_root_fields, const BuildOptions& options = {});

}  // namespace etpack

#endif  // ETPACK_FLATBUFFER_OBJECT_BUILDER_H_
