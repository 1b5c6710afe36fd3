// TableBuilder (flatbuffer/table_builder.h): the schema walk every input
// shares, and the checked primitives it and a CopyEdits build with.

#include "flatbuffer/table_builder.h"

#include <algorithm>
#include <cassert>
#include <string>
#include <vector>

namespace etpack::fbs {

Status TableBuilder::Configure(
    const std::string& root_path,
    const std::vector<std::pair<std::string, uint64_t>>& vector_alignment) {
  path_.root() = root_path;
  for (const auto& [name, align] : vector_alignment) {
    const FieldInfo* found = FindField(d_, name);
    if (found == nullptr || found->type != BaseType::Vector) {
      return InvalidArgument("vector_alignment: \"" + name +
                             "\" is not a vector field (Table.field) of the schema");
    }
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
    return OutOfRange(Where() + ": adding " + std::to_string(bytes) + " bytes to " +
                      std::to_string(have) +
                      " would exceed the 2 GiB flatbuffer limit; move bulk data to segments");
  }
  return Status::OK();
}

Result<uoffset_t> TableBuilder::StringOf(std::string_view s) {
  ETPACK_RETURN_IF_ERROR(Room(uint64_t{s.size()} + 8));
  return fbb_.CreateString(s.data(), s.size()).o;
}

Result<uoffset_t> TableBuilder::OffsetVector(const uoffset_t* offsets, size_t n) {
  ETPACK_RETURN_IF_ERROR(Room(uint64_t{n} * sizeof(uoffset_t) + 8));
  fbb_.StartVector(n, sizeof(uoffset_t));
  for (size_t i = n; i > 0; --i) fbb_.PushElement(flatbuffers::Offset<void>(offsets[i - 1]));
  return fbb_.EndVector(n);
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

Result<uoffset_t> TableBuilder::BytesOf(const FieldInfo& f, const Source& src) {
  const uint64_t n = src.size();
  uint8_t* dst = nullptr;
  ETPACK_ASSIGN_OR_RETURN(const uoffset_t off, UninitializedVector(f, n, 1, &dst));
  if (n > 0) {
    if (const uint8_t* p = src.contiguous()) {
      std::memcpy(dst, p, static_cast<size_t>(n));
    } else {
      Status st = src.ReadAt(0, dst, static_cast<size_t>(n));
      if (!st.ok()) return st.WithContext(Where());
    }
  }
  return off;
}

Result<uoffset_t> TableBuilder::StartTable(int obj_index) {
  ETPACK_RETURN_IF_ERROR(
      Room(uint64_t{d_.objects[static_cast<size_t>(obj_index)].fields.size()} * 16 + 64));
  return fbb_.StartTable();
}

void TableBuilder::AddScalar(const FieldInfo& f, uint64_t bits) {
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
    case BaseType::Float: {
      // Compared with the default as a float: a NaN is never left out.
      float x = 0;
      const uint32_t u = static_cast<uint32_t>(bits);
      std::memcpy(&x, &u, sizeof x);
      fbb_.AddElement<float>(off, x, static_cast<float>(f.default_real));
      break;
    }
    case BaseType::Double: {
      double x = 0;
      std::memcpy(&x, &bits, sizeof x);
      fbb_.AddElement<double>(off, x, f.default_real);
      break;
    }
    default: fbb_.AddElement<uint64_t>(off, bits, def); break;
  }
}

Result<uoffset_t> TableBuilder::Vector(const FieldInfo& f, Node node) {
  ETPACK_ASSIGN_OR_RETURN(const TableInput::Vector v, in_->VectorOf(f, node));
  const BaseType et = f.element;
  if (flatbuffers::IsScalar(et) && et != BaseType::UType) {
    const size_t elem_size = flatbuffers::GetTypeSize(et);
    uint8_t* dst = nullptr;
    ETPACK_ASSIGN_OR_RETURN(const uoffset_t off, UninitializedVector(f, v.size, elem_size, &dst));
    // dst stays valid: an input writes the items without touching the builder.
    ETPACK_RETURN_IF_ERROR(in_->ScalarItems(f, v, dst));
    return off;
  }
  if ((et != BaseType::String && et != BaseType::Obj) || f.is_struct) {
    return Unimplemented(Where() + ": vectors of structs or unions are not supported");
  }
  const size_t base = items_.size();
  for (size_t i = 0; i < v.size; ++i) {
    Push p(*this, i);
    const Node item = in_->Item(f, v, i);
    uoffset_t o = 0;
    if (et == BaseType::String) {
      ETPACK_ASSIGN_OR_RETURN(const std::string_view s, in_->String(item));
      ETPACK_ASSIGN_OR_RETURN(o, StringOf(s));
    } else {
      ETPACK_ASSIGN_OR_RETURN(o, Table(f.index, item));
    }
    items_.push_back(o);
  }
  ETPACK_ASSIGN_OR_RETURN(const uoffset_t off, OffsetVector(items_.data() + base, v.size));
  items_.resize(base);
  return off;
}

Result<uoffset_t> TableBuilder::Child(const FieldInfo& f, Node node) {
  switch (f.type) {
    case BaseType::String: {
      ETPACK_ASSIGN_OR_RETURN(const std::string_view s, in_->String(node));
      return StringOf(s);
    }
    case BaseType::Vector: return Vector(f, node);
    case BaseType::Obj:
      if (!f.is_struct) return Table(f.index, node);
      break;
    default: break;
  }
  return Unimplemented(Where() + ": struct and array fields are not supported");
}

Status TableBuilder::UnionField(int obj_index, const FieldInfo& f, size_t id, Node table,
                                uoffset_t* o) {
  const ObjectInfo& obj = d_.objects[static_cast<size_t>(obj_index)];
  uint8_t code = 0;
  ETPACK_ASSIGN_OR_RETURN(const TableInput::Value v, in_->Union(obj_index, f, id, table, &code));
  // The type is a scalar of the table, written with the others.
  scalars_.push_back({&obj.fields[static_cast<size_t>(f.union_type_id)], code});
  Push p(*this, f.name);
  switch (v.kind) {
    case TableInput::Value::Kind::kAbsent:
      if (f.required) return Fail("missing required field of table " + std::string(obj.name));
      return Status::OK();
    case TableInput::Value::Kind::kBuilt: *o = v.built; return Status::OK();
    case TableInput::Value::Kind::kNode: break;
  }
  const EnumInfo& e = d_.enums[static_cast<size_t>(f.index)];
  const EnumValue* member = e.ByValue(code);
  if (member == nullptr || member->object < 0) {
    return Fail(std::to_string(code) + " is not a member code of union " + std::string(e.name));
  }
  ETPACK_ASSIGN_OR_RETURN(*o, Table(member->object, v.node));
  return Status::OK();
}

Result<uoffset_t> TableBuilder::Table(int obj_index, Node node) {
  const ObjectInfo& obj = d_.objects[static_cast<size_t>(obj_index)];
  ETPACK_RETURN_IF_ERROR(in_->Begin(obj_index, node));
  // Children first (a table's offsets must point at finished objects);
  // scalars are kept until the table starts.
  const size_t scalars = scalars_.size();
  const size_t pending = pending_.size();
  for (size_t id = 0; id < obj.fields.size(); ++id) {
    const FieldInfo& f = obj.fields[id];
    if (!f.present || f.type == BaseType::UType) continue;
    uoffset_t o = 0;
    if (f.type == BaseType::Union) {
      ETPACK_RETURN_IF_ERROR(UnionField(obj_index, f, id, node, &o));
      if (o != 0) pending_.emplace_back(f.offset, o);
      continue;
    }
    Push p(*this, f.name);
    if (flatbuffers::IsScalar(f.type)) {
      uint64_t bits = 0;
      ETPACK_ASSIGN_OR_RETURN(const bool present, in_->Scalar(obj_index, f, id, node, &bits));
      if (present) scalars_.push_back({&f, bits});
      continue;
    }
    ETPACK_ASSIGN_OR_RETURN(const TableInput::Value v, in_->Field(obj_index, f, id, node));
    switch (v.kind) {
      case TableInput::Value::Kind::kAbsent:
        if (f.required) return Fail("missing required field of table " + std::string(obj.name));
        continue;
      case TableInput::Value::Kind::kBuilt: o = v.built; break;
      case TableInput::Value::Kind::kNode: {
        ETPACK_ASSIGN_OR_RETURN(o, Child(f, v.node));
        break;
      }
    }
    pending_.emplace_back(f.offset, o);
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
  in_->End(obj_index);
  return fbb_.EndTable(start);
}

Result<std::vector<uint8_t>> TableBuilder::Build(TableInput& in, Node root) {
  in_ = &in;
  ETPACK_ASSIGN_OR_RETURN(const uoffset_t root_off, Table(d_.root, root));
  return Finish(root_off);
}

Result<std::vector<uint8_t>> TableBuilder::Finish(uoffset_t root_off) {
  const bool has_ident = d_.file_ident.size() == flatbuffers::kFileIdentifierLength;
  fbb_.Finish(flatbuffers::Offset<void>(root_off), has_ident ? d_.file_ident.c_str() : nullptr);
  const uint8_t* p = fbb_.GetBufferPointer();
  return std::vector<uint8_t>(p, p + fbb_.GetSize());
}

}  // namespace etpack::fbs
