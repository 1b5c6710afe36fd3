// TableBuilder::Copy (flatbuffer/table_copy.h): a verified flatbuffer
// copied table by table, in the order every input is built in, with the
// fields a CopyEdits decides built by it.

#include "flatbuffer/table_copy.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "flatbuffer/table_builder.h"

namespace etpack {
namespace fbs {

void TableBuilder::CopyScalar(const FieldInfo& f, const flatbuffers::Table& t) {
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

Result<uoffset_t> TableBuilder::CopyVector(const FieldInfo& f, const flatbuffers::Table& t) {
  const BaseType et = f.element;
  if (flatbuffers::IsScalar(et) && et != BaseType::UType) {
    // Elements are little-endian in both buffers: the bytes move as they are.
    const auto* v = t.GetPointer<const flatbuffers::Vector<uint8_t>*>(f.offset);
    const size_t elem_size = flatbuffers::GetTypeSize(et);
    const uint64_t n = v->size();
    uint8_t* dst = nullptr;
    ETPACK_ASSIGN_OR_RETURN(const uoffset_t off, UninitializedVector(f, n, elem_size, &dst));
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
      ETPACK_ASSIGN_OR_RETURN(uoffset_t o, StringOf(s->string_view()));
      offsets.push_back(o);
    }
  } else {
    const auto* v =
        t.GetPointer<const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::Table>>*>(f.offset);
    offsets.reserve(v->size());
    for (uoffset_t i = 0; i < v->size(); ++i) {
      Push p(*this, i);
      ETPACK_ASSIGN_OR_RETURN(uoffset_t o, CopyTable(f.index, v->Get(i)));
      offsets.push_back(o);
    }
  }
  return OffsetVector(offsets);
}

Result<uoffset_t> TableBuilder::CopyTable(int obj_index, const flatbuffers::Table* t) {
  const ObjectInfo& obj = d_.objects[static_cast<size_t>(obj_index)];
  CopyEdits* const edits = edited_[static_cast<size_t>(obj_index)] ? edits_ : nullptr;
  if (edits != nullptr) ETPACK_RETURN_IF_ERROR(edits->Begin(obj_index, t));
  const size_t pending = pending_.size();
  for (size_t id = 0; id < obj.fields.size(); ++id) {
    const FieldInfo& f = obj.fields[id];
    if (!f.present || flatbuffers::IsScalar(f.type)) continue;
    Push p(*this, f.name);
    if (edits != nullptr) {
      ETPACK_ASSIGN_OR_RETURN(const FieldEdit edit, edits->Child(obj_index, f, t, *this));
      if (edit.kind == FieldEdit::Kind::kDrop) continue;
      if (edit.kind == FieldEdit::Kind::kReplace) {
        pending_.emplace_back(f.offset, edit.offset);
        continue;
      }
    }
    if (t == nullptr || !t->CheckField(f.offset)) continue;
    uoffset_t o = 0;
    switch (f.type) {
      case BaseType::String: {
        ETPACK_ASSIGN_OR_RETURN(
            o, StringOf(t->GetPointer<const flatbuffers::String*>(f.offset)->string_view()));
        break;
      }
      case BaseType::Vector: {
        ETPACK_ASSIGN_OR_RETURN(o, CopyVector(f, *t));
        break;
      }
      case BaseType::Union: {
        const uint8_t code =
            t->GetField<uint8_t>(obj.fields[static_cast<size_t>(f.union_type_id)].offset, 0);
        if (code == 0) continue;
        const EnumValue* member = d_.enums[static_cast<size_t>(f.index)].ByValue(code);
        if (member == nullptr || member->object < 0) {
          return Fail(std::to_string(code) + " is not a member code of union " +
                      std::string(d_.enums[static_cast<size_t>(f.index)].name));
        }
        ETPACK_ASSIGN_OR_RETURN(
            o, CopyTable(member->object, t->GetPointer<const flatbuffers::Table*>(f.offset)));
        break;
      }
      case BaseType::Obj:
        if (!f.is_struct) {
          ETPACK_ASSIGN_OR_RETURN(
              o, CopyTable(f.index, t->GetPointer<const flatbuffers::Table*>(f.offset)));
          break;
        }
        [[fallthrough]];
      default: return Unimplemented(PathOf(Path()) + ": struct and array fields are not supported");
    }
    pending_.emplace_back(f.offset, o);
  }
  ETPACK_ASSIGN_OR_RETURN(const uoffset_t start, StartTable(obj_index));
  for (const FieldInfo& f : obj.fields) {
    if (!f.present || !flatbuffers::IsScalar(f.type)) continue;
    uint64_t bits = 0;
    if (edits != nullptr && edits->Scalar(obj_index, f, t, &bits)) {
      AddIntElement(f, bits);
    } else if (t != nullptr && t->CheckField(f.offset)) {
      CopyScalar(f, *t);
    }
  }
  for (size_t i = pending; i < pending_.size(); ++i) {
    fbb_.AddOffset(pending_[i].first, flatbuffers::Offset<void>(pending_[i].second));
  }
  pending_.resize(pending);
  return fbb_.EndTable(start);
}

Result<std::vector<uint8_t>> TableBuilder::Copy(const uint8_t* verified, CopyEdits* edits) {
  edits_ = edits;
  edited_.assign(d_.objects.size(), false);
  for (size_t i = 0; edits != nullptr && i < d_.objects.size(); ++i) {
    edited_[i] = edits->Edits(static_cast<int>(i));
  }
  ETPACK_ASSIGN_OR_RETURN(uoffset_t root_off,
                          CopyTable(d_.root, flatbuffers::GetRoot<flatbuffers::Table>(verified)));
  return Finish(root_off);
}

Result<std::vector<uint8_t>> CopyFlatbuffer(SchemaId schema, const uint8_t* verified, uint64_t size,
                                            CopyEdits* edits, const CopyOptions& options) {
  try {
    TableBuilder builder(Decoded(schema),
                         static_cast<size_t>(std::min<uint64_t>(size + 1024, kMaxFlatbufferSize)));
    ETPACK_RETURN_IF_ERROR(builder.ConfigureLayout(options.root_path, options.vector_alignment));
    return builder.Copy(verified, edits);
  } catch (const std::bad_alloc&) {
    return OutOfRange("out of memory while building the flatbuffer");
  }
}

}  // namespace fbs
}  // namespace etpack
