// CopyFlatbuffer (flatbuffer/table_copy.h): a verified flatbuffer as the
// input of TableBuilder (flatbuffer/table_builder.h), each field as it is
// unless the CopyEdits decides it.

#include "flatbuffer/table_copy.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

#include "flatbuffer/table_builder_inl.h"

namespace etpack {
namespace fbs {
namespace {

using flatbuffers::Offset;

class CopyInput final : public TableInput {
 public:
  CopyInput(TableBuilder& b, CopyEdits* edits) : b_(b), edits_(edits) {
    const SchemaData& d = b.schema();
    edited_.assign(d.objects.size(), 0);
    for (size_t i = 0; edits != nullptr && i < d.objects.size(); ++i) {
      edited_[i] = edits->Edits(static_cast<int>(i));
    }
  }

  Status Begin(int obj_index, Node table) override {
    if (!edited_[static_cast<size_t>(obj_index)]) return Status::OK();
    return edits_->Begin(obj_index, Of(table));
  }

  Result<bool> Scalar(int obj_index, const FieldInfo& f, size_t, Node table,
                      uint64_t* bits) override {
    const flatbuffers::Table* t = Of(table);
    if (edited_[static_cast<size_t>(obj_index)] && edits_->Scalar(obj_index, f, t, bits)) {
      return true;
    }
    const uint8_t* p = t != nullptr ? t->GetAddressOf(f.offset) : nullptr;
    if (p == nullptr) return false;
    // The field's bits as stored (floats too: no conversion to change them).
    switch (flatbuffers::GetTypeSize(f.type)) {
      case 1: *bits = flatbuffers::ReadScalar<uint8_t>(p); break;
      case 2: *bits = flatbuffers::ReadScalar<uint16_t>(p); break;
      case 4: *bits = flatbuffers::ReadScalar<uint32_t>(p); break;
      default: *bits = flatbuffers::ReadScalar<uint64_t>(p); break;
    }
    return true;
  }

  Status Union(int obj_index, const FieldInfo& f, size_t id, Node table, uint8_t* code,
               Value* out) override {
    const flatbuffers::Table* t = Of(table);
    const FieldInfo& type_field = b_.schema()
                                      .objects[static_cast<size_t>(obj_index)]
                                      .fields[static_cast<size_t>(f.union_type_id)];
    *code = t != nullptr ? t->GetField<uint8_t>(type_field.offset, 0) : 0;
    // Edits may build at the field, and fail there; a copy alone cannot.
    std::optional<TableBuilder::Push> at;
    if (edited_[static_cast<size_t>(obj_index)]) at.emplace(b_, f.name);
    ETPACK_RETURN_IF_ERROR(Field(obj_index, f, id, table, out));
    // A member without a type is left out, as the type says.
    if (out->kind == Value::Kind::kNode && *code == 0) *out = Value::Absent();
    return Status::OK();
  }

  Status Field(int obj_index, const FieldInfo& f, size_t, Node table, Value* out) override {
    const flatbuffers::Table* t = Of(table);
    if (edited_[static_cast<size_t>(obj_index)]) {
      ETPACK_ASSIGN_OR_RETURN(const FieldEdit edit, edits_->Child(obj_index, f, t, b_));
      if (edit.kind != FieldEdit::Kind::kCopy) {
        *out = edit.kind == FieldEdit::Kind::kReplace ? Value::Built(edit.offset) : Value::Absent();
        return Status::OK();
      }
    }
    const uint8_t* p = t != nullptr ? t->GetAddressOf(f.offset) : nullptr;
    *out = p != nullptr ? Value::Of(p + flatbuffers::ReadScalar<uoffset_t>(p)) : Value::Absent();
    return Status::OK();
  }

  Result<std::string_view> String(Node node) override {
    return static_cast<const flatbuffers::String*>(node)->string_view();
  }

  Result<Vector> VectorOf(const FieldInfo&, Node node) override {
    return Vector{node, static_cast<const flatbuffers::Vector<uint8_t>*>(node)->size(), 0};
  }

  // Elements are little-endian in both buffers: the bytes move as they are.
  Status ScalarItems(const FieldInfo& f, const Vector& v, uint8_t* dst) override {
    if (v.size > 0) {
      std::memcpy(dst, static_cast<const flatbuffers::Vector<uint8_t>*>(v.items)->Data(),
                  v.size * flatbuffers::GetTypeSize(f.element));
    }
    return Status::OK();
  }

  Node Item(const FieldInfo&, const Vector& v, size_t i) override {
    // Strings and tables alike: an offset to the item.
    return static_cast<const flatbuffers::Vector<Offset<flatbuffers::Table>>*>(v.items)->Get(
        static_cast<flatbuffers::uoffset_t>(i));
  }

 private:
  static const flatbuffers::Table* Of(Node n) { return static_cast<const flatbuffers::Table*>(n); }

  TableBuilder& b_;
  CopyEdits* const edits_;
  std::vector<uint8_t> edited_;  // by object index: whether the edits edit its tables
};

}  // namespace

Result<std::vector<uint8_t>> CopyFlatbuffer(SchemaId schema, const uint8_t* verified, uint64_t size,
                                            CopyEdits* edits, const BuildOptions& options) {
  return BuildGuarded(Decoded(schema),
                      static_cast<size_t>(std::min<uint64_t>(size + 1024, kMaxFlatbufferSize)),
                      options, [&](TableBuilder& b) -> Result<std::vector<uint8_t>> {
                        CopyInput in(b, edits);
                        return b.Build(in, flatbuffers::GetRoot<flatbuffers::Table>(verified));
                      });
}

}  // namespace fbs
}  // namespace etpack
