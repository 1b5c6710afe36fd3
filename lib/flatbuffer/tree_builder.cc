// BuildFlatbuffer: TableBuilder (flatbuffer/table_builder.h) from a JSON
// tree, and what every kind of its input shares (options, room checks,
// scalars, vectors of offsets, the finish).

#include "flatbuffer/tree_builder.h"

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
#include <vector>

#include "flatbuffer/table_builder.h"

namespace etpack {
namespace fbs {
namespace {

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

// The field "Table.field" of the schema (a vector field when `vector`), or
// an error naming `option`.
Result<const FieldInfo*> FieldNamed(const SchemaData& d, const std::string& name,
                                    const char* option, bool vector = false) {
  const FieldInfo* found = fbs::FindField(d, name);
  if (found == nullptr || (vector && found->type != BaseType::Vector)) {
    return InvalidArgument(std::string(option) + ": \"" + name + "\" is not a " +
                           (vector ? "vector " : "") + "field (Table.field) of the schema");
  }
  return found;
}

}  // namespace

Status TableBuilder::Configure(const TreeBuildOptions& options) {
  return ConfigureLayout(options.root_path, options.vector_alignment);
}

Status TableBuilder::ConfigureLayout(
    const std::string& root_path,
    const std::vector<std::pair<std::string, uint64_t>>& vector_alignment) {
  path_.root() = root_path;
  for (const auto& [name, align] : vector_alignment) {
    ETPACK_ASSIGN_OR_RETURN(const FieldInfo* found, FieldNamed(d_, name, "vector_alignment", true));
    if (align == 0 || (align & (align - 1)) != 0 || align > kMaxVectorAlignment) {
      return InvalidArgument("vector_alignment: " + name + " = " + std::to_string(align) +
                             " is not a power of two up to " + std::to_string(kMaxVectorAlignment));
    }
    alignment_[found->field] = align;
  }
  return Status::OK();
}

Status TableBuilder::Room(uint64_t bytes) const {
  const uint64_t have = fbb_.GetSize();
  if (bytes > kMaxFlatbufferSize || have + bytes > kMaxFlatbufferSize - kFinishReserve) {
    return OutOfRange(PathOf(Path()) + ": adding " + std::to_string(bytes) + " bytes to " +
                      std::to_string(have) +
                      " would exceed the 2 GiB flatbuffer limit; move bulk data to segments");
  }
  return Status::OK();
}

Result<uint64_t> TableBuilder::Integer(BaseType t, int enum_index, const json::Value& v,
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

Result<double> TableBuilder::Real(BaseType t, const json::Value& v, int64_t index) const {
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

Result<uint8_t> TableBuilder::UnionCode(const EnumInfo& e, const json::Value& v) const {
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

Result<uoffset_t> TableBuilder::String(const json::Value& v) {
  if (v.kind() != json::Kind::kString) return Fail("expected a string, got " + Show(v));
  return StringOf(v.as_string());
}

Result<uoffset_t> TableBuilder::StringOf(std::string_view s) {
  ETPACK_RETURN_IF_ERROR(Room(uint64_t{s.size()} + 8));
  return fbb_.CreateString(s.data(), s.size()).o;
}

Result<uoffset_t> TableBuilder::OffsetVector(const std::vector<uoffset_t>& offsets) {
  ETPACK_RETURN_IF_ERROR(Room(uint64_t{offsets.size()} * sizeof(uoffset_t) + 8));
  fbb_.StartVector(offsets.size(), sizeof(uoffset_t));
  for (size_t i = offsets.size(); i > 0; --i) {
    fbb_.PushElement(flatbuffers::Offset<void>(offsets[i - 1]));
  }
  return fbb_.EndVector(offsets.size());
}

Result<uoffset_t> TableBuilder::BytesOf(const FieldInfo& f, const Source& src) {
  const uint64_t n = src.size();
  uint8_t* dst = nullptr;
  ETPACK_ASSIGN_OR_RETURN(const uoffset_t off, UninitializedVector(f, n, 1, &dst));
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

Result<uoffset_t> TableBuilder::StartTable(int obj_index) {
  ETPACK_RETURN_IF_ERROR(
      Room(uint64_t{d_.objects[static_cast<size_t>(obj_index)].fields.size()} * 16 + 64));
  return fbb_.StartTable();
}

// Room for n elements of elem_size bytes, aligned as f asks
// (VectorAlignment, at least the element size).
Result<uoffset_t> TableBuilder::UninitializedVector(const FieldInfo& f, uint64_t n,
                                                    size_t elem_size, uint8_t** dst) {
  const uint64_t align = std::max<uint64_t>(VectorAlignment(f), elem_size);
  ETPACK_RETURN_IF_ERROR(Room(n * elem_size + align + 8));
  if (align > elem_size) {
    fbb_.PreAlign(static_cast<size_t>(n * elem_size), static_cast<size_t>(align));
  }
  const uoffset_t off = fbb_.CreateUninitializedVector(static_cast<size_t>(n), elem_size, dst);
  // The data's distance from the buffer end is a multiple of the
  // alignment, and Finish pads the whole buffer to the largest one.
  assert(n == 0 || (fbb_.GetSize() - sizeof(uoffset_t)) % align == 0);
  return off;
}

Result<uoffset_t> TableBuilder::ScalarVector(const FieldInfo& f, const json::Value& v) {
  const BaseType et = f.element;
  const size_t elem_size = flatbuffers::GetTypeSize(et);
  const std::vector<json::Value>& items = v.items();
  uint8_t* dst = nullptr;
  ETPACK_ASSIGN_OR_RETURN(const uoffset_t off,
                          UninitializedVector(f, items.size(), elem_size, &dst));
  // dst stays valid: nothing below touches the builder.
  for (size_t i = 0; i < items.size(); ++i) {
    uint8_t* p = dst + i * elem_size;
    const int64_t at = static_cast<int64_t>(i);
    if (et == BaseType::Float || et == BaseType::Double) {
      ETPACK_ASSIGN_OR_RETURN(double d, Real(et, items[i], at));
      WriteReal(et, p, d);
    } else {
      ETPACK_ASSIGN_OR_RETURN(uint64_t bits, Integer(et, f.index, items[i], at));
      WriteInt(et, p, bits);
    }
  }
  return off;
}

Result<uoffset_t> TableBuilder::Vector(const FieldInfo& f, const json::Value& v) {
  const BaseType et = f.element;
  const bool bytes = et == BaseType::UByte && f.index < 0;
  if (v.kind() != json::Kind::kArray) {
    return Fail(std::string(bytes ? "expected an array of bytes" : "expected an array") + ", got " +
                Show(v));
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
Result<uoffset_t> TableBuilder::UnionMember(const FieldInfo& f, const FieldInfo& type_field,
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

Result<uoffset_t> TableBuilder::Child(const FieldInfo& f, const json::Value& v) {
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

Status TableBuilder::AddScalar(const FieldInfo& f, const json::Value& v) {
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
    AddRealElement(f, d);
    return Status::OK();
  }
  ETPACK_ASSIGN_OR_RETURN(uint64_t bits, Integer(f.type, f.index, v));
  AddIntElement(f, bits);
  return Status::OK();
}

void TableBuilder::AddRealElement(const FieldInfo& f, double d) {
  if (f.type == BaseType::Float) {
    fbb_.AddElement<float>(f.offset, static_cast<float>(d), static_cast<float>(f.default_real));
  } else {
    fbb_.AddElement<double>(f.offset, d, f.default_real);
  }
}

void TableBuilder::AddIntElement(const FieldInfo& f, uint64_t bits) {
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

Result<uoffset_t> TableBuilder::Table(int obj_index, const json::Value& v) {
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

  ETPACK_ASSIGN_OR_RETURN(const uoffset_t start, StartTable(obj_index));
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

Result<std::vector<uint8_t>> TableBuilder::Build(const json::Value& root) {
  ETPACK_ASSIGN_OR_RETURN(uoffset_t root_off, Table(d_.root, root));
  return Finish(root_off);
}

Result<std::vector<uint8_t>> TableBuilder::Finish(uoffset_t root_off) {
  const bool has_ident = d_.file_ident.size() == flatbuffers::kFileIdentifierLength;
  fbb_.Finish(flatbuffers::Offset<void>(root_off), has_ident ? d_.file_ident.c_str() : nullptr);
  const uint8_t* p = fbb_.GetBufferPointer();
  return std::vector<uint8_t>(p, p + fbb_.GetSize());
}

}  // namespace fbs

Result<std::vector<uint8_t>> BuildFlatbuffer(SchemaId schema, const json::Value& root,
                                             const TreeBuildOptions& options) {
  try {
    fbs::TableBuilder builder(fbs::Decoded(schema));
    ETPACK_RETURN_IF_ERROR(builder.Configure(options));
    return builder.Build(root);
  } catch (const std::bad_alloc&) {
    return OutOfRange("out of memory while building the flatbuffer");
  }
}

}  // namespace etpack
