#include "flatbuffer/tree_builder.h"

#include "etpack/object_reader.h"

#include <flatbuffers/flatbuffer_builder.h>
#include <flatbuffers/reflection.h>

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace etpack {
namespace {

using namespace fbs;  // NOLINT: the schema tables are this file's vocabulary

// flatbuffers offsets are signed 32-bit; its builder aborts (asserts) past
// this, so every append is checked against it first.
constexpr uint64_t kMaxFlatbufferSize = (uint64_t{1} << 31) - 1;
// Held back for what follows the last checked append: table vtables, final
// alignment padding and the root offset + identifier written by Finish.
constexpr uint64_t kFinishReserve = uint64_t{1} << 17;
constexpr uint64_t kMaxVectorAlignment = uint64_t{1} << 16;

const char* KindName(json::Kind k) {
  switch (k) {
    case json::Kind::kNull: return "null";
    case json::Kind::kBool: return "a boolean";
    case json::Kind::kInt:
    case json::Kind::kUInt: return "an integer";
    case json::Kind::kDouble: return "a number";
    case json::Kind::kString: return "a string";
    case json::Kind::kArray: return "an array";
    case json::Kind::kObject: return "an object";
  }
  return "?";
}

// A value as it appears in an error message.
std::string Show(const json::Value& v) {
  switch (v.kind()) {
    case json::Kind::kInt: return std::to_string(v.as_int());
    case json::Kind::kUInt: return std::to_string(v.as_uint());
    case json::Kind::kDouble: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", v.as_double());
      return buf;
    }
    case json::Kind::kString: {
      std::string s = v.as_string();
      if (s.size() > 64) s = s.substr(0, 61) + "...";
      return "\"" + s + "\"";
    }
    case json::Kind::kBool: return v.as_bool() ? "true" : "false";
    default: return KindName(v.kind());
  }
}

struct IntRange {
  int64_t min;
  uint64_t max;
};

IntRange RangeOf(BaseType t) {
  switch (t) {
    case BaseType::Bool: return {0, 1};
    case BaseType::Byte: return {INT8_MIN, INT8_MAX};
    case BaseType::UType:
    case BaseType::UByte: return {0, UINT8_MAX};
    case BaseType::Short: return {INT16_MIN, INT16_MAX};
    case BaseType::UShort: return {0, UINT16_MAX};
    case BaseType::Int: return {INT32_MIN, INT32_MAX};
    case BaseType::UInt: return {0, UINT32_MAX};
    case BaseType::Long: return {INT64_MIN, INT64_MAX};
    case BaseType::ULong: return {0, UINT64_MAX};
    default: return {0, 0};
  }
}

// Writes the low bytes of `bits` (an integer of type t, two's complement)
// little-endian at dst.
void WriteInt(BaseType t, uint8_t* dst, uint64_t bits) {
  switch (flatbuffers::GetTypeSize(t)) {
    case 1: flatbuffers::WriteScalar<uint8_t>(dst, static_cast<uint8_t>(bits)); break;
    case 2: flatbuffers::WriteScalar<uint16_t>(dst, static_cast<uint16_t>(bits)); break;
    case 4: flatbuffers::WriteScalar<uint32_t>(dst, static_cast<uint32_t>(bits)); break;
    default: flatbuffers::WriteScalar<uint64_t>(dst, bits); break;
  }
}

// One builder, three kinds of input: a JSON tree (Build), a verified
// flatbuffer copied with some fields replaced (Rebuild) and the caller's
// objects read through an ObjectReader (BuildFromObjects). Every kind builds
// a table the same way: its children in field order, then the table, so one
// structure gives the same bytes whichever way it came.
class TreeBuilder {
 public:
  using Object = ObjectReader::Object;

  explicit TreeBuilder(const SchemaData& data, size_t initial_size = 1024)
      : d_(data), fbb_(initial_size) {}

  Status Configure(const TreeBuildOptions& options);
  Result<std::vector<uint8_t>> Build(const json::Value& root);
  Result<std::vector<uint8_t>> Rebuild(const uint8_t* verified, const json::Value& root_overrides);
  Result<std::vector<uint8_t>> BuildFromObjects(ObjectReader& reader, Object root,
                                                const std::vector<std::string>& skip_root_fields);

 private:
  Status Fail(const std::string& message) const {
    return InvalidArgument(PathOf(Path()) + ": " + message);
  }
  // `index` >= 0 names a vector element.
  Status FailAt(int64_t index, const std::string& message) const {
    if (index < 0) return Fail(message);
    return InvalidArgument(PathOf(Path()) + "[" + std::to_string(index) + "]: " + message);
  }
  Status Room(uint64_t bytes) const;

  Result<uoffset_t> Table(int obj_index, const json::Value& v);
  Result<uoffset_t> Child(const FieldInfo& f, const json::Value& v);
  Result<uoffset_t> UnionMember(const FieldInfo& f, const FieldInfo& type_field,
                                const json::Value* type, const json::Value* value);
  Status AddScalar(const FieldInfo& f, const json::Value& v);
  // An integer field (bool, enum, union type) of two's complement `bits`;
  // a value equal to the default is left out, as flatc does.
  void AddIntElement(const FieldInfo& f, uint64_t bits);
  Result<uoffset_t> String(const json::Value& v);
  Result<uoffset_t> Vector(const FieldInfo& f, const json::Value& v);
  Result<uoffset_t> ScalarVector(const FieldInfo& f, const json::Value& v);
  Result<uoffset_t> SourceVector(const FieldInfo& f, const json::Value& v);
  Result<uoffset_t> OffsetVector(const std::vector<uoffset_t>& offsets);
  Result<std::vector<uint8_t>> Finish(uoffset_t root);

  // Rebuild: a table of the verified buffer, with `overrides` (an object or
  // nullptr) replacing the fields it names.
  Result<uoffset_t> CopyTable(int obj_index, const flatbuffers::Table& t,
                              const json::Value* overrides);
  Result<uoffset_t> CopyVector(const FieldInfo& f, const flatbuffers::Table& t);
  void CopyScalar(const FieldInfo& f, const flatbuffers::Table& t);
  // The replacement of f in the table being copied, or nullptr.
  const json::Value* Replacement(const FieldInfo& f);

  // BuildFromObjects.
  struct ObjectScalar {
    const FieldInfo* field;
    uint64_t bits;
    double real;
  };
  Result<uoffset_t> ObjectTable(int obj_index, Object o, bool root = false);
  Result<uoffset_t> ObjectVector(const FieldInfo& f, Object v);
  Result<uoffset_t> ObjectString(Object v);
  // A scalar of type t (enum `enum_index` or -1) as two's complement bits
  // or, for float and double, a real.
  Status ObjectScalarValue(BaseType t, int enum_index, Object v, uint64_t* bits, double* real);
  Result<Object> Attribute(Object o, int obj_index, size_t id);
  Status WrongType(Object found, const std::string& expected);
  Status Invalid(const std::string& message) const { return Fail(message); }
  std::string TypeOf(BaseType t, int index) const;
  std::string Expected(const FieldInfo& f) const;

  // An integer (or enum) value of type t as two's complement bits.
  Result<uint64_t> Integer(BaseType t, int enum_index, const json::Value& v,
                           int64_t index = -1) const;
  Result<double> Real(BaseType t, const json::Value& v, int64_t index = -1) const;
  // The union member code named by a "<field>_type" value.
  Result<uint8_t> UnionCode(const EnumInfo& e, const json::Value& v) const;

  uint64_t VectorAlignment(const FieldInfo& f) const {
    auto it = alignment_.find(f.field);
    return it != alignment_.end() ? it->second : f.force_align;
  }

  // Where the build is, for errors: the root path, then the fields and
  // indices pushed and popped without building any text (a tree of a
  // million tables would otherwise edit the path text at every field); the
  // text is rendered only for an error.
  class Push {
   public:
    Push(TreeBuilder& b, std::string_view name) : b_(b) { b.frames_.push_back({name, kName}); }
    Push(TreeBuilder& b, size_t index) : b_(b) { b.frames_.push_back({{}, index}); }
    ~Push() { b_.frames_.pop_back(); }
    Push(const Push&) = delete;
    Push& operator=(const Push&) = delete;

   private:
    TreeBuilder& b_;
  };
  std::string Path() const {
    std::string path = root_path_;
    for (const auto& [name, index] : frames_) {
      if (index == kName) {
        AppendPathName(path, name);
      } else {
        AppendPathIndex(path, index);
      }
    }
    return path;
  }

  const SchemaData& d_;
  flatbuffers::FlatBufferBuilder fbb_{1024};
  std::string root_path_;
  // A field (kName and its name: schema or tree text) or an index.
  static constexpr size_t kName = SIZE_MAX;
  std::vector<std::pair<std::string_view, size_t>> frames_;
  // Stacks shared by the recursion, so a table costs no allocation of its
  // own: the tree member of each field (by id) of the tables under
  // construction, and their children's (vtable offset, offset) pairs.
  std::vector<const json::Value*> slots_;
  std::vector<std::pair<voffset_t, uoffset_t>> pending_;
  std::unordered_map<const reflection::Field*, uint64_t> alignment_;
  std::vector<SourcePtr> sources_;
  std::unordered_set<const reflection::Field*> sources_fields_;  // TreeBuildOptions::sources_fields
  const reflection::Field* replaced_field_ = nullptr;            // TreeBuildOptions::replaced_field
  std::vector<json::Value> replacements_;
  size_t replaced_ = 0;  // replacements used so far
  // BuildFromObjects: the reader, each field's key (by object, field id;
  // made on first use) and the scalars of the tables under construction.
  ObjectReader* reader_ = nullptr;
  std::vector<std::vector<ObjectReader::Key>> keys_;
  std::vector<ObjectScalar> scalars_;
  std::vector<bool> skip_root_;  // by field id of the root table
};

// The field "Table.field" of the schema, or an error naming `option`.
Result<const FieldInfo*> FieldNamed(const SchemaData& d, const std::string& name,
                                    const char* option) {
  const FieldInfo* found = fbs::FindField(d, name);
  if (found == nullptr) {
    return InvalidArgument(std::string(option) + ": \"" + name +
                           "\" is not a field (Table.field) of the schema");
  }
  return found;
}

// The vector field "Table.field" of the schema, or an error naming `option`.
Result<const FieldInfo*> FindVectorField(const SchemaData& d, const std::string& name,
                                         const char* option) {
  const FieldInfo* found = fbs::FindField(d, name);
  if (found == nullptr || found->type != BaseType::Vector) {
    return InvalidArgument(std::string(option) + ": \"" + name +
                           "\" is not a vector field (Table.field) of the schema");
  }
  return found;
}

Status TreeBuilder::Configure(const TreeBuildOptions& options) {
  root_path_ = options.root_path;
  sources_ = options.sources;
  for (const std::string& name : options.sources_fields) {
    ETPACK_ASSIGN_OR_RETURN(const FieldInfo* f, FindVectorField(d_, name, "sources_fields"));
    sources_fields_.insert(f->field);
  }
  for (const auto& [name, align] : options.vector_alignment) {
    ETPACK_ASSIGN_OR_RETURN(const FieldInfo* found, FindVectorField(d_, name, "vector_alignment"));
    if (align == 0 || (align & (align - 1)) != 0 || align > kMaxVectorAlignment) {
      return InvalidArgument("vector_alignment: " + name + " = " + std::to_string(align) +
                             " is not a power of two up to " + std::to_string(kMaxVectorAlignment));
    }
    alignment_[found->field] = align;
  }
  if (!options.replaced_field.empty()) {
    ETPACK_ASSIGN_OR_RETURN(const FieldInfo* f,
                            FieldNamed(d_, options.replaced_field, "replaced_field"));
    replaced_field_ = f->field;
    replacements_ = options.replacements;
  }
  return Status::OK();
}

Status TreeBuilder::Room(uint64_t bytes) const {
  const uint64_t have = fbb_.GetSize();
  if (bytes > kMaxFlatbufferSize || have + bytes > kMaxFlatbufferSize - kFinishReserve) {
    return OutOfRange(PathOf(Path()) + ": adding " + std::to_string(bytes) + " bytes to " +
                      std::to_string(have) +
                      " would exceed the 2 GiB flatbuffer limit; move bulk data to segments");
  }
  return Status::OK();
}

Result<uint64_t> TreeBuilder::Integer(BaseType t, int enum_index, const json::Value& v,
                                      int64_t index) const {
  const EnumInfo* e = enum_index >= 0 ? &d_.enums[static_cast<size_t>(enum_index)] : nullptr;
  if (t == BaseType::Bool && v.kind() == json::Kind::kBool) return uint64_t{v.as_bool()};
  if (v.kind() == json::Kind::kString && e != nullptr) {
    for (const EnumValue& ev : e->values) {
      if (ev.name == v.as_string()) return static_cast<uint64_t>(ev.value);
    }
    return FailAt(index, Show(v) + " is not a value of enum " + std::string(e->name));
  }
  const IntRange r = RangeOf(t);
  auto type_name = [&] {
    return e ? std::string(e->name) + " (" + TypeName(t) + ")" : std::string(TypeName(t));
  };
  auto out_of_range = [&] {
    return FailAt(index, Show(v) + " out of range for " + type_name() + " (" +
                             std::to_string(r.min) + ".." + std::to_string(r.max) + ")");
  };
  if (v.kind() == json::Kind::kInt) {
    const int64_t i = v.as_int();
    if (i < r.min || (i >= 0 && static_cast<uint64_t>(i) > r.max)) return out_of_range();
    return static_cast<uint64_t>(i);
  }
  if (v.kind() == json::Kind::kUInt) {
    if (v.as_uint() > r.max) return out_of_range();
    return v.as_uint();
  }
  const std::string expected = t == BaseType::Bool ? "a boolean"
                               : e                 ? "an integer or a name of " + type_name()
                                                   : "an integer (" + type_name() + ")";
  return FailAt(index, "expected " + expected + ", got " + Show(v));
}

Result<double> TreeBuilder::Real(BaseType t, const json::Value& v, int64_t index) const {
  double d = 0;
  if (v.is_number()) {
    d = v.as_double();
  } else if (v.kind() == json::Kind::kString && v.as_string() == "inf") {
    d = std::numeric_limits<double>::infinity();
  } else if (v.kind() == json::Kind::kString && v.as_string() == "-inf") {
    d = -std::numeric_limits<double>::infinity();
  } else if (v.kind() == json::Kind::kString && v.as_string() == "nan") {
    d = std::numeric_limits<double>::quiet_NaN();
  } else {
    return FailAt(index, std::string("expected a number or \"inf\", \"-inf\", \"nan\" (") +
                             TypeName(t) + "), got " + Show(v));
  }
  if (t == BaseType::Float && std::isfinite(d) &&
      std::fabs(d) > static_cast<double>(std::numeric_limits<float>::max())) {
    return FailAt(index, Show(v) + " out of range for float");
  }
  return d;
}

Result<uint8_t> TreeBuilder::UnionCode(const EnumInfo& e, const json::Value& v) const {
  if (v.kind() == json::Kind::kString) {
    const std::string& name = v.as_string();
    for (const EnumValue& ev : e.values) {
      if (ev.name == name) return static_cast<uint8_t>(ev.value);
    }
    // An aliased member (`union U { A: T }`) is also accepted by its table.
    for (const EnumValue& ev : e.values) {
      if (ev.object >= 0 && d_.objects[static_cast<size_t>(ev.object)].name == name) {
        return static_cast<uint8_t>(ev.value);
      }
    }
    return Fail(Show(v) + " is not a member of union " + std::string(e.name));
  }
  if (v.is_integer()) {
    if (v.kind() == json::Kind::kInt && v.as_int() >= 0 && v.as_int() <= UINT8_MAX &&
        e.ByValue(v.as_int()) != nullptr) {
      return static_cast<uint8_t>(v.as_int());
    }
    return Fail(Show(v) + " is not a member code of union " + std::string(e.name));
  }
  return Fail("expected a member name of union " + std::string(e.name) + ", got " + Show(v));
}

Result<uoffset_t> TreeBuilder::String(const json::Value& v) {
  if (v.kind() != json::Kind::kString) return Fail("expected a string, got " + Show(v));
  const std::string& s = v.as_string();
  ETPACK_RETURN_IF_ERROR(Room(uint64_t{s.size()} + 8));
  return fbb_.CreateString(s.data(), s.size()).o;
}

Result<uoffset_t> TreeBuilder::OffsetVector(const std::vector<uoffset_t>& offsets) {
  ETPACK_RETURN_IF_ERROR(Room(uint64_t{offsets.size()} * sizeof(uoffset_t) + 8));
  fbb_.StartVector(offsets.size(), sizeof(uoffset_t));
  for (size_t i = offsets.size(); i > 0; --i) {
    fbb_.PushElement(flatbuffers::Offset<void>(offsets[i - 1]));
  }
  return fbb_.EndVector(offsets.size());
}

Result<uoffset_t> TreeBuilder::SourceVector(const FieldInfo& f, const json::Value& v) {
  const json::Value* index = v.Find("source");
  // Only the planner's own field may pull bytes from sources: anywhere
  // else in a caller's tree the form would embed data by accident.
  if (sources_fields_.count(f.field) == 0) {
    return Fail("expected an array of bytes, got " + Show(v));
  }
  if (index == nullptr || v.members().size() != 1 || !index->is_integer() ||
      index->as_double() < 0 || index->as_uint() >= sources_.size()) {
    return Fail("expected an array of bytes or {\"source\": i} with i < " +
                std::to_string(sources_.size()));
  }
  const Source& src = *sources_[index->as_uint()];
  const uint64_t n = src.size();
  const uint64_t align = VectorAlignment(f);
  ETPACK_RETURN_IF_ERROR(Room(n + align + 8));
  if (align > 1) fbb_.PreAlign(static_cast<size_t>(n), static_cast<size_t>(align));
  uint8_t* dst = nullptr;
  const uoffset_t off = fbb_.CreateUninitializedVector(static_cast<size_t>(n), 1, &dst);
  // The data's distance from the buffer end is a multiple of the
  // alignment, and Finish pads the whole buffer to the largest one.
  assert(n == 0 || (fbb_.GetSize() - sizeof(uoffset_t)) % align == 0);
  if (n > 0) {
    if (const uint8_t* p = src.contiguous()) {
      std::memcpy(dst, p, static_cast<size_t>(n));
    } else {
      Status st = src.ReadAt(0, dst, static_cast<size_t>(n));
      if (!st.ok()) return st.WithContext(PathOf(Path()));
    }
  }
  return off;
}

Result<uoffset_t> TreeBuilder::ScalarVector(const FieldInfo& f, const json::Value& v) {
  const BaseType et = f.element;
  const size_t elem_size = flatbuffers::GetTypeSize(et);
  const std::vector<json::Value>& items = v.items();
  const uint64_t n = items.size();
  const uint64_t align = std::max<uint64_t>(VectorAlignment(f), elem_size);
  ETPACK_RETURN_IF_ERROR(Room(n * elem_size + align + 8));
  if (align > elem_size) {
    fbb_.PreAlign(static_cast<size_t>(n * elem_size), static_cast<size_t>(align));
  }
  uint8_t* dst = nullptr;
  const uoffset_t off = fbb_.CreateUninitializedVector(static_cast<size_t>(n), elem_size, &dst);
  assert(n == 0 || (fbb_.GetSize() - sizeof(uoffset_t)) % align == 0);
  // dst stays valid: nothing below touches the builder.
  for (size_t i = 0; i < items.size(); ++i) {
    uint8_t* p = dst + i * elem_size;
    const int64_t at = static_cast<int64_t>(i);
    if (et == BaseType::Float || et == BaseType::Double) {
      ETPACK_ASSIGN_OR_RETURN(double d, Real(et, items[i], at));
      if (et == BaseType::Float) {
        flatbuffers::WriteScalar<float>(p, static_cast<float>(d));
      } else {
        flatbuffers::WriteScalar<double>(p, d);
      }
    } else {
      ETPACK_ASSIGN_OR_RETURN(uint64_t bits, Integer(et, f.index, items[i], at));
      WriteInt(et, p, bits);
    }
  }
  return off;
}

Result<uoffset_t> TreeBuilder::Vector(const FieldInfo& f, const json::Value& v) {
  const BaseType et = f.element;
  const bool bytes = et == BaseType::UByte && f.index < 0;
  if (bytes && v.kind() == json::Kind::kObject) return SourceVector(f, v);
  if (v.kind() != json::Kind::kArray) {
    return Fail(
        std::string(bytes ? "expected an array of bytes or {\"source\": i}" : "expected an array") +
        ", got " + Show(v));
  }
  if (flatbuffers::IsScalar(et) && et != BaseType::UType) return ScalarVector(f, v);
  if ((et != BaseType::String && et != BaseType::Obj) || f.is_struct) {
    return Unimplemented(PathOf(Path()) + ": vectors of structs or unions are not supported");
  }
  const std::vector<json::Value>& items = v.items();
  std::vector<uoffset_t> offsets;
  offsets.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    Push p(*this, i);
    ETPACK_ASSIGN_OR_RETURN(uoffset_t o,
                            et == BaseType::String ? String(items[i]) : Table(f.index, items[i]));
    offsets.push_back(o);
  }
  return OffsetVector(offsets);
}

// Builds the member table of union field f; 0 when the union is absent.
Result<uoffset_t> TreeBuilder::UnionMember(const FieldInfo& f, const FieldInfo& type_field,
                                           const json::Value* type, const json::Value* value) {
  const EnumInfo& e = d_.enums[static_cast<size_t>(f.index)];
  uint8_t code = 0;
  if (type != nullptr && !type->is_null()) {
    Push p(*this, type_field.name);
    ETPACK_ASSIGN_OR_RETURN(code, UnionCode(e, *type));
  }
  const bool has_value = value != nullptr && !value->is_null();
  Push p(*this, f.name);
  if (code == 0) {
    if (has_value) {
      return Fail("union value without a member type in " + std::string(type_field.name));
    }
    return uoffset_t{0};
  }
  if (!has_value) {
    return Fail("missing, although " + std::string(type_field.name) + " names a member of union " +
                std::string(e.name));
  }
  return Table(e.ByValue(code)->object, *value);
}

Result<uoffset_t> TreeBuilder::Child(const FieldInfo& f, const json::Value& v) {
  switch (f.type) {
    case BaseType::String: return String(v);
    case BaseType::Vector: return Vector(f, v);
    case BaseType::Obj:
      if (!f.is_struct) return Table(f.index, v);
      break;
    default: break;
  }
  return Unimplemented(PathOf(Path()) + ": struct and array fields are not supported");
}

Status TreeBuilder::AddScalar(const FieldInfo& f, const json::Value& v) {
  const voffset_t off = f.offset;
  if (f.type == BaseType::UType) {
    ETPACK_ASSIGN_OR_RETURN(uint8_t code, UnionCode(d_.enums[static_cast<size_t>(f.index)], v));
    fbb_.AddElement<uint8_t>(off, code, 0);
    return Status::OK();
  }
  // Values equal to the default are left out, as flatc and the reference
  // serializer do.
  if (f.type == BaseType::Float || f.type == BaseType::Double) {
    ETPACK_ASSIGN_OR_RETURN(double d, Real(f.type, v));
    if (f.type == BaseType::Float) {
      fbb_.AddElement<float>(off, static_cast<float>(d), static_cast<float>(f.default_real));
    } else {
      fbb_.AddElement<double>(off, d, f.default_real);
    }
    return Status::OK();
  }
  ETPACK_ASSIGN_OR_RETURN(uint64_t bits, Integer(f.type, f.index, v));
  AddIntElement(f, bits);
  return Status::OK();
}

void TreeBuilder::AddIntElement(const FieldInfo& f, uint64_t bits) {
  const voffset_t off = f.offset;
  const uint64_t def = static_cast<uint64_t>(f.default_integer);
  switch (f.type) {
    case BaseType::Bool:
    case BaseType::UType:
    case BaseType::UByte:
      fbb_.AddElement<uint8_t>(off, static_cast<uint8_t>(bits), static_cast<uint8_t>(def));
      break;
    case BaseType::Byte:
      fbb_.AddElement<int8_t>(off, static_cast<int8_t>(bits), static_cast<int8_t>(def));
      break;
    case BaseType::Short:
      fbb_.AddElement<int16_t>(off, static_cast<int16_t>(bits), static_cast<int16_t>(def));
      break;
    case BaseType::UShort:
      fbb_.AddElement<uint16_t>(off, static_cast<uint16_t>(bits), static_cast<uint16_t>(def));
      break;
    case BaseType::Int:
      fbb_.AddElement<int32_t>(off, static_cast<int32_t>(bits), static_cast<int32_t>(def));
      break;
    case BaseType::UInt:
      fbb_.AddElement<uint32_t>(off, static_cast<uint32_t>(bits), static_cast<uint32_t>(def));
      break;
    case BaseType::Long:
      fbb_.AddElement<int64_t>(off, static_cast<int64_t>(bits), static_cast<int64_t>(def));
      break;
    default: fbb_.AddElement<uint64_t>(off, bits, def); break;
  }
}

Result<uoffset_t> TreeBuilder::Table(int obj_index, const json::Value& v) {
  const ObjectInfo& obj = d_.objects[static_cast<size_t>(obj_index)];
  if (v.kind() != json::Kind::kObject) {
    return Fail("expected an object (table " + std::string(obj.name) + "), got " + Show(v));
  }
  const size_t slots = slots_.size();
  slots_.resize(slots + obj.fields.size(), nullptr);
  // Members usually come in schema order (flatc, the exporter walkers and
  // etpack's own trees write them so): the field after the last one found
  // is tried first, so a table costs one comparison per member, not a scan.
  size_t next = 0;
  for (const json::Value::Member& m : v.members()) {
    int id = -1;
    if (next < obj.fields.size() && obj.fields[next].present && obj.fields[next].name == m.first) {
      id = static_cast<int>(next);
    } else {
      id = obj.Lookup(m.first);
    }
    next = static_cast<size_t>(id) + 1;
    if (id < 0 || slots_[slots + static_cast<size_t>(id)] != nullptr) {
      Push p(*this, m.first);
      return Fail(id < 0 ? "unknown member of table " + std::string(obj.name)
                         : std::string("duplicate member"));
    }
    if (!m.second.is_null()) slots_[slots + static_cast<size_t>(id)] = &m.second;
  }

  // Children first: a table's offsets must point at finished objects.
  const size_t pending = pending_.size();
  for (size_t id = 0; id < obj.fields.size(); ++id) {
    const FieldInfo& f = obj.fields[id];
    if (!f.present || flatbuffers::IsScalar(f.type)) continue;
    const json::Value* m = slots_[slots + id];
    if (f.type == BaseType::Union) {
      const size_t type_id = static_cast<size_t>(f.union_type_id);
      ETPACK_ASSIGN_OR_RETURN(uoffset_t o,
                              UnionMember(f, obj.fields[type_id], slots_[slots + type_id], m));
      if (o != 0) pending_.emplace_back(f.offset, o);
      continue;
    }
    Push p(*this, f.name);
    if (m == nullptr) {
      if (f.required) return Fail("missing required field of table " + std::string(obj.name));
      continue;
    }
    ETPACK_ASSIGN_OR_RETURN(uoffset_t o, Child(f, *m));
    pending_.emplace_back(f.offset, o);
  }

  ETPACK_RETURN_IF_ERROR(Room(uint64_t{obj.fields.size()} * 16 + 64));
  const uoffset_t start = fbb_.StartTable();
  for (size_t id = 0; id < obj.fields.size(); ++id) {
    const FieldInfo& f = obj.fields[id];
    const json::Value* m = slots_[slots + id];
    if (!f.present || m == nullptr || !flatbuffers::IsScalar(f.type)) continue;
    Push p(*this, f.name);
    ETPACK_RETURN_IF_ERROR(AddScalar(f, *m));
  }
  for (size_t i = pending; i < pending_.size(); ++i) {
    fbb_.AddOffset(pending_[i].first, flatbuffers::Offset<void>(pending_[i].second));
  }
  pending_.resize(pending);
  slots_.resize(slots);
  return fbb_.EndTable(start);
}

Result<std::vector<uint8_t>> TreeBuilder::Build(const json::Value& root) {
  ETPACK_ASSIGN_OR_RETURN(uoffset_t root_off, Table(d_.root, root));
  return Finish(root_off);
}

Result<std::vector<uint8_t>> TreeBuilder::Finish(uoffset_t root_off) {
  const bool has_ident = d_.file_ident.size() == flatbuffers::kFileIdentifierLength;
  fbb_.Finish(flatbuffers::Offset<void>(root_off), has_ident ? d_.file_ident.c_str() : nullptr);
  const uint8_t* p = fbb_.GetBufferPointer();
  return std::vector<uint8_t>(p, p + fbb_.GetSize());
}

// --- Rebuild: a verified flatbuffer copied, some fields replaced ---------------

const json::Value* TreeBuilder::Replacement(const FieldInfo& f) {
  if (f.field != replaced_field_ || replaced_field_ == nullptr) return nullptr;
  if (replaced_ >= replacements_.size()) return nullptr;
  const json::Value& r = replacements_[replaced_++];
  return r.is_null() ? nullptr : &r;
}

void TreeBuilder::CopyScalar(const FieldInfo& f, const flatbuffers::Table& t) {
  const voffset_t off = f.offset;
  switch (f.type) {
    case BaseType::Float:
      fbb_.AddElement<float>(off, t.GetField<float>(off, 0), static_cast<float>(f.default_real));
      return;
    case BaseType::Double:
      fbb_.AddElement<double>(off, t.GetField<double>(off, 0), f.default_real);
      return;
    default: break;
  }
  // As two's complement bits of the field's width (sign-extended or not
  // makes no difference: AddIntElement keeps only the low bytes).
  uint64_t bits = 0;
  switch (flatbuffers::GetTypeSize(f.type)) {
    case 1: bits = t.GetField<uint8_t>(off, 0); break;
    case 2: bits = t.GetField<uint16_t>(off, 0); break;
    case 4: bits = t.GetField<uint32_t>(off, 0); break;
    default: bits = t.GetField<uint64_t>(off, 0); break;
  }
  AddIntElement(f, bits);
}

Result<uoffset_t> TreeBuilder::CopyVector(const FieldInfo& f, const flatbuffers::Table& t) {
  const BaseType et = f.element;
  if (flatbuffers::IsScalar(et) && et != BaseType::UType) {
    // Elements are little-endian in both buffers: the bytes move as they are.
    const auto* v = t.GetPointer<const flatbuffers::Vector<uint8_t>*>(f.offset);
    const size_t elem_size = flatbuffers::GetTypeSize(et);
    const uint64_t n = v->size();
    const uint64_t align = std::max<uint64_t>(VectorAlignment(f), elem_size);
    ETPACK_RETURN_IF_ERROR(Room(n * elem_size + align + 8));
    if (align > elem_size) {
      fbb_.PreAlign(static_cast<size_t>(n * elem_size), static_cast<size_t>(align));
    }
    uint8_t* dst = nullptr;
    const uoffset_t off = fbb_.CreateUninitializedVector(static_cast<size_t>(n), elem_size, &dst);
    if (n > 0) std::memcpy(dst, v->Data(), static_cast<size_t>(n * elem_size));
    return off;
  }
  if ((et != BaseType::String && et != BaseType::Obj) || f.is_struct) {
    return Unimplemented(PathOf(Path()) + ": vectors of structs or unions are not supported");
  }
  std::vector<uoffset_t> offsets;
  if (et == BaseType::String) {
    const auto* v =
        t.GetPointer<const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>*>(
            f.offset);
    offsets.reserve(v->size());
    for (const flatbuffers::String* s : *v) {
      ETPACK_RETURN_IF_ERROR(Room(uint64_t{s->size()} + 8));
      offsets.push_back(fbb_.CreateString(s->c_str(), s->size()).o);
    }
  } else {
    const auto* v =
        t.GetPointer<const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::Table>>*>(f.offset);
    offsets.reserve(v->size());
    for (uoffset_t i = 0; i < v->size(); ++i) {
      Push p(*this, i);
      ETPACK_ASSIGN_OR_RETURN(uoffset_t o, CopyTable(f.index, *v->Get(i), nullptr));
      offsets.push_back(o);
    }
  }
  return OffsetVector(offsets);
}

Result<uoffset_t> TreeBuilder::CopyTable(int obj_index, const flatbuffers::Table& t,
                                         const json::Value* overrides) {
  const ObjectInfo& obj = d_.objects[static_cast<size_t>(obj_index)];
  const size_t pending = pending_.size();
  for (size_t id = 0; id < obj.fields.size(); ++id) {
    const FieldInfo& f = obj.fields[id];
    if (!f.present || flatbuffers::IsScalar(f.type)) continue;
    Push p(*this, f.name);
    const json::Value* given = overrides != nullptr ? overrides->Find(f.name) : nullptr;
    if (given == nullptr) given = Replacement(f);
    if (given != nullptr) {
      if (given->is_null()) continue;
      ETPACK_ASSIGN_OR_RETURN(uoffset_t o, Child(f, *given));
      pending_.emplace_back(f.offset, o);
      continue;
    }
    if (!t.CheckField(f.offset)) continue;
    uoffset_t o = 0;
    switch (f.type) {
      case BaseType::String: {
        const auto* s = t.GetPointer<const flatbuffers::String*>(f.offset);
        ETPACK_RETURN_IF_ERROR(Room(uint64_t{s->size()} + 8));
        o = fbb_.CreateString(s->c_str(), s->size()).o;
        break;
      }
      case BaseType::Vector: {
        ETPACK_ASSIGN_OR_RETURN(o, CopyVector(f, t));
        break;
      }
      case BaseType::Union: {
        const uint8_t code =
            t.GetField<uint8_t>(obj.fields[static_cast<size_t>(f.union_type_id)].offset, 0);
        if (code == 0) continue;
        const EnumValue* member = d_.enums[static_cast<size_t>(f.index)].ByValue(code);
        if (member == nullptr || member->object < 0) {
          return Fail(std::to_string(code) + " is not a member code of union " +
                      std::string(d_.enums[static_cast<size_t>(f.index)].name));
        }
        ETPACK_ASSIGN_OR_RETURN(
            o,
            CopyTable(member->object, *t.GetPointer<const flatbuffers::Table*>(f.offset), nullptr));
        break;
      }
      case BaseType::Obj:
        if (!f.is_struct) {
          ETPACK_ASSIGN_OR_RETURN(
              o, CopyTable(f.index, *t.GetPointer<const flatbuffers::Table*>(f.offset), nullptr));
          break;
        }
        [[fallthrough]];
      default: return Unimplemented(PathOf(Path()) + ": struct and array fields are not supported");
    }
    pending_.emplace_back(f.offset, o);
  }
  ETPACK_RETURN_IF_ERROR(Room(uint64_t{obj.fields.size()} * 16 + 64));
  const uoffset_t start = fbb_.StartTable();
  for (const FieldInfo& f : obj.fields) {
    if (f.present && flatbuffers::IsScalar(f.type) && t.CheckField(f.offset)) CopyScalar(f, t);
  }
  for (size_t i = pending; i < pending_.size(); ++i) {
    fbb_.AddOffset(pending_[i].first, flatbuffers::Offset<void>(pending_[i].second));
  }
  pending_.resize(pending);
  return fbb_.EndTable(start);
}

Result<std::vector<uint8_t>> TreeBuilder::Rebuild(const uint8_t* verified,
                                                  const json::Value& root_overrides) {
  if (root_overrides.kind() != json::Kind::kObject) return Fail("overrides: expected an object");
  ETPACK_ASSIGN_OR_RETURN(
      uoffset_t root_off,
      CopyTable(d_.root, *flatbuffers::GetRoot<flatbuffers::Table>(verified), &root_overrides));
  return Finish(root_off);
}

// --- BuildFromObjects: the caller's objects, read through an ObjectReader -------

namespace {

std::string ScalarName(BaseType t) {
  switch (t) {
    case BaseType::Bool: return "bool";
    case BaseType::Float:
    case BaseType::Double: return "float";
    default: return "int";
  }
}

}  // namespace

std::string TreeBuilder::TypeOf(BaseType t, int index) const {
  if (t == BaseType::Obj) return std::string(d_.objects[static_cast<size_t>(index)].name);
  if (t == BaseType::String) return "str";
  if (index >= 0 && t != BaseType::Vector) {
    return std::string(d_.enums[static_cast<size_t>(index)].name) + " (int)";
  }
  return ScalarName(t);
}

std::string TreeBuilder::Expected(const FieldInfo& f) const {
  if (f.type == BaseType::Vector) {
    if (f.element == BaseType::UByte && f.index < 0) return "list of int or bytes";
    return "list of " + TypeOf(f.element, f.index);
  }
  if (f.type == BaseType::Union) {
    std::string names;
    for (const EnumValue& e : d_.enums[static_cast<size_t>(f.index)].values) {
      if (e.object < 0) continue;
      names += (names.empty() ? "" : ", ") + std::string(e.name);
    }
    return "one of " + names;
  }
  return TypeOf(f.type, f.index);
}

Status TreeBuilder::WrongType(Object found, const std::string& expected) {
  return reader_->WrongType(PathOf(Path()) + ": expected " + expected + ", found " +
                            std::string(reader_->ClassName(found)));
}

// getattr for field `id` of a table; a missing attribute is an error at the
// attribute's path naming the object's class and the type expected.
Result<TreeBuilder::Object> TreeBuilder::Attribute(Object o, int obj_index, size_t id) {
  const ObjectInfo& obj = d_.objects[static_cast<size_t>(obj_index)];
  std::vector<ObjectReader::Key>& keys = keys_[static_cast<size_t>(obj_index)];
  if (keys.empty()) keys.assign(obj.fields.size(), nullptr);
  const FieldInfo& f = obj.fields[id];
  if (keys[id] == nullptr) keys[id] = reader_->KeyOf(f.name);
  Object value = nullptr;
  bool found = false;
  ETPACK_RETURN_IF_ERROR(reader_->Get(o, keys[id], &value, &found));
  if (!found) {
    Push p(*this, f.name);
    return reader_->WrongType(PathOf(Path()) + ": expected " + Expected(f) + ", found a " +
                              std::string(reader_->ClassName(o)) + " without attribute '" +
                              std::string(f.name) + "'");
  }
  return value;
}

Status TreeBuilder::ObjectScalarValue(BaseType t, int enum_index, Object v, uint64_t* bits,
                                      double* real) {
  const ObjectReader::Kind kind = reader_->KindOf(v);
  if (t == BaseType::Bool) {
    if (kind != ObjectReader::Kind::kBool) return WrongType(v, "bool");
    *bits = reader_->Bool(v) ? 1 : 0;
    return Status::OK();
  }
  if (t == BaseType::Float || t == BaseType::Double) {
    if (kind == ObjectReader::Kind::kFloat || kind == ObjectReader::Kind::kInt) {
      *real = reader_->Double(v);
    } else if (std::string_view s; kind == ObjectReader::Kind::kString &&
                                   reader_->Utf8(v, &s).ok() &&
                                   (s == "inf" || s == "-inf" || s == "nan")) {
      // How the exporter stores infinities (and, for symmetry, NaN).
      *real = s == "nan"   ? std::numeric_limits<double>::quiet_NaN()
              : s == "inf" ? std::numeric_limits<double>::infinity()
                           : -std::numeric_limits<double>::infinity();
    } else {
      return WrongType(v, "float (or \"inf\", \"-inf\")");
    }
    if (t == BaseType::Float && std::isfinite(*real) &&
        std::fabs(*real) > static_cast<double>(std::numeric_limits<float>::max())) {
      return Invalid(reader_->Text(v) + " is out of range for the schema's float");
    }
    return Status::OK();
  }
  if (kind != ObjectReader::Kind::kInt) return WrongType(v, TypeOf(t, enum_index));
  int64_t x = 0;
  if (!reader_->Int64(v, &x)) {
    uint64_t u = 0;
    if (t == BaseType::ULong && reader_->UInt64(v, &u)) {
      *bits = u;
      return Status::OK();
    }
    x = INT64_MIN;  // out of every range below but Long's, which it cannot be
    if (t == BaseType::Long) {
      return Invalid(reader_->Text(v) +
                     " is out of range for the schema's long (found int, expected " +
                     TypeOf(t, enum_index) + ")");
    }
  }
  const IntRange r = RangeOf(t);
  if (x < r.min || (x >= 0 && static_cast<uint64_t>(x) > r.max)) {
    return Invalid(reader_->Text(v) + " is out of range for the schema's " + TypeName(t) +
                   " (found int, expected " + TypeOf(t, enum_index) + ")");
  }
  if (enum_index >= 0 && d_.enums[static_cast<size_t>(enum_index)].ByValue(x) == nullptr) {
    return Invalid(std::to_string(x) + " is not a value of enum " +
                   std::string(d_.enums[static_cast<size_t>(enum_index)].name) + " (found " +
                   std::string(reader_->ClassName(v)) + " " + std::to_string(x) + ", expected " +
                   TypeOf(t, enum_index) + ")");
  }
  *bits = static_cast<uint64_t>(x);
  return Status::OK();
}

Result<uoffset_t> TreeBuilder::ObjectString(Object v) {
  if (reader_->KindOf(v) != ObjectReader::Kind::kString) return WrongType(v, "str");
  std::string_view s;
  if (Status st = reader_->Utf8(v, &s); !st.ok()) return Invalid(st.message());
  ETPACK_RETURN_IF_ERROR(Room(uint64_t{s.size()} + 8));
  return fbb_.CreateString(s.data(), s.size()).o;
}

Result<uoffset_t> TreeBuilder::ObjectVector(const FieldInfo& f, Object v) {
  const BaseType et = f.element;
  const ObjectReader::Kind kind = reader_->KindOf(v);
  if (et == BaseType::UByte && f.index < 0 && kind == ObjectReader::Kind::kBytes) {
    // A small byte field (CompileSpec.value) given as bytes.
    const uint8_t* data = nullptr;
    size_t n = 0;
    ETPACK_RETURN_IF_ERROR(reader_->BytesOf(v, &data, &n));
    const uint64_t align = VectorAlignment(f);
    ETPACK_RETURN_IF_ERROR(Room(n + align + 8));
    if (align > 1) fbb_.PreAlign(n, static_cast<size_t>(align));
    uint8_t* dst = nullptr;
    const uoffset_t off = fbb_.CreateUninitializedVector(n, 1, &dst);
    if (n > 0) std::memcpy(dst, data, n);
    return off;
  }
  if (kind != ObjectReader::Kind::kList) return WrongType(v, Expected(f));
  if ((et != BaseType::String && et != BaseType::Obj && !flatbuffers::IsScalar(et)) ||
      et == BaseType::UType || f.is_struct) {
    return Unimplemented(PathOf(Path()) + ": vectors of structs or unions are not supported");
  }
  // Reading a table's attributes runs the caller's code, which could change
  // the list while it is walked: the reader hands out a snapshot.
  ObjectReader::ItemSpan items;
  ETPACK_RETURN_IF_ERROR(reader_->ItemsOf(v, et == BaseType::Obj, &items));
  if (flatbuffers::IsScalar(et)) {
    const size_t elem_size = flatbuffers::GetTypeSize(et);
    const uint64_t n = items.size;
    const uint64_t align = std::max<uint64_t>(VectorAlignment(f), elem_size);
    ETPACK_RETURN_IF_ERROR(Room(n * elem_size + align + 8));
    if (align > elem_size) {
      fbb_.PreAlign(static_cast<size_t>(n * elem_size), static_cast<size_t>(align));
    }
    uint8_t* dst = nullptr;
    const uoffset_t off = fbb_.CreateUninitializedVector(static_cast<size_t>(n), elem_size, &dst);
    // dst stays valid: nothing below touches the builder.
    for (size_t i = 0; i < items.size; ++i) {
      Push p(*this, i);
      uint64_t bits = 0;
      double real = 0;
      ETPACK_RETURN_IF_ERROR(ObjectScalarValue(et, f.index, items.items[i], &bits, &real));
      uint8_t* at = dst + i * elem_size;
      if (et == BaseType::Float) {
        flatbuffers::WriteScalar<float>(at, static_cast<float>(real));
      } else if (et == BaseType::Double) {
        flatbuffers::WriteScalar<double>(at, real);
      } else {
        WriteInt(et, at, bits);
      }
    }
    return off;
  }
  std::vector<uoffset_t> offsets;
  offsets.reserve(items.size);
  for (size_t i = 0; i < items.size; ++i) {
    Push p(*this, i);
    Object e = items.items[i];
    uoffset_t o = 0;
    if (et == BaseType::String) {
      ETPACK_ASSIGN_OR_RETURN(o, ObjectString(e));
    } else {
      if (e == nullptr) return WrongType(e, TypeOf(et, f.index));
      ETPACK_ASSIGN_OR_RETURN(o, ObjectTable(f.index, e));
    }
    offsets.push_back(o);
  }
  return OffsetVector(offsets);
}

Result<uoffset_t> TreeBuilder::ObjectTable(int obj_index, Object o, bool root) {
  const ObjectInfo& obj = d_.objects[static_cast<size_t>(obj_index)];
  if (reader_->KindOf(o) != ObjectReader::Kind::kOther) return WrongType(o, std::string(obj.name));
  const size_t pending = pending_.size();
  const size_t scalars = scalars_.size();
  for (size_t id = 0; id < obj.fields.size(); ++id) {
    const FieldInfo& f = obj.fields[id];
    if (!f.present || f.type == BaseType::UType) continue;
    if (root && skip_root_[id]) continue;
    ETPACK_ASSIGN_OR_RETURN(Object v, Attribute(o, obj_index, id));
    Push p(*this, f.name);
    if (v == nullptr) {
      if (f.required) return Fail("missing required field of table " + std::string(obj.name));
      continue;
    }
    uoffset_t off = 0;
    switch (f.type) {
      case BaseType::Union: {
        const std::string_view cls = reader_->ClassName(v);
        const EnumValue* member = nullptr;
        for (const EnumValue& e : d_.enums[static_cast<size_t>(f.index)].values) {
          if (e.object >= 0 && e.name == cls) member = &e;
        }
        if (member == nullptr) return WrongType(v, Expected(f));
        scalars_.push_back({&obj.fields[static_cast<size_t>(f.union_type_id)],
                            static_cast<uint64_t>(member->value), 0});
        ETPACK_ASSIGN_OR_RETURN(off, ObjectTable(member->object, v));
        break;
      }
      case BaseType::Obj: {
        if (f.is_struct) {
          return Unimplemented(PathOf(Path()) + ": struct fields are not supported");
        }
        ETPACK_ASSIGN_OR_RETURN(off, ObjectTable(f.index, v));
        break;
      }
      case BaseType::String: {
        ETPACK_ASSIGN_OR_RETURN(off, ObjectString(v));
        break;
      }
      case BaseType::Vector: {
        ETPACK_ASSIGN_OR_RETURN(off, ObjectVector(f, v));
        break;
      }
      default: {
        ObjectScalar s{&f, 0, 0};
        ETPACK_RETURN_IF_ERROR(ObjectScalarValue(f.type, f.index, v, &s.bits, &s.real));
        scalars_.push_back(s);
        continue;
      }
    }
    pending_.emplace_back(f.offset, off);
  }
  ETPACK_RETURN_IF_ERROR(Room(uint64_t{obj.fields.size()} * 16 + 64));
  const uoffset_t start = fbb_.StartTable();
  for (size_t i = scalars; i < scalars_.size(); ++i) {
    const ObjectScalar& s = scalars_[i];
    if (s.field->type == BaseType::Float) {
      fbb_.AddElement<float>(s.field->offset, static_cast<float>(s.real),
                             static_cast<float>(s.field->default_real));
    } else if (s.field->type == BaseType::Double) {
      fbb_.AddElement<double>(s.field->offset, s.real, s.field->default_real);
    } else {
      AddIntElement(*s.field, s.bits);
    }
  }
  for (size_t i = pending; i < pending_.size(); ++i) {
    fbb_.AddOffset(pending_[i].first, flatbuffers::Offset<void>(pending_[i].second));
  }
  pending_.resize(pending);
  scalars_.resize(scalars);
  return fbb_.EndTable(start);
}

Result<std::vector<uint8_t>> TreeBuilder::BuildFromObjects(
    ObjectReader& reader, Object root, const std::vector<std::string>& skip_root_fields) {
  reader_ = &reader;
  keys_.assign(d_.objects.size(), {});
  const ObjectInfo& obj = d_.objects[static_cast<size_t>(d_.root)];
  skip_root_.assign(obj.fields.size(), false);
  for (const std::string& name : skip_root_fields) {
    const int id = obj.Lookup(name);
    if (id < 0) return InvalidArgument("skip_root_fields: no field \"" + name + "\"");
    skip_root_[static_cast<size_t>(id)] = true;
  }
  if (root == nullptr) return WrongType(root, std::string(obj.name));
  ETPACK_ASSIGN_OR_RETURN(uoffset_t root_off, ObjectTable(d_.root, root, true));
  return Finish(root_off);
}

}  // namespace

Result<std::vector<uint8_t>> RebuildFlatbuffer(SchemaId schema, const uint8_t* verified,
                                               uint64_t size, const json::Value& root_overrides,
                                               const TreeBuildOptions& options) {
  try {
    TreeBuilder builder(Decoded(schema),
                        static_cast<size_t>(std::min<uint64_t>(size + 1024, kMaxFlatbufferSize)));
    ETPACK_RETURN_IF_ERROR(builder.Configure(options));
    return builder.Rebuild(verified, root_overrides);
  } catch (const std::bad_alloc&) {
    return OutOfRange("out of memory while building the flatbuffer");
  }
}

Result<std::vector<uint8_t>> BuildFlatbufferFromObjects(
    SchemaId schema, ObjectReader& reader, ObjectReader::Object root,
    const std::vector<std::string>& skip_root_fields, const TreeBuildOptions& options) {
  try {
    TreeBuilder builder(Decoded(schema), size_t{16} << 20);
    ETPACK_RETURN_IF_ERROR(builder.Configure(options));
    return builder.BuildFromObjects(reader, root, skip_root_fields);
  } catch (const std::bad_alloc&) {
    return OutOfRange("out of memory while building the flatbuffer");
  }
}

Result<std::vector<uint8_t>> BuildFlatbuffer(SchemaId schema, const json::Value& root,
                                             const TreeBuildOptions& options) {
  try {
    TreeBuilder builder(Decoded(schema));
    ETPACK_RETURN_IF_ERROR(builder.Configure(options));
    return builder.Build(root);
  } catch (const std::bad_alloc&) {
    return OutOfRange("out of memory while building the flatbuffer");
  }
}

}  // namespace etpack
