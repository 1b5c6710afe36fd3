// TableBuilder::BuildFromObjects (flatbuffer/table_builder.h): the
// caller's objects walked by the schema through an ObjectReader, each table
// built as it is read. The words of its errors are the exporter's (Python's
// type names: int, float, str, list), since that is who reads them.

#include "flatbuffer/object_builder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "flatbuffer/table_builder.h"

namespace etpack {
namespace fbs {

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

std::string TableBuilder::TypeOf(BaseType t, int index) const {
  if (t == BaseType::Obj) return std::string(d_.objects[static_cast<size_t>(index)].name);
  if (t == BaseType::String) return "str";
  if (index >= 0 && t != BaseType::Vector) {
    return std::string(d_.enums[static_cast<size_t>(index)].name) + " (int)";
  }
  return ScalarName(t);
}

std::string TableBuilder::Expected(const FieldInfo& f) const {
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

Status TableBuilder::WrongType(Object found, const std::string& expected) {
  return reader_->WrongType(PathOf(Path()) + ": expected " + expected + ", found " +
                            std::string(reader_->ClassName(found)));
}

// getattr for field `id` of a table; a missing attribute is an error at the
// attribute's path naming the object's class and the type expected.
Result<TableBuilder::Object> TableBuilder::Attribute(Object o, int obj_index, size_t id) {
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
    return MissingAttribute(*reader_, PathOf(Path()), Expected(f), o, f.name);
  }
  return value;
}

Status TableBuilder::ObjectScalarValue(BaseType t, int enum_index, Object v, uint64_t* bits,
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
  auto out_of_range = [&] {
    return Invalid(reader_->Text(v) + " is out of range for the schema's " + TypeName(t) +
                   " (found int, expected " + TypeOf(t, enum_index) + ")");
  };
  int64_t x = 0;
  if (!reader_->Int64(v, &x)) {
    // Beyond 64-bit signed: only a ULong can hold it.
    uint64_t u = 0;
    if (t != BaseType::ULong || !reader_->UInt64(v, &u)) return out_of_range();
    *bits = u;
    return Status::OK();
  }
  const IntRange r = RangeOf(t);
  if (x < r.min || (x >= 0 && static_cast<uint64_t>(x) > r.max)) return out_of_range();
  if (enum_index >= 0 && d_.enums[static_cast<size_t>(enum_index)].ByValue(x) == nullptr) {
    return Invalid(std::to_string(x) + " is not a value of enum " +
                   std::string(d_.enums[static_cast<size_t>(enum_index)].name) + " (found " +
                   std::string(reader_->ClassName(v)) + " " + std::to_string(x) + ", expected " +
                   TypeOf(t, enum_index) + ")");
  }
  *bits = static_cast<uint64_t>(x);
  return Status::OK();
}

Result<uoffset_t> TableBuilder::ObjectString(Object v) {
  if (reader_->KindOf(v) != ObjectReader::Kind::kString) return WrongType(v, "str");
  std::string_view s;
  if (Status st = reader_->Utf8(v, &s); !st.ok()) return Invalid(st.message());
  return StringOf(s);
}

Result<uoffset_t> TableBuilder::ObjectVector(const FieldInfo& f, Object v) {
  const BaseType et = f.element;
  const ObjectReader::Kind kind = reader_->KindOf(v);
  if (et == BaseType::UByte && f.index < 0 && kind == ObjectReader::Kind::kBytes) {
    // A small byte field (CompileSpec.value) given as bytes.
    const uint8_t* data = nullptr;
    size_t n = 0;
    ETPACK_RETURN_IF_ERROR(reader_->BytesOf(v, &data, &n));
    uint8_t* dst = nullptr;
    ETPACK_ASSIGN_OR_RETURN(const uoffset_t off, UninitializedVector(f, n, 1, &dst));
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
    uint8_t* dst = nullptr;
    ETPACK_ASSIGN_OR_RETURN(const uoffset_t off,
                            UninitializedVector(f, items.size, elem_size, &dst));
    // dst stays valid: nothing below touches the builder.
    for (size_t i = 0; i < items.size; ++i) {
      Push p(*this, i);
      uint64_t bits = 0;
      double real = 0;
      ETPACK_RETURN_IF_ERROR(ObjectScalarValue(et, f.index, items.items[i], &bits, &real));
      uint8_t* at = dst + i * elem_size;
      if (et == BaseType::Float || et == BaseType::Double) {
        WriteReal(et, at, real);
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

Result<uoffset_t> TableBuilder::ObjectTable(int obj_index, Object o, bool root) {
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
    if (s.field->type == BaseType::Float || s.field->type == BaseType::Double) {
      AddRealElement(*s.field, s.real);
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

Result<std::vector<uint8_t>> TableBuilder::BuildFromObjects(
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

}  // namespace fbs

Status MissingAttribute(ObjectReader& reader, const std::string& path, const std::string& expected,
                        ObjectReader::Object holder, std::string_view name) {
  return reader.WrongType(path + ": expected " + expected + ", found a " +
                          std::string(reader.ClassName(holder)) + " without attribute '" +
                          std::string(name) + "'");
}

Result<std::vector<uint8_t>> BuildFlatbufferFromObjects(
    SchemaId schema, ObjectReader& reader, ObjectReader::Object root,
    const std::vector<std::string>& skip_root_fields, const TreeBuildOptions& options) {
  try {
    fbs::TableBuilder builder(fbs::Decoded(schema), size_t{16} << 20);
    ETPACK_RETURN_IF_ERROR(builder.Configure(options));
    return builder.BuildFromObjects(reader, root, skip_root_fields);
  } catch (const std::bad_alloc&) {
    return OutOfRange("out of memory while building the flatbuffer");
  }
}

}  // namespace etpack
