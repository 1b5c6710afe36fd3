#include "flatbuffer/tree_reader.h"

#include <flatbuffers/idl.h>
#include <flatbuffers/reflection.h>

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "etpack/error_path.h"

namespace etpack {
namespace {

using namespace fbs;  // NOLINT: the schema tables are this file's vocabulary

class TreeReader {
 public:
  TreeReader(const SchemaData& data, const uint8_t* base, uint64_t size,
             std::vector<const FieldInfo*> omit, bool verify)
      : d_(data), base_(base), omit_(std::move(omit)) {
    if (verify) {
      flatbuffers::Verifier::Options o;
      o.max_tables = std::numeric_limits<uoffset_t>::max();
      verifier_.emplace(base, static_cast<size_t>(size), o);
    }
  }

  Result<json::Value> Root();

 private:
  Result<json::Value> Table(int obj_index, const flatbuffers::Table& t);
  Result<json::Value> Vector(const FieldInfo& f, const flatbuffers::Table& t);
  static json::Value Int(BaseType t, const uint8_t* p);

  bool Omitted(const FieldInfo& f) const {
    return !omit_.empty() && std::find(omit_.begin(), omit_.end(), &f) != omit_.end();
  }
  // The checks of verify mode; all pass without it.
  bool CheckRange(const uint8_t* p, size_t size, size_t align) const {
    if (!verifier_) return true;
    const size_t off = static_cast<size_t>(p - base_);
    return verifier_->VerifyAlignment(off, align) && verifier_->Verify(off, size);
  }
  bool CheckOffset(const flatbuffers::Table& t, voffset_t field) const {
    return !verifier_ || t.VerifyOffset(*verifier_, field);
  }
  Status OutOfBounds(const std::string& what) const {
    return Corrupt(PathOf(path_.Text()) + ": " + what + " is outside the buffer or misaligned");
  }

  const SchemaData& d_;
  const uint8_t* base_;
  std::vector<const FieldInfo*> omit_;
  std::optional<flatbuffers::Verifier> verifier_;
  ErrorPath path_;
};

Result<json::Value> TreeReader::Root() {
  if (!CheckRange(base_, sizeof(uoffset_t), sizeof(uoffset_t))) return OutOfBounds("root offset");
  const uoffset_t root = flatbuffers::ReadScalar<uoffset_t>(base_);
  if (verifier_ && !verifier_->Verify(root, sizeof(uoffset_t))) return OutOfBounds("root table");
  return Table(d_.root, *flatbuffers::GetAnyRoot(base_));
}

json::Value TreeReader::Int(BaseType t, const uint8_t* p) {
  switch (t) {
    case BaseType::Bool: return json::Value::Bool(flatbuffers::ReadScalar<uint8_t>(p) != 0);
    case BaseType::ULong: return json::Value::UInt(flatbuffers::ReadScalar<uint64_t>(p));
    default: return json::Value::Int(flatbuffers::GetAnyValueI(t, p));
  }
}

Result<json::Value> TreeReader::Vector(const FieldInfo& f, const flatbuffers::Table& t) {
  const BaseType et = f.element;
  const auto* vec = t.GetPointer<const flatbuffers::Vector<uint8_t>*>(f.offset);
  const size_t elem_size = et == BaseType::String || et == BaseType::Obj
                               ? sizeof(uoffset_t)
                               : flatbuffers::GetTypeSize(et);
  if (verifier_ &&
      !verifier_->VerifyVectorOrString(reinterpret_cast<const uint8_t*>(vec), elem_size)) {
    return OutOfBounds("vector");
  }
  const size_t n = vec->size();
  const uint8_t* data = vec->data();
  std::vector<json::Value> items;
  items.reserve(n);
  if (flatbuffers::IsScalar(et) && et != BaseType::UType) {
    const bool real = et == BaseType::Float || et == BaseType::Double;
    // The verifier aligns vectors only to 4 bytes: read 8-byte elements
    // from an aligned copy (see flatbuffer/unaligned_vector.h).
    alignas(8) uint8_t p[8];
    for (size_t i = 0; i < n; ++i) {
      std::memcpy(p, data + i * elem_size, elem_size);
      items.push_back(real ? json::Value::Double(flatbuffers::GetAnyValueF(et, p)) : Int(et, p));
    }
  } else if (et == BaseType::String) {
    const auto* strings =
        reinterpret_cast<const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>*>(vec);
    for (uoffset_t i = 0; i < strings->size(); ++i) {
      const flatbuffers::String* s = strings->Get(i);
      if (verifier_ && !verifier_->VerifyString(s)) {
        ErrorPath::Push p(path_, i);
        return OutOfBounds("string");
      }
      items.push_back(json::Value::String(s->str()));
    }
  } else if (et == BaseType::Obj && !f.is_struct) {
    const auto* tables =
        reinterpret_cast<const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::Table>>*>(vec);
    for (size_t i = 0; i < n; ++i) {
      ErrorPath::Push p(path_, i);
      ETPACK_ASSIGN_OR_RETURN(json::Value item,
                              Table(f.index, *tables->Get(static_cast<uoffset_t>(i))));
      items.push_back(std::move(item));
    }
  } else {
    return Unimplemented(PathOf(path_.Text()) + ": vectors of structs or unions are not supported");
  }
  return json::Value::Array(std::move(items));
}

Result<json::Value> TreeReader::Table(int obj_index, const flatbuffers::Table& t) {
  const ObjectInfo& obj = d_.objects[static_cast<size_t>(obj_index)];
  if (verifier_ && !t.VerifyTableStart(*verifier_)) {
    return OutOfBounds("table " + std::string(obj.name));
  }
  // Room for the members the loop below adds (every scalar, every offset
  // field present), not for every field of the schema: a program holds
  // millions of tables, most with few of their fields.
  size_t room = 0;
  for (const FieldInfo& f : obj.fields) {
    if (!f.present || Omitted(f)) continue;
    const bool scalar = flatbuffers::IsScalar(f.type) && f.type != BaseType::UType;
    if (scalar || t.GetAddressOf(f.offset) != nullptr) ++room;
  }
  std::vector<json::Value::Member> members;
  members.reserve(room);
  for (const FieldInfo& f : obj.fields) {
    if (!f.present || Omitted(f)) continue;
    ErrorPath::Push p(path_, f.name);
    const uint8_t* at = t.GetAddressOf(f.offset);
    if (at != nullptr && flatbuffers::IsScalar(f.type)) {
      const size_t size = flatbuffers::GetTypeSize(f.type);
      if (!CheckRange(at, size, size)) return OutOfBounds("field");
    }
    if (f.type == BaseType::UType) {
      // By member name, and only when a member is present (0 = none).
      const uint8_t code = at ? flatbuffers::ReadScalar<uint8_t>(at) : 0;
      if (code == 0) continue;
      const EnumInfo& e = d_.enums[static_cast<size_t>(f.index)];
      const EnumValue* ev = e.ByValue(code);
      if (ev == nullptr || ev->object < 0) {
        return Corrupt(PathOf(path_.Text()) + ": " + std::to_string(code) +
                       " is not a member code of union " + std::string(e.name));
      }
      members.emplace_back(std::string(f.name),
                           json::Value::String(std::string(d_.objects[ev->object].name)));
      continue;
    }
    if (flatbuffers::IsScalar(f.type)) {
      // Every scalar, default or not: trees then compare equal whether or
      // not a writer left defaults out.
      json::Value value;
      if (f.type == BaseType::Float || f.type == BaseType::Double) {
        value = json::Value::Double(at ? flatbuffers::GetAnyValueF(f.type, at) : f.default_real);
      } else if (at != nullptr) {
        value = Int(f.type, at);
      } else if (f.type == BaseType::Bool) {
        value = json::Value::Bool(f.default_integer != 0);
      } else if (f.type == BaseType::ULong) {
        value = json::Value::UInt(static_cast<uint64_t>(f.default_integer));
      } else {
        value = json::Value::Int(f.default_integer);
      }
      members.emplace_back(std::string(f.name), std::move(value));
      continue;
    }
    if (at == nullptr) {
      if (f.required && verifier_)
        return Corrupt(PathOf(path_.Text()) + ": required field is missing");
      continue;  // absent
    }
    if (!CheckOffset(t, f.offset)) return OutOfBounds("offset");
    json::Value value;
    if (f.type == BaseType::String) {
      const auto* s = t.GetPointer<const flatbuffers::String*>(f.offset);
      if (verifier_ && !verifier_->VerifyString(s)) return OutOfBounds("string");
      value = json::Value::String(s->str());
    } else if (f.type == BaseType::Vector) {
      ETPACK_ASSIGN_OR_RETURN(value, Vector(f, t));
    } else if (f.type == BaseType::Obj && !f.is_struct) {
      ETPACK_ASSIGN_OR_RETURN(value,
                              Table(f.index, *t.GetPointer<const flatbuffers::Table*>(f.offset)));
    } else if (f.type == BaseType::Union) {
      const EnumInfo& e = d_.enums[static_cast<size_t>(f.index)];
      const FieldInfo& tf = obj.fields[static_cast<size_t>(f.union_type_id)];
      const uint8_t code = t.GetField<uint8_t>(tf.offset, 0);
      const EnumValue* ev = e.ByValue(code);
      if (code == 0 || ev == nullptr || ev->object < 0) {
        return Corrupt(PathOf(path_.Text()) + ": union value with member code " +
                       std::to_string(code) + ", which union " + std::string(e.name) +
                       " does not define");
      }
      ETPACK_ASSIGN_OR_RETURN(
          value, Table(ev->object, *t.GetPointer<const flatbuffers::Table*>(f.offset)));
    } else {
      return Unimplemented(PathOf(path_.Text()) + ": struct and array fields are not supported");
    }
    members.emplace_back(std::string(f.name), std::move(value));
  }
  if (verifier_) verifier_->EndTable();
  return json::Value::Object(std::move(members));
}

// The fields named "Table.field" in `names`.
Result<std::vector<const FieldInfo*>> FieldsNamed(const SchemaData& d,
                                                  const std::vector<std::string>& names) {
  std::vector<const FieldInfo*> out;
  for (const std::string& name : names) {
    const FieldInfo* found = FindField(d, name);
    if (found == nullptr) {
      return InvalidArgument("omit: \"" + name + "\" is not a field (Table.field) of the schema");
    }
    out.push_back(found);
  }
  return out;
}

flatbuffers::Parser* NewTextParser(const SchemaData& d) {
  auto* parser = new flatbuffers::Parser();
  // The options of `flatc --json --strict-json --defaults-json`.
  parser->opts.strict_json = true;
  parser->opts.output_default_scalars_in_json = true;
  parser->opts.output_enum_identifiers = true;
  parser->opts.indent_step = 2;
  const bool ok = parser->Deserialize(d.bytes, d.size);
  assert(ok && "embedded schema does not deserialize");
  (void)ok;
  return parser;
}

// Built once and never destroyed; GenerateText only reads it.
const flatbuffers::Parser& TextParser(SchemaId id) {
  switch (id) {
    case SchemaId::kProgram: {
      static const flatbuffers::Parser* program = NewTextParser(Decoded(id));
      return *program;
    }
    case SchemaId::kFlatTensor: {
      static const flatbuffers::Parser* flat_tensor = NewTextParser(Decoded(id));
      return *flat_tensor;
    }
    case SchemaId::kBundledProgram: {
      static const flatbuffers::Parser* bundled = NewTextParser(Decoded(id));
      return *bundled;
    }
  }
  std::abort();  // not a SchemaId
}

Status CheckBuffer(const uint8_t* data, uint64_t size) {
  if (data == nullptr || size < 2 * sizeof(uoffset_t)) {
    return Corrupt("flatbuffer of " + std::to_string(size) + " bytes is too short");
  }
  return Status::OK();
}
}  // namespace

Result<json::Value> FlatbufferToTree(SchemaId schema, const uint8_t* data, uint64_t size,
                                     const TreeReadOptions& options) {
  ETPACK_RETURN_IF_ERROR(CheckBuffer(data, size));
  try {
    const SchemaData& d = Decoded(schema);
    ETPACK_ASSIGN_OR_RETURN(std::vector<const FieldInfo*> omit, FieldsNamed(d, options.omit));
    return TreeReader(d, data, size, std::move(omit), options.verify).Root();
  } catch (const std::bad_alloc&) {
    return OutOfRange("out of memory while converting a flatbuffer of " + std::to_string(size) +
                      " bytes to a tree");
  }
}

Result<std::string> FlatbufferToFlatcJson(SchemaId schema, const uint8_t* data, uint64_t size) {
  ETPACK_RETURN_IF_ERROR(CheckBuffer(data, size));
  try {
    std::string text;
    // FlatBuffers 23 on (Debian 13) returns an error text where 2.0 (Debian 12)
    // returned false.
#if FLATBUFFERS_VERSION_MAJOR >= 23
    const bool rendered = flatbuffers::GenText(TextParser(schema), data, &text) == nullptr;
#else
    const bool rendered = flatbuffers::GenerateText(TextParser(schema), data, &text);
#endif
    if (!rendered) {
      return Corrupt("flatbuffer could not be rendered as JSON with the schema");
    }
    return text;
  } catch (const std::bad_alloc&) {
    return OutOfRange("out of memory while rendering a flatbuffer of " + std::to_string(size) +
                      " bytes as JSON");
  }
}

}  // namespace etpack
