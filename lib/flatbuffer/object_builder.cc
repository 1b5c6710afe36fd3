// BuildFlatbufferFromObjects (flatbuffer/object_builder.h): the caller's
// objects as the input of TableBuilder (flatbuffer/table_builder.h), read
// through an ObjectReader one attribute at a time, in field order, as each
// table is built. The words of its errors are the exporter's (Python's
// type names: int, float, str, list), since that is who reads them.

#include "flatbuffer/object_builder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "flatbuffer/table_builder_inl.h"

namespace etpack {
namespace fbs {

namespace {

using Object = ObjectReader::Object;

std::string ScalarName(BaseType t) {
  switch (t) {
    case BaseType::Bool: return "bool";
    case BaseType::Float:
    case BaseType::Double: return "float";
    default: return "int";
  }
}

class ObjectInput final : public TableInput {
 public:
  ObjectInput(TableBuilder& b, ObjectReader& reader) : b_(b), d_(b.schema()), reader_(reader) {
    keys_.resize(d_.objects.size());
  }

  // The root's fields that are not read.
  Status Skip(const std::vector<std::string>& skip_root_fields) {
    const ObjectInfo& obj = d_.objects[static_cast<size_t>(d_.root)];
    skip_root_.assign(obj.fields.size(), false);
    for (const std::string& name : skip_root_fields) {
      const int id = obj.Lookup(name);
      if (id < 0) return InvalidArgument("skip_root_fields: no field \"" + name + "\"");
      skip_root_[static_cast<size_t>(id)] = true;
    }
    return Status::OK();
  }

  Status Begin(int obj_index, Node table) override {
    if (table == nullptr || reader_.KindOf(table) != ObjectReader::Kind::kOther) {
      return WrongType(table, std::string(d_.objects[static_cast<size_t>(obj_index)].name));
    }
    marks_.push_back(reader_.Mark());
    return Status::OK();
  }

  // The table is built: what its fields handed out is not needed again.
  void End(int) override {
    reader_.ReleaseTo(marks_.back());
    marks_.pop_back();
  }

  Result<bool> Scalar(int obj_index, const FieldInfo& f, size_t id, Node table,
                      uint64_t* bits) override {
    TableBuilder::Push p(b_, f.name);
    ETPACK_ASSIGN_OR_RETURN(const Object v, Attribute(table, obj_index, id));
    if (v == nullptr) return false;
    ETPACK_ASSIGN_OR_RETURN(*bits, Bits(f.type, f.index, v));
    return true;
  }

  Status Union(int obj_index, const FieldInfo& f, size_t id, Node table, uint8_t* code,
               Value* out) override {
    *code = 0;
    TableBuilder::Push p(b_, f.name);
    ETPACK_ASSIGN_OR_RETURN(const Object v, Attribute(table, obj_index, id));
    *out = Value::Absent();
    if (v == nullptr) return Status::OK();
    // The member is named by the class of its object.
    const std::string_view cls = reader_.ClassName(v);
    const EnumValue* member = nullptr;
    for (const EnumValue& e : d_.enums[static_cast<size_t>(f.index)].values) {
      if (e.object >= 0 && e.name == cls) member = &e;
    }
    if (member == nullptr) return WrongType(v, Expected(f));
    *code = static_cast<uint8_t>(member->value);
    *out = Value::Of(v);
    return Status::OK();
  }

  Status Field(int obj_index, const FieldInfo&, size_t id, Node table, Value* out) override {
    ETPACK_ASSIGN_OR_RETURN(const Object v, Attribute(table, obj_index, id));
    *out = v != nullptr ? Value::Of(v) : Value::Absent();
    return Status::OK();
  }

  Result<std::string_view> String(Node v) override {
    if (reader_.KindOf(v) != ObjectReader::Kind::kString) return WrongType(v, "str");
    std::string_view s;
    if (Status st = reader_.Utf8(v, &s); !st.ok()) return b_.Fail(st.message());
    return s;
  }

  Result<Vector> VectorOf(const FieldInfo& f, Node v) override {
    const BaseType et = f.element;
    const ObjectReader::Kind kind = reader_.KindOf(v);
    if (et == BaseType::UByte && f.index < 0 && kind == ObjectReader::Kind::kBytes) {
      // A small byte field (CompileSpec.value) given as bytes.
      const uint8_t* data = nullptr;
      size_t n = 0;
      ETPACK_RETURN_IF_ERROR(reader_.BytesOf(v, &data, &n));
      return Vector{data, n, kBytes};
    }
    if (kind != ObjectReader::Kind::kList) return WrongType(v, Expected(f));
    if (marks_.size() == 1 && std::find(emptied_.begin(), emptied_.end(), &f) != emptied_.end()) {
      return Vector{nullptr, 0, kList};
    }
    // Reading a table's attributes runs the caller's code, which could
    // change the list while it is walked: the reader hands out a snapshot.
    ObjectReader::ItemSpan items;
    ETPACK_RETURN_IF_ERROR(reader_.ItemsOf(v, et == BaseType::Obj, &items));
    return Vector{items.items, items.size, kList};
  }

  Status ScalarItems(const FieldInfo& f, const Vector& v, uint8_t* dst) override {
    if (v.form == kBytes) {
      if (v.size > 0) std::memcpy(dst, v.items, v.size);
      return Status::OK();
    }
    const size_t elem_size = flatbuffers::GetTypeSize(f.element);
    for (size_t i = 0; i < v.size; ++i) {
      TableBuilder::Push p(b_, i);
      ETPACK_ASSIGN_OR_RETURN(const uint64_t bits, Bits(f.element, f.index, Item(f, v, i)));
      WriteScalarBits(f.element, dst + i * elem_size, bits);
    }
    return Status::OK();
  }

  Node Item(const FieldInfo&, const Vector& v, size_t i) override {
    return static_cast<const Object*>(v.items)[i];
  }

 private:
  enum : uint32_t { kList, kBytes };  // Vector::form

  std::string TypeOf(BaseType t, int index) const {
    if (t == BaseType::Obj) return std::string(d_.objects[static_cast<size_t>(index)].name);
    if (t == BaseType::String) return "str";
    if (index >= 0 && t != BaseType::Vector) {
      return std::string(d_.enums[static_cast<size_t>(index)].name) + " (int)";
    }
    return ScalarName(t);
  }

  std::string Expected(const FieldInfo& f) const {
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

  Status WrongType(Object found, const std::string& expected) {
    return reader_.WrongType(b_.Where() + ": expected " + expected + ", found " +
                             std::string(reader_.ClassName(found)));
  }

  // getattr for field `id` of a table (the builder is at the field); a
  // missing attribute is an error naming the object's class and the type
  // expected. A field of the root that is skipped is none, except that a
  // list there is an empty vector (see BuildFlatbufferFromObjects).
  Result<Object> Attribute(Object o, int obj_index, size_t id) {
    if (marks_.size() == 1 && skip_root_[id]) return Skipped(o, obj_index, id);
    const ObjectInfo& obj = d_.objects[static_cast<size_t>(obj_index)];
    std::vector<ObjectReader::Key>& keys = keys_[static_cast<size_t>(obj_index)];
    if (keys.empty()) keys.assign(obj.fields.size(), nullptr);
    const FieldInfo& f = obj.fields[id];
    if (keys[id] == nullptr) keys[id] = reader_.KeyOf(f.name);
    Object value = nullptr;
    bool found = false;
    ETPACK_RETURN_IF_ERROR(reader_.Get(o, keys[id], &value, &found));
    if (!found) return MissingAttribute(reader_, b_.Where(), Expected(f), o, f.name);
    return value;
  }

  // A skipped root field: a list (its items unread) when the object has
  // one there, to be built empty; else none, a missing attribute included.
  Result<Object> Skipped(Object o, int obj_index, size_t id) {
    const FieldInfo& f = d_.objects[static_cast<size_t>(obj_index)].fields[id];
    if (f.type != BaseType::Vector) return Object{nullptr};
    Object value = nullptr;
    bool found = false;
    ETPACK_RETURN_IF_ERROR(reader_.Get(o, reader_.KeyOf(f.name), &value, &found));
    if (value == nullptr || reader_.KindOf(value) != ObjectReader::Kind::kList) {
      return Object{nullptr};
    }
    emptied_.push_back(&f);
    return value;
  }

  // A scalar of type t (enum `enum_index` or -1) as its bits.
  Result<uint64_t> Bits(BaseType t, int enum_index, Object v) {
    const ObjectReader::Kind kind = reader_.KindOf(v);
    if (t == BaseType::Bool) {
      if (kind != ObjectReader::Kind::kBool) return WrongType(v, "bool");
      return uint64_t{reader_.Bool(v) ? 1u : 0u};
    }
    if (t == BaseType::Float || t == BaseType::Double) {
      double real = 0;
      if (kind == ObjectReader::Kind::kFloat || kind == ObjectReader::Kind::kInt) {
        real = reader_.Double(v);
      } else if (std::string_view s; kind == ObjectReader::Kind::kString &&
                                     reader_.Utf8(v, &s).ok() &&
                                     (s == "inf" || s == "-inf" || s == "nan")) {
        // How the exporter stores infinities (and, for symmetry, NaN).
        real = s == "nan"   ? std::numeric_limits<double>::quiet_NaN()
               : s == "inf" ? std::numeric_limits<double>::infinity()
                            : -std::numeric_limits<double>::infinity();
      } else {
        return WrongType(v, "float (or \"inf\", \"-inf\")");
      }
      if (t == BaseType::Float && std::isfinite(real) &&
          std::fabs(real) > static_cast<double>(std::numeric_limits<float>::max())) {
        return b_.Fail(reader_.Text(v) + " is out of range for the schema's float");
      }
      return RealBits(t, real);
    }
    if (kind != ObjectReader::Kind::kInt) return WrongType(v, TypeOf(t, enum_index));
    auto out_of_range = [&] {
      return b_.Fail(reader_.Text(v) + " is out of range for the schema's " + TypeName(t) +
                     " (found int, expected " + TypeOf(t, enum_index) + ")");
    };
    int64_t x = 0;
    if (!reader_.Int64(v, &x)) {
      // Beyond 64-bit signed: only a ULong can hold it.
      uint64_t u = 0;
      if (t != BaseType::ULong || !reader_.UInt64(v, &u)) return out_of_range();
      return u;
    }
    const IntRange r = RangeOf(t);
    if (x < r.min || (x >= 0 && static_cast<uint64_t>(x) > r.max)) return out_of_range();
    if (enum_index >= 0 && d_.enums[static_cast<size_t>(enum_index)].ByValue(x) == nullptr) {
      return b_.Fail(std::to_string(x) + " is not a value of enum " +
                     std::string(d_.enums[static_cast<size_t>(enum_index)].name) + " (found " +
                     std::string(reader_.ClassName(v)) + " " + std::to_string(x) + ", expected " +
                     TypeOf(t, enum_index) + ")");
    }
    return static_cast<uint64_t>(x);
  }

  TableBuilder& b_;
  const SchemaData& d_;
  ObjectReader& reader_;
  // Each field's key, by object and field id (made on first use).
  std::vector<std::vector<ObjectReader::Key>> keys_;
  std::vector<bool> skip_root_;  // by field id of the root table
  // The skipped root fields that hold a list (a few).
  std::vector<const FieldInfo*> emptied_;
  // The reader's mark at each table begun and not ended: one is the root.
  std::vector<size_t> marks_;
};

}  // namespace
}  // namespace fbs

Status MissingAttribute(ObjectReader& reader, const std::string& path, const std::string& expected,
                        ObjectReader::Object holder, std::string_view name) {
  return reader.WrongType(path + ": expected " + expected + ", found a " +
                          std::string(reader.ClassName(holder)) + " without attribute '" +
                          std::string(name) + "'");
}

Result<std::vector<uint8_t>> BuildFlatbufferFromObjects(
    SchemaId schema, ObjectReader& reader, ObjectReader::Object root,
    const std::vector<std::string>& skip_root_fields, const BuildOptions& options) {
  return fbs::BuildGuarded(fbs::Decoded(schema), size_t{16} << 20, options,
                           [&](fbs::TableBuilder& b) -> Result<std::vector<uint8_t>> {
                             fbs::ObjectInput in(b, reader);
                             ETPACK_RETURN_IF_ERROR(in.Skip(skip_root_fields));
                             return b.Build(in, root);
                           });
}

}  // namespace etpack
