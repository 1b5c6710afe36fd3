// flatbuffer/table_builder_inl.h (internal) — TableBuilder's walk of the
// schema (table_builder.h), a template on the input so that its questions
// are direct calls the compiler can inline: the copy asks several per table
// on every pack. Included by the inputs' drivers, which instantiate it.

#ifndef ETPACK_FLATBUFFER_TABLE_BUILDER_INL_H_
#define ETPACK_FLATBUFFER_TABLE_BUILDER_INL_H_

#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "flatbuffer/table_builder.h"

namespace etpack::fbs {

template <typename In>
Result<std::vector<uint8_t>> TableBuilder::Build(In& in, Node root) {
  static_assert(std::is_base_of_v<TableInput, In>, "an input is a TableInput");
  in_ = &in;
  table_ = [](TableBuilder& b, void* input, int obj_index, Node node) {
    return b.WalkTable(*static_cast<In*>(input), obj_index, node);
  };
  ETPACK_ASSIGN_OR_RETURN(const uoffset_t root_off, WalkTable(in, d_.root, root));
  return Finish(root_off);
}

template <typename In>
Result<uoffset_t> TableBuilder::WalkVector(In& in, const FieldInfo& f, Node node) {
  ETPACK_ASSIGN_OR_RETURN(const TableInput::Vector v, in.VectorOf(f, node));
  const BaseType et = f.element;
  if (flatbuffers::IsScalar(et) && et != BaseType::UType) {
    const size_t elem_size = flatbuffers::GetTypeSize(et);
    uint8_t* dst = nullptr;
    ETPACK_ASSIGN_OR_RETURN(const uoffset_t off, UninitializedVector(f, v.size, elem_size, &dst));
    // dst stays valid: an input writes the items without touching the builder.
    ETPACK_RETURN_IF_ERROR(in.ScalarItems(f, v, dst));
    return off;
  }
  if ((et != BaseType::String && et != BaseType::Obj) || f.is_struct) {
    return Unimplemented(Where() + ": vectors of structs or unions are not supported");
  }
  const size_t base = items_.size();
  for (size_t i = 0; i < v.size; ++i) {
    Push p(*this, i);
    const Node item = in.Item(f, v, i);
    uoffset_t o = 0;
    if (et == BaseType::String) {
      ETPACK_ASSIGN_OR_RETURN(const std::string_view s, in.String(item));
      ETPACK_ASSIGN_OR_RETURN(o, StringOf(s));
    } else {
      ETPACK_ASSIGN_OR_RETURN(o, WalkTable(in, f.index, item));
    }
    items_.push_back(o);
  }
  ETPACK_ASSIGN_OR_RETURN(const uoffset_t off, OffsetVector(items_.data() + base, v.size));
  items_.resize(base);
  return off;
}

template <typename In>
Result<uoffset_t> TableBuilder::WalkChild(In& in, const FieldInfo& f, Node node) {
  switch (f.type) {
    case BaseType::String: {
      ETPACK_ASSIGN_OR_RETURN(const std::string_view s, in.String(node));
      return StringOf(s);
    }
    case BaseType::Vector: return WalkVector(in, f, node);
    case BaseType::Obj:
      if (!f.is_struct) return WalkTable(in, f.index, node);
      break;
    default: break;
  }
  return Unimplemented(Where() + ": struct and array fields are not supported");
}

template <typename In>
Result<uoffset_t> TableBuilder::WalkValue(In& in, const ObjectInfo& obj, const FieldInfo& f,
                                          const TableInput::Value& v, int member) {
  switch (v.kind) {
    case TableInput::Value::Kind::kAbsent:
      if (f.required) return Fail("missing required field of table " + std::string(obj.name));
      return uoffset_t{0};
    case TableInput::Value::Kind::kBuilt: return v.built;
    case TableInput::Value::Kind::kNode: break;
  }
  return member >= 0 ? WalkTable(in, member, v.node) : WalkChild(in, f, v.node);
}

template <typename In>
Result<uoffset_t> TableBuilder::WalkUnion(In& in, int obj_index, const FieldInfo& f, size_t id,
                                          Node table) {
  const ObjectInfo& obj = d_.objects[static_cast<size_t>(obj_index)];
  uint8_t code = 0;
  TableInput::Value v;
  ETPACK_RETURN_IF_ERROR(in.Union(obj_index, f, id, table, &code, &v));
  // The type is a scalar of the table, written with the others.
  PendingScalar& type = scalars_.emplace_back();  // field by field: see WalkTable
  type.field = &obj.fields[static_cast<size_t>(f.union_type_id)];
  type.bits = code;
  Push p(*this, f.name);
  int member = -1;
  if (v.kind == TableInput::Value::Kind::kNode) {
    const EnumInfo& e = d_.enums[static_cast<size_t>(f.index)];
    const EnumValue* ev = e.ByValue(code);
    if (ev == nullptr || ev->object < 0) {
      return Fail(std::to_string(code) + " is not a member code of union " + std::string(e.name));
    }
    member = ev->object;
  }
  return WalkValue(in, obj, f, v, member);
}

template <typename In>
Result<uoffset_t> TableBuilder::WalkTable(In& in, int obj_index, Node node) {
  const ObjectInfo& obj = d_.objects[static_cast<size_t>(obj_index)];
  ETPACK_RETURN_IF_ERROR(in.Begin(obj_index, node));
  // Children first (a table's offsets must point at finished objects);
  // scalars are kept until the table starts.
  const size_t scalars = scalars_.size();
  const size_t pending = pending_.size();
  for (size_t id = 0; id < obj.fields.size(); ++id) {
    const FieldInfo& f = obj.fields[id];
    if (!f.present || f.type == BaseType::UType) continue;
    uoffset_t o = 0;
    if (f.type == BaseType::Union) {
      ETPACK_ASSIGN_OR_RETURN(o, WalkUnion(in, obj_index, f, id, node));
    } else if (flatbuffers::IsScalar(f.type)) {
      // Straight into the stack (no copy of a temporary: the hot path).
      PendingScalar& ps = scalars_.emplace_back();
      ps.field = &f;
      ETPACK_ASSIGN_OR_RETURN(const bool present, in.Scalar(obj_index, f, id, node, &ps.bits));
      if (!present) scalars_.pop_back();
      continue;
    } else {
      Push p(*this, f.name);
      TableInput::Value v;
      ETPACK_RETURN_IF_ERROR(in.Field(obj_index, f, id, node, &v));
      ETPACK_ASSIGN_OR_RETURN(o, WalkValue(in, obj, f, v, -1));
    }
    if (o != 0) pending_.emplace_back(f.offset, o);
  }
  ETPACK_ASSIGN_OR_RETURN(const uoffset_t start, StartTable(obj_index));
  for (size_t i = scalars; i < scalars_.size(); ++i) {
    AddScalar(*scalars_[i].field, scalars_[i].bits);
  }
  for (size_t i = pending; i < pending_.size(); ++i) {
    fbb_.AddOffset(pending_[i].first, flatbuffers::Offset<void>(pending_[i].second));
  }
  scalars_.resize(scalars);
  pending_.resize(pending);
  in.End(obj_index);
  return fbb_.EndTable(start);
}

}  // namespace etpack::fbs

#endif  // ETPACK_FLATBUFFER_TABLE_BUILDER_INL_H_
