// BuildFlatbuffer: a JSON tree in flatc form as the input of TableBuilder
// (flatbuffer/table_builder.h). What the tree adds is its forms: members
// found by name, enums and union types by name, "inf"/"nan" strings, and
// errors that show the value found.

#include "flatbuffer/tree_builder.h"

#include <flatbuffers/flatbuffer_builder.h>
#include <flatbuffers/reflection.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "flatbuffer/table_builder_inl.h"

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

class TreeInput final : public TableInput {
 public:
  explicit TreeInput(TableBuilder& b) : b_(b), d_(b.schema()) {}

  // Matches the table's members to its fields (slots_, until End).
  Status Begin(int obj_index, Node table) override {
    const ObjectInfo& obj = d_.objects[static_cast<size_t>(obj_index)];
    const json::Value& v = Of(table);
    if (v.kind() != json::Kind::kObject) {
      return b_.Fail("expected an object (table " + std::string(obj.name) + "), got " + Show(v));
    }
    const size_t slots = slots_.size();
    slots_.resize(slots + obj.fields.size(), nullptr);
    // Members usually come in schema order (flatc, the exporter walkers and
    // etpack's own trees write them so): the field after the last one found
    // is tried first, so a table costs one comparison per member, not a scan.
    size_t next = 0;
    for (const json::Value::Member& m : v.members()) {
      int id = -1;
      if (next < obj.fields.size() && obj.fields[next].present &&
          obj.fields[next].name == m.first) {
        id = static_cast<int>(next);
      } else {
        id = obj.Lookup(m.first);
      }
      next = static_cast<size_t>(id) + 1;
      if (id < 0 || slots_[slots + static_cast<size_t>(id)] != nullptr) {
        TableBuilder::Push p(b_, m.first);
        return b_.Fail(id < 0 ? "unknown member of table " + std::string(obj.name)
                              : std::string("duplicate member"));
      }
      if (!m.second.is_null()) slots_[slots + static_cast<size_t>(id)] = &m.second;
    }
    return Status::OK();
  }

  void End(int obj_index) override {
    slots_.resize(slots_.size() - d_.objects[static_cast<size_t>(obj_index)].fields.size());
  }

  Result<bool> Scalar(int obj_index, const FieldInfo& f, size_t id, Node, uint64_t* bits) override {
    const json::Value* m = Slot(obj_index, id);
    if (m == nullptr) return false;
    TableBuilder::Push p(b_, f.name);
    ETPACK_ASSIGN_OR_RETURN(*bits, Bits(f.type, f.index, *m));
    return true;
  }

  Status Union(int obj_index, const FieldInfo& f, size_t id, Node, uint8_t* code,
               Value* out) override {
    const FieldInfo& type_field =
        d_.objects[static_cast<size_t>(obj_index)].fields[static_cast<size_t>(f.union_type_id)];
    const json::Value* type = Slot(obj_index, static_cast<size_t>(f.union_type_id));
    const json::Value* value = Slot(obj_index, id);
    const EnumInfo& e = d_.enums[static_cast<size_t>(f.index)];
    *code = 0;
    if (type != nullptr) {
      TableBuilder::Push p(b_, type_field.name);
      ETPACK_ASSIGN_OR_RETURN(*code, UnionCode(e, *type));
    }
    if ((*code == 0) != (value == nullptr)) {
      TableBuilder::Push p(b_, f.name);
      if (*code == 0) {
        return b_.Fail("union value without a member type in " + std::string(type_field.name));
      }
      return b_.Fail("missing, although " + std::string(type_field.name) +
                     " names a member of union " + std::string(e.name));
    }
    if (*code == 0) {
      *out = Value::Absent();
      return Status::OK();
    }
    *out = Value::Of(value);
    return Status::OK();
  }

  Status Field(int obj_index, const FieldInfo&, size_t id, Node, Value* out) override {
    const json::Value* m = Slot(obj_index, id);
    *out = m != nullptr ? Value::Of(m) : Value::Absent();
    return Status::OK();
  }

  Result<std::string_view> String(Node node) override {
    const json::Value& v = Of(node);
    if (v.kind() != json::Kind::kString) return b_.Fail("expected a string, got " + Show(v));
    return std::string_view(v.as_string());
  }

  Result<Vector> VectorOf(const FieldInfo& f, Node node) override {
    const json::Value& v = Of(node);
    if (v.kind() != json::Kind::kArray) {
      const bool bytes = f.element == BaseType::UByte && f.index < 0;
      return b_.Fail(std::string(bytes ? "expected an array of bytes" : "expected an array") +
                     ", got " + Show(v));
    }
    return Vector{&v, v.items().size(), 0};
  }

  Status ScalarItems(const FieldInfo& f, const Vector& v, uint8_t* dst) override {
    const std::vector<json::Value>& items = Of(v.items).items();
    const size_t elem_size = flatbuffers::GetTypeSize(f.element);
    for (size_t i = 0; i < items.size(); ++i) {
      ETPACK_ASSIGN_OR_RETURN(const uint64_t bits,
                              Bits(f.element, f.index, items[i], static_cast<int64_t>(i)));
      WriteScalarBits(f.element, dst + i * elem_size, bits);
    }
    return Status::OK();
  }

  Node Item(const FieldInfo&, const Vector& v, size_t i) override {
    return &Of(v.items).items()[i];
  }

 private:
  static const json::Value& Of(Node n) { return *static_cast<const json::Value*>(n); }

  // Field `id` of the table begun last (whose slots are on top).
  const json::Value* Slot(int obj_index, size_t id) const {
    return slots_[slots_.size() - d_.objects[static_cast<size_t>(obj_index)].fields.size() + id];
  }

  // `index` >= 0 names a vector element.
  Status FailAt(int64_t index, const std::string& message) const {
    if (index < 0) return b_.Fail(message);
    return InvalidArgument(b_.Where() + "[" + std::to_string(index) + "]: " + message);
  }

  // A scalar of type t (enum `enum_index` or -1) as its bits.
  Result<uint64_t> Bits(BaseType t, int enum_index, const json::Value& v,
                        int64_t index = -1) const {
    if (t == BaseType::Float || t == BaseType::Double) {
      ETPACK_ASSIGN_OR_RETURN(const double d, Real(t, v, index));
      return RealBits(t, d);
    }
    return Integer(t, enum_index, v, index);
  }

  Result<uint64_t> Integer(BaseType t, int enum_index, const json::Value& v, int64_t index) const {
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

  Result<double> Real(BaseType t, const json::Value& v, int64_t index) const {
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

  Result<uint8_t> UnionCode(const EnumInfo& e, const json::Value& v) const {
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
      return b_.Fail(Show(v) + " is not a member of union " + std::string(e.name));
    }
    if (v.is_integer()) {
      if (v.kind() == json::Kind::kInt && v.as_int() >= 0 && v.as_int() <= UINT8_MAX &&
          e.ByValue(v.as_int()) != nullptr) {
        return static_cast<uint8_t>(v.as_int());
      }
      return b_.Fail(Show(v) + " is not a member code of union " + std::string(e.name));
    }
    return b_.Fail("expected a member name of union " + std::string(e.name) + ", got " + Show(v));
  }

  TableBuilder& b_;
  const SchemaData& d_;
  // The tree member of each field (by id) of the tables under construction.
  std::vector<const json::Value*> slots_;
};

}  // namespace
}  // namespace fbs

Result<std::vector<uint8_t>> BuildFlatbuffer(SchemaId schema, const json::Value& root,
                                             const BuildOptions& options) {
  return fbs::BuildGuarded(fbs::Decoded(schema), 1024, options,
                           [&](fbs::TableBuilder& b) -> Result<std::vector<uint8_t>> {
                             fbs::TreeInput in(b);
                             return b.Build(in, &root);
                           });
}

}  // namespace etpack
