// ReadProgramObjects: the schema walk itself is the flatbuffer builder's
// (BuildFlatbufferFromObjects); what is the Program's own is here: which
// fields carry bulk bytes and which the planner lays out.

#include "etpack/program_objects.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "flatbuffer/object_builder.h"
#include "pte/program_structure.h"

namespace etpack {
namespace {

using Object = ObjectReader::Object;
using Kind = ObjectReader::Kind;

// getattr(o, key) (the attribute `name`); a missing attribute is a wrong
// type at path() + "." + name.
template <typename PathFn>
Result<Object> Attribute(ObjectReader& r, Object o, ObjectReader::Key key, const char* name,
                         PathFn path, const char* expected) {
  Object v = nullptr;
  bool found = false;
  ETPACK_RETURN_IF_ERROR(r.Get(o, key, &v, &found));
  if (found) return v;
  return MissingAttribute(r, path() + "." + name, expected, o, name);
}

// The bytes attribute `field` of each `table` of the list `list` of
// `program`, as sources. Paths are spelled only for an error: a program
// has 10^5 constants.
Status ReadData(ObjectReader& r, Object program, const std::string& path, const char* list,
                const char* table, const char* field, std::vector<SourcePtr>* out) {
  const std::string expected = std::string("list of ") + table;
  ETPACK_ASSIGN_OR_RETURN(
      Object items, Attribute(
                        r, program, r.KeyOf(list), list, [&] { return path; }, expected.c_str()));
  const std::string at = path + "." + list;
  if (r.KindOf(items) != Kind::kList) {
    return r.WrongType(at + ": expected " + expected + ", found " +
                       std::string(r.ClassName(items)));
  }
  // Reading attributes may run the caller's code: a snapshot.
  ObjectReader::ItemSpan snapshot;
  ETPACK_RETURN_IF_ERROR(r.ItemsOf(items, true, &snapshot));
  const ObjectReader::Key key = r.KeyOf(field);
  out->reserve(out->size() + snapshot.size);
  for (size_t i = 0; i < snapshot.size; ++i) {
    auto item = [&] { return at + "[" + std::to_string(i) + "]"; };
    Object entry = snapshot.items[i];
    if (entry == nullptr) return r.WrongType(item() + ": expected " + table + ", found None");
    ETPACK_ASSIGN_OR_RETURN(Object bytes, Attribute(r, entry, key, field, item, "bytes"));
    ETPACK_ASSIGN_OR_RETURN(SourcePtr source,
                            r.DataOf(bytes, [&] { return item() + "." + field; }));
    out->push_back(std::move(source));
  }
  return Status::OK();
}

}  // namespace

Status ReadProgramObjects(ObjectReader& reader, Object program, const std::string& path,
                          PteInput* input) {
  if (program == nullptr) return reader.WrongType(path + ": expected Program, found None");
  BuildOptions options;
  options.root_path = path;
  ETPACK_ASSIGN_OR_RETURN(
      std::vector<uint8_t> bytes,
      BuildFlatbufferFromObjects(SchemaId::kProgram, reader, program,
                                 {// Bytes beside the structure, read below.
                                  "constant_buffer", "backend_delegate_data",
                                  // What the planner lays out
                                  // (constant_segment is kept
                                  // when there are no constants).
                                  "segments", "mutable_data_segments", "named_data"},
                                 options));
  ETPACK_RETURN_IF_ERROR(
      ReadData(reader, program, path, "constant_buffer", "Buffer", "storage", &input->constants));
  ETPACK_RETURN_IF_ERROR(ReadData(reader, program, path, "backend_delegate_data",
                                  "BackendDelegateInlineData", "data", &input->delegates));
  // Built here, so valid: nothing downstream verifies it again.
  input->program = VerifiedPrograms::Of(OwnedSource(std::move(bytes)));
  return Status::OK();
}

}  // namespace etpack
