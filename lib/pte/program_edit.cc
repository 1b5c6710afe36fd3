// EditProgram (pte/program_edit.h): the edits, keyed by tensor and delegate
// position, become a CopyEdits that the copy consults as it meets the
// tables. The copy meets Tensor tables in ForEachTensor's order (plans,
// then values: a Tensor is only ever an EValue's member) and
// BackendDelegate tables in plan order, so each edit is found by the
// table's ordinal in that order, not by address (a table that two values
// share in the source is two tables in the copy, each with its own edit).

#include "pte/program_edit.h"

#include <string>
#include <utility>
#include <vector>

#include "flatbuffer/table_copy.h"
#include "pte/program_structure.h"
#include "pte/program_walk.h"

namespace etpack {

namespace fb = etpack::pte_fb;

Result<fbs::uoffset_t> DataReferenceTable(fbs::TableBuilder& b, fb::DataLocation location,
                                          uint32_t index) {
  static const int kReference = fbs::FindObject(b.schema(), "BackendDelegateDataReference");
  ETPACK_ASSIGN_OR_RETURN(const fbs::uoffset_t start, b.StartTable(kReference));
  b.fbb().AddElement<int8_t>(fb::BackendDelegateDataReference::VT_LOCATION,
                             static_cast<int8_t>(location), 0);
  b.fbb().AddElement<uint32_t>(fb::BackendDelegateDataReference::VT_INDEX, index, 0);
  return b.fbb().EndTable(start);
}

namespace {

std::string DelegatePath(uint32_t p, uint32_t d) {
  return "execution_plan[" + std::to_string(p) + "].delegates[" + std::to_string(d) + "]";
}

class ProgramCopyEdits : public fbs::CopyEdits {
 public:
  explicit ProgramCopyEdits(const ProgramEdits& edits)
      : edits_(edits),
        tensor_(fbs::FindObject(d(), "Tensor")),
        info_(fbs::FindObject(d(), "ExtraTensorInfo")),
        delegate_(fbs::FindObject(d(), "BackendDelegate")),
        buffer_(fbs::FindObject(d(), "Buffer")),
        inline_(fbs::FindObject(d(), "BackendDelegateInlineData")) {}

  static const fbs::SchemaData& d() { return fbs::Decoded(SchemaId::kProgram); }

  // Each edit by the ordinal of the table it edits; errors for an edit of
  // no tensor or delegate, or of one twice.
  Status Index(const fb::Program& program) {
    std::vector<std::vector<uint32_t>> tensor_of;  // [plan][value] -> ordinal + 1, 0: no tensor
    std::vector<std::vector<uint32_t>> delegate_of;
    const auto* plans = program.execution_plan();
    const uint32_t nplans = plans != nullptr ? plans->size() : 0;
    tensor_of.resize(nplans);
    delegate_of.resize(nplans);
    uint32_t tensors = 0, delegates = 0;
    for (uint32_t p = 0; p < nplans; ++p) {
      const fb::ExecutionPlan& plan = *plans->Get(p);
      if (!edits_.tensors.empty() && plan.values() != nullptr) {
        tensor_of[p].resize(plan.values()->size());
        for (uint32_t v = 0; v < plan.values()->size(); ++v) {
          if (plan.values()->Get(v)->val_as_Tensor() != nullptr) tensor_of[p][v] = ++tensors;
        }
      }
      if (plan.delegates() != nullptr) {
        delegate_of[p].resize(plan.delegates()->size());
        for (uint32_t i = 0; i < plan.delegates()->size(); ++i) delegate_of[p][i] = ++delegates;
      }
    }
    tensor_edit_.assign(tensors, nullptr);
    for (const TensorEdit& e : edits_.tensors) {
      const uint32_t k =
          e.plan < nplans && e.value < tensor_of[e.plan].size() ? tensor_of[e.plan][e.value] : 0;
      if (k == 0) return InvalidArgument(TensorPath(e.plan, e.value) + ": not a Tensor value");
      if (tensor_edit_[k - 1] != nullptr) {
        return InvalidArgument(TensorPath(e.plan, e.value) + ": edited twice");
      }
      tensor_edit_[k - 1] = &e;
    }
    delegate_edit_.assign(delegates, nullptr);
    for (const DelegateEdit& e : edits_.delegates) {
      const uint32_t k = e.plan < nplans && e.delegate < delegate_of[e.plan].size()
                             ? delegate_of[e.plan][e.delegate]
                             : 0;
      if (k == 0) return InvalidArgument(DelegatePath(e.plan, e.delegate) + ": no such delegate");
      if (delegate_edit_[k - 1] != nullptr) {
        return InvalidArgument(DelegatePath(e.plan, e.delegate) + ": edited twice");
      }
      delegate_edit_[k - 1] = &e;
    }
    return Status::OK();
  }

  bool Edits(int obj) const override {
    if (obj == tensor_ || obj == info_) return !edits_.tensors.empty();
    if (obj == delegate_) return !edits_.delegates.empty();
    if (obj == buffer_ || obj == inline_) return edits_.drop_inline_bytes;
    return false;
  }

  Status Begin(int obj, const flatbuffers::Table*) override {
    // Bounds checked all the same: the walk in Index() counted these tables.
    if (obj == tensor_) {
      tensor_now_ = tensors_ < tensor_edit_.size() ? tensor_edit_[tensors_] : nullptr;
      ++tensors_;
    }
    if (obj == delegate_) {
      delegate_now_ = delegates_ < delegate_edit_.size() ? delegate_edit_[delegates_] : nullptr;
      ++delegates_;
    }
    return Status::OK();
  }

  Result<fbs::FieldEdit> Child(int obj, const fbs::FieldInfo& f, const flatbuffers::Table* src,
                               fbs::TableBuilder& b) override {
    using fbs::FieldEdit;
    if (obj == buffer_ || obj == inline_) return FieldEdit::Drop();  // their one field: the bytes
    if (obj == delegate_) {
      if (delegate_now_ == nullptr || f.offset != fb::BackendDelegate::VT_PROCESSED) {
        return FieldEdit::Copy();
      }
      ETPACK_ASSIGN_OR_RETURN(const fbs::uoffset_t o,
                              DataReferenceTable(b, delegate_now_->location, delegate_now_->index));
      return FieldEdit::Replace(o);
    }
    if (tensor_now_ == nullptr) return FieldEdit::Copy();
    if (obj == tensor_) {
      if (f.offset != fb::Tensor::VT_EXTRA_TENSOR_INFO) return FieldEdit::Copy();
      switch (tensor_now_->info) {
        case TensorEdit::Info::kKeep: return FieldEdit::Copy();
        case TensorEdit::Info::kDrop: return FieldEdit::Drop();
        case TensorEdit::Info::kSet: break;
      }
      // An ExtraTensorInfo copied (below) or, missing, made from nothing.
      if (src != nullptr && src->CheckField(f.offset)) return FieldEdit::Copy();
      ETPACK_ASSIGN_OR_RETURN(const fbs::uoffset_t o, b.Table(info_, nullptr));
      return FieldEdit::Replace(o);
    }
    // obj == info_: only under a tensor whose edit sets it.
    if (tensor_now_->info != TensorEdit::Info::kSet ||
        f.offset != fb::ExtraTensorInfo::VT_FULLY_QUALIFIED_NAME) {
      return FieldEdit::Copy();
    }
    // No name is an absent one, as every reader takes an empty one.
    if (tensor_now_->fully_qualified_name.empty()) return FieldEdit::Drop();
    ETPACK_ASSIGN_OR_RETURN(const fbs::uoffset_t o, b.StringOf(tensor_now_->fully_qualified_name));
    return FieldEdit::Replace(o);
  }

  bool Scalar(int obj, const fbs::FieldInfo& f, const flatbuffers::Table*,
              uint64_t* bits) override {
    if (tensor_now_ == nullptr) return false;
    if (obj == tensor_ && f.offset == fb::Tensor::VT_DATA_BUFFER_IDX &&
        tensor_now_->data_buffer_idx) {
      *bits = *tensor_now_->data_buffer_idx;
      return true;
    }
    if (obj == info_ && f.offset == fb::ExtraTensorInfo::VT_LOCATION &&
        tensor_now_->info == TensorEdit::Info::kSet) {
      *bits = static_cast<uint8_t>(tensor_now_->location);
      return true;
    }
    return false;
  }

 private:
  const ProgramEdits& edits_;
  const int tensor_, info_, delegate_, buffer_, inline_;
  std::vector<const TensorEdit*> tensor_edit_;  // by ordinal; nullptr: none
  std::vector<const DelegateEdit*> delegate_edit_;
  size_t tensors_ = 0, delegates_ = 0;  // tables met so far
  const TensorEdit* tensor_now_ = nullptr;
  const DelegateEdit* delegate_now_ = nullptr;
};

}  // namespace

Result<ProgramStructure> EditProgram(const uint8_t* verified, uint64_t size,
                                     const ProgramEdits& edits, const std::string& root_path) {
  ProgramCopyEdits e(edits);
  ETPACK_RETURN_IF_ERROR(e.Index(*fb::GetProgram(verified)));
  BuildOptions options;
  options.root_path = root_path;
  ETPACK_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes,
                          fbs::CopyFlatbuffer(SchemaId::kProgram, verified, size, &e, options));
  return VerifiedPrograms::Of(OwnedSource(std::move(bytes)));
}

}  // namespace etpack
