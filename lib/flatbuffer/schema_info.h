// flatbuffer/schema_info.h (internal) — the binary schemas that the build
// generates from schema/*.fbs and embeds in the library, decoded once into
// plain tables so that building and reading touch no reflection accessors
// (or strcmp) per value. Shared by the tree builder and the tree reader.

#ifndef ETPACK_FLATBUFFER_SCHEMA_INFO_H_
#define ETPACK_FLATBUFFER_SCHEMA_INFO_H_

#include <flatbuffers/reflection_generated.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace etpack {

enum class SchemaId {
  kProgram,         // schema/program.fbs, root Program, "ET12"
  kFlatTensor,      // schema/flat_tensor.fbs, root FlatTensor, "FT01"
  kBundledProgram,  // schema/bundled_program.fbs, root BundledProgram, "BP08"
};

// The embedded binary schema. Never fails: it is part of the build.
const reflection::Schema& GetSchema(SchemaId id);

namespace fbs {

using flatbuffers::uoffset_t;
using flatbuffers::voffset_t;
using reflection::BaseType;

struct FieldInfo {
  std::string_view name;
  BaseType type = BaseType::None;
  BaseType element = BaseType::None;  // vectors
  int index = -1;                     // enum (scalars, UType, Union) or object (Obj, vector of Obj)
  voffset_t offset = 0;
  int64_t default_integer = 0;
  double default_real = 0;
  bool present = false;  // false: no field has this id (a gap) or deprecated
  bool required = false;
  bool is_struct = false;    // Obj or vector of Obj that is a struct
  int union_type_id = -1;    // Union: id of its "<name>_type" field
  uint64_t force_align = 1;  // the schema's force_align attribute
  const reflection::Field* field = nullptr;
};

struct ObjectInfo {
  std::string_view name;          // unqualified, as flatc JSON names union members
  std::vector<FieldInfo> fields;  // by id = declaration order

  int Lookup(std::string_view key) const {
    for (size_t i = 0; i < fields.size(); ++i) {
      if (fields[i].present && fields[i].name == key) return static_cast<int>(i);
    }
    return -1;
  }
};

struct EnumValue {
  std::string_view name;
  int64_t value = 0;
  int object = -1;  // unions: the member table
};

struct EnumInfo {
  std::string_view name;  // unqualified
  std::vector<EnumValue> values;

  const EnumValue* ByValue(int64_t v) const {
    for (const EnumValue& e : values) {
      if (e.value == v) return &e;
    }
    return nullptr;
  }
};

struct SchemaData {
  const uint8_t* bytes = nullptr;
  size_t size = 0;
  const reflection::Schema* schema = nullptr;
  std::vector<ObjectInfo> objects;
  std::vector<EnumInfo> enums;
  int root = -1;
  std::string file_ident;
};

// The decoded schema. Never fails: it is part of the build.
const SchemaData& Decoded(SchemaId id);

// The field "Table.field" of the schema, or nullptr when there is none.
const FieldInfo* FindField(const SchemaData& d, std::string_view qualified_name);

// The index of the table `name` (unqualified) in d.objects; -1 when none.
int FindObject(const SchemaData& d, std::string_view name);

std::string_view View(const flatbuffers::String* s);
// The schema type name of a scalar ("int", "ubyte", ...).
const char* TypeName(BaseType t);

// An error path's text (etpack/error_path.h), "(root)" when empty.
inline std::string PathOf(const std::string& path) { return path.empty() ? "(root)" : path; }

}  // namespace fbs
}  // namespace etpack

#endif  // ETPACK_FLATBUFFER_SCHEMA_INFO_H_
