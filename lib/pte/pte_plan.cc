// Pass one for .pte: turns an exporter's program structure plus data sources
// into an ArtifactPlan. The program arrives as a verified flatbuffer (a tree
// is built into one first); the planner reads it, decides the few fields
// that change (constant_buffer emptied, delegates re-pointed, segment tables
// filled) as a ProgramLayout and copies it once with those built in their
// place (flatbuffer/table_copy.h). Bulk bytes never enter it.

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "etpack/pte.h"
#include "etpack/writer.h"
#include "flatbuffer/table_builder.h"
#include "flatbuffer/table_copy.h"
#include "integrity/table.h"
#include "plan/assembler.h"
#include "plan/content_dedup.h"
#include "plan/named_store.h"
#include "plan/segments.h"
#include "program_etpack_generated.h"
#include "pte/program_checks.h"
#include "pte/pte_format.h"
#include "pte/pte_header.h"
#include "writer/input_files.h"
#include "writer/plan_behind.h"

namespace etpack {

const char* SegmentRoleName(SegmentRole role) {
  switch (role) {
    case SegmentRole::kConstants: return "constants";
    case SegmentRole::kMutable: return "mutable";
    case SegmentRole::kDelegate: return "delegate";
    case SegmentRole::kNamedData: return "named_data";
    case SegmentRole::kUnreferenced: return "unreferenced";
  }
  return "unknown";
}

namespace {

// Checks that the [ubyte] field `field` of every entry of the Program's
// vector `array` is empty: the bytes travel beside the program, in
// PteInput::`list`. `bytes_of(entry)` is the field. Paths are spelled only
// on failure: a program can have 10^5 entries.
template <typename Entries, typename BytesOf>
Status CheckNoBytes(const Entries* entries, const char* array, const char* field, const char* list,
                    BytesOf bytes_of) {
  if (entries == nullptr) return Status::OK();
  for (flatbuffers::uoffset_t i = 0; i < entries->size(); ++i) {
    const flatbuffers::Vector<uint8_t>* bytes = bytes_of(*entries->Get(i));
    if (bytes == nullptr || bytes->size() == 0) continue;
    const std::string n = std::to_string(bytes->size());
    return InvalidArgument(std::string("program.") + array + "[" + std::to_string(i) + "]." +
                           field + " holds " + n + (bytes->size() == 1 ? " byte" : " bytes") +
                           ": the bytes go in PteInput::" + list + "[" + std::to_string(i) +
                           "], beside the program; leave the field empty");
  }
  return Status::OK();
}

namespace fb = etpack::pte_fb;

// Sub-buffer offsets inside one segment (a SubsegmentOffsets table).
struct SubBuffers {
  uint64_t segment_index = 0;
  std::vector<uint64_t> offsets;
};

struct NamedDataEntry {
  std::string key;
  uint64_t segment_index = 0;
};

struct DataReference {
  int location = 0;  // pte::kLocation*
  uint64_t index = 0;
};

// What the planner decides of the Program; every other field is copied as
// the exporter gave it.
struct ProgramLayout {
  // constant_buffer becomes [] (the constants are in this segment);
  // absent: there are no constants, constant_segment is kept as given.
  std::optional<SubBuffers> constant_segment;
  // mutable_data_segments: [this], or absent.
  std::optional<SubBuffers> mutable_data;
  // backend_delegate_data: one entry holding each source's bytes (an empty
  // source: data []); absent: kept as given.
  std::optional<std::vector<SourcePtr>> inline_data;
  // The processed reference of the k-th BackendDelegate in plan order, for
  // k < size (extraction re-points them all; without it, none).
  std::vector<DataReference> processed;
  // named_data: these entries, or absent.
  std::optional<std::vector<NamedDataEntry>> named_data;
  // segments: {offset, size} each.
  std::vector<std::pair<uint64_t, uint64_t>> segments;
};

// The copy's edits that put a ProgramLayout in place. Each table is built
// as the tree builder builds one: children in field order, then scalars,
// then offsets, each in field order; so the bytes do not depend on the
// route the program came by.
class LayoutEdits : public fbs::CopyEdits {
 public:
  LayoutEdits(const fbs::SchemaData& d, const ProgramLayout& layout)
      : layout_(layout),
        program_(d.root),
        delegate_(fbs::FindObject(d, "BackendDelegate")),
        reference_(fbs::FindObject(d, "BackendDelegateDataReference")),
        inline_(fbs::FindObject(d, "BackendDelegateInlineData")),
        segment_(fbs::FindObject(d, "DataSegment")),
        sub_(fbs::FindObject(d, "SubsegmentOffsets")),
        named_(fbs::FindObject(d, "NamedData")),
        inline_bytes_(*fbs::FindField(d, "BackendDelegateInlineData.data")),
        offsets_(*fbs::FindField(d, "SubsegmentOffsets.offsets")) {}

  bool Edits(int obj) const override {
    return obj == program_ || (obj == delegate_ && !layout_.processed.empty());
  }

  Result<fbs::FieldEdit> Child(int obj, const fbs::FieldInfo& f, const flatbuffers::Table* src,
                               fbs::TableBuilder& b) override {
    using fbs::FieldEdit;
    if (obj == delegate_) {
      if (f.offset != fb::BackendDelegate::VT_PROCESSED) return FieldEdit::Copy();
      if (processed_ >= layout_.processed.size()) return FieldEdit::Copy();
      const DataReference& r = layout_.processed[processed_++];
      ETPACK_ASSIGN_OR_RETURN(const fbs::uoffset_t start, b.StartTable(reference_));
      b.fbb().AddElement<int8_t>(fb::BackendDelegateDataReference::VT_LOCATION,
                                 static_cast<int8_t>(r.location), 0);
      b.fbb().AddElement<uint32_t>(fb::BackendDelegateDataReference::VT_INDEX,
                                   static_cast<uint32_t>(r.index), 0);
      return FieldEdit::Replace(b.fbb().EndTable(start));
    }
    switch (f.offset) {
      case fb::Program::VT_CONSTANT_BUFFER: {
        ETPACK_ASSIGN_OR_RETURN(const fbs::uoffset_t o, b.OffsetVector({}));
        return FieldEdit::Replace(o);
      }
      case fb::Program::VT_BACKEND_DELEGATE_DATA: {
        if (!layout_.inline_data) return FieldEdit::Copy();
        std::vector<fbs::uoffset_t> entries;
        entries.reserve(layout_.inline_data->size());
        for (size_t i = 0; i < layout_.inline_data->size(); ++i) {
          fbs::TableBuilder::Push at(b, i);
          fbs::uoffset_t data = 0;
          {
            fbs::TableBuilder::Push name(b, inline_bytes_.name);
            ETPACK_ASSIGN_OR_RETURN(data, b.BytesOf(inline_bytes_, *(*layout_.inline_data)[i]));
          }
          ETPACK_ASSIGN_OR_RETURN(const fbs::uoffset_t start, b.StartTable(inline_));
          b.fbb().AddOffset(fb::BackendDelegateInlineData::VT_DATA,
                            flatbuffers::Offset<void>(data));
          entries.push_back(b.fbb().EndTable(start));
        }
        ETPACK_ASSIGN_OR_RETURN(const fbs::uoffset_t o, b.OffsetVector(entries));
        return FieldEdit::Replace(o);
      }
      case fb::Program::VT_SEGMENTS: {
        std::vector<fbs::uoffset_t> entries;
        entries.reserve(layout_.segments.size());
        for (const auto& [offset, size] : layout_.segments) {
          ETPACK_ASSIGN_OR_RETURN(const fbs::uoffset_t start, b.StartTable(segment_));
          b.fbb().AddElement<uint64_t>(fb::DataSegment::VT_OFFSET, offset, 0);
          b.fbb().AddElement<uint64_t>(fb::DataSegment::VT_SIZE, size, 0);
          entries.push_back(b.fbb().EndTable(start));
        }
        ETPACK_ASSIGN_OR_RETURN(const fbs::uoffset_t o, b.OffsetVector(entries));
        return FieldEdit::Replace(o);
      }
      case fb::Program::VT_CONSTANT_SEGMENT: {
        if (!layout_.constant_segment) return FieldEdit::Copy();
        ETPACK_ASSIGN_OR_RETURN(const fbs::uoffset_t o, Sub(b, *layout_.constant_segment));
        return FieldEdit::Replace(o);
      }
      case fb::Program::VT_MUTABLE_DATA_SEGMENTS: {
        if (!layout_.mutable_data) return KeptIfEmpty(src, f);
        ETPACK_ASSIGN_OR_RETURN(const fbs::uoffset_t sub, Sub(b, *layout_.mutable_data));
        ETPACK_ASSIGN_OR_RETURN(const fbs::uoffset_t o, b.OffsetVector({sub}));
        return FieldEdit::Replace(o);
      }
      case fb::Program::VT_NAMED_DATA: {
        if (!layout_.named_data) return KeptIfEmpty(src, f);
        std::vector<fbs::uoffset_t> entries;
        entries.reserve(layout_.named_data->size());
        for (const NamedDataEntry& e : *layout_.named_data) {
          ETPACK_ASSIGN_OR_RETURN(const fbs::uoffset_t key, b.StringOf(e.key));
          ETPACK_ASSIGN_OR_RETURN(const fbs::uoffset_t start, b.StartTable(named_));
          b.fbb().AddElement<uint32_t>(fb::NamedData::VT_SEGMENT_INDEX,
                                       static_cast<uint32_t>(e.segment_index), 0);
          b.fbb().AddOffset(fb::NamedData::VT_KEY, flatbuffers::Offset<void>(key));
          entries.push_back(b.fbb().EndTable(start));
        }
        ETPACK_ASSIGN_OR_RETURN(const fbs::uoffset_t o, b.OffsetVector(entries));
        return FieldEdit::Replace(o);
      }
      default: return FieldEdit::Copy();
    }
  }

 private:
  // A list the planner did not fill: [] stays [] (the reference writes the
  // empty list its object holds; a reader tells [] from absent), absent
  // stays absent, and entries the planner did not make are dropped.
  static fbs::FieldEdit KeptIfEmpty(const flatbuffers::Table* src, const fbs::FieldInfo& f) {
    const auto* v =
        src != nullptr ? src->GetPointer<const flatbuffers::VectorOfAny*>(f.offset) : nullptr;
    return v != nullptr && v->size() == 0 ? fbs::FieldEdit::Copy() : fbs::FieldEdit::Drop();
  }

  Result<fbs::uoffset_t> Sub(fbs::TableBuilder& b, const SubBuffers& sub) {
    uint8_t* dst = nullptr;
    ETPACK_ASSIGN_OR_RETURN(const fbs::uoffset_t offsets,
                            b.UninitializedVector(offsets_, sub.offsets.size(), 8, &dst));
    for (size_t i = 0; i < sub.offsets.size(); ++i) {
      flatbuffers::WriteScalar<uint64_t>(dst + 8 * i, sub.offsets[i]);
    }
    ETPACK_ASSIGN_OR_RETURN(const fbs::uoffset_t start, b.StartTable(sub_));
    b.fbb().AddElement<uint32_t>(fb::SubsegmentOffsets::VT_SEGMENT_INDEX,
                                 static_cast<uint32_t>(sub.segment_index), 0);
    b.fbb().AddOffset(fb::SubsegmentOffsets::VT_OFFSETS, flatbuffers::Offset<void>(offsets));
    return b.fbb().EndTable(start);
  }

  const ProgramLayout& layout_;
  const int program_, delegate_, reference_, inline_, segment_, sub_, named_;
  const fbs::FieldInfo& inline_bytes_;
  const fbs::FieldInfo& offsets_;
  size_t processed_ = 0;  // processed references used so far
};

std::vector<uint64_t> PieceOffsets(const Segment& seg) {
  std::vector<uint64_t> out;
  out.reserve(seg.pieces.size());
  for (const Piece& p : seg.pieces) out.push_back(p.offset);
  return out;
}

// `sources` packed as PackSegment does, except that a source whose bytes
// an earlier one holds is not stored again: its offset is that one's.
// Empty sources stay where PackSegment puts them (they take no room).
// Returns the segment and every source's offset in it.
Result<std::pair<Segment, std::vector<uint64_t>>> PackDistinct(std::vector<SourcePtr> sources,
                                                               uint64_t alignment) {
  ContentDedup dedup;
  std::vector<size_t> stored_as(sources.size());  // index into `kept`
  std::vector<size_t> kept_of_content;            // ContentDedup id -> index into `kept`
  std::vector<SourcePtr> kept;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (sources[i]->size() > 0) {
      ETPACK_ASSIGN_OR_RETURN(const size_t content, dedup.Add(sources[i]));
      if (content < kept_of_content.size()) {
        stored_as[i] = kept_of_content[content];
        continue;
      }
      kept_of_content.push_back(kept.size());
    }
    stored_as[i] = kept.size();
    kept.push_back(std::move(sources[i]));
  }
  ETPACK_ASSIGN_OR_RETURN(Segment seg, PackSegment(std::move(kept), alignment));
  std::vector<uint64_t> offsets(stored_as.size());
  for (size_t i = 0; i < stored_as.size(); ++i) offsets[i] = seg.pieces[stored_as[i]].offset;
  return std::pair{std::move(seg), std::move(offsets)};
}

class PtePlanner {
 public:
  PtePlanner(PteInput input, const PteOptions& options)
      : input_(std::move(input)), options_(options) {}

  Result<PtePlan> Plan() {
    ETPACK_RETURN_IF_ERROR(CheckAlignment(options_.segment_alignment, "segment_alignment"));
    // These two become a flatbuffer force_align, which only powers of two can be.
    ETPACK_RETURN_IF_ERROR(CheckPowerOfTwo(options_.constant_tensor_alignment,
                                           "constant_tensor_alignment", kMaxInlineAlignment));
    ETPACK_RETURN_IF_ERROR(
        CheckPowerOfTwo(options_.delegate_alignment, "delegate_alignment", kMaxInlineAlignment));
    // Before planning moves any of them away.
    inputs_.Add(input_.constants);
    inputs_.Add(input_.mutable_data);
    inputs_.Add(input_.delegates);
    for (const NamedData& n : input_.named_data) inputs_.Add(n.source);
    inputs_.Add(input_.read);
    ETPACK_ASSIGN_OR_RETURN(program_bytes_, std::move(input_.program).TakeFlatbuffer());
    program_ = pte_fb::GetProgram(program_bytes_->contiguous());

    ETPACK_RETURN_IF_ERROR(PlanConstants());
    ETPACK_RETURN_IF_ERROR(PlanMutable());
    ETPACK_RETURN_IF_ERROR(PlanDelegates());
    ETPACK_RETURN_IF_ERROR(PlanNamedData());
    return Finish();
  }

 private:
  Status PlanConstants() {
    ETPACK_RETURN_IF_ERROR(CheckNoBytes(program_->constant_buffer(), "constant_buffer", "storage",
                                        "constants",
                                        [](const pte_fb::Buffer& b) { return b.storage(); }));
    std::vector<SourcePtr> sources = std::move(input_.constants);
    for (size_t i = 0; i < sources.size(); ++i) {
      if (sources[i] == nullptr) {
        return InvalidArgument("constants[" + std::to_string(i) + "]: null source");
      }
    }
    // No constant_buffer entry at all, not even index 0's placeholder: the
    // reference writes no constant segment and keeps the program's
    // constant_segment as given.
    if (sources.empty()) return Status::OK();

    Segment seg;
    std::vector<uint64_t> offsets;
    if (options_.dedup_constants) {
      ETPACK_ASSIGN_OR_RETURN(std::tie(seg, offsets),
                              PackDistinct(std::move(sources), options_.constant_tensor_alignment));
    } else {
      ETPACK_ASSIGN_OR_RETURN(seg,
                              PackSegment(std::move(sources), options_.constant_tensor_alignment));
      offsets = PieceOffsets(seg);
    }
    layout_.constant_segment = SubBuffers{segments_.size(), std::move(offsets)};
    AddSegment(SegmentRole::kConstants, std::move(seg));
    return Status::OK();
  }

  Status PlanMutable() {
    for (const auto& s : input_.mutable_data) {
      if (s == nullptr) return InvalidArgument("mutable_data: null source");
    }
    ETPACK_ASSIGN_OR_RETURN(Segment seg, PackSegment(input_.mutable_data, 1));
    if (seg.size == 0) return Status::OK();  // the reference writes no segment then
    layout_.mutable_data = SubBuffers{segments_.size(), PieceOffsets(seg)};
    AddSegment(SegmentRole::kMutable, std::move(seg));
    return Status::OK();
  }

  Status PlanDelegates() {
    const auto* inline_data = program_->backend_delegate_data();
    ETPACK_RETURN_IF_ERROR(
        CheckNoBytes(inline_data, "backend_delegate_data", "data", "delegates",
                     [](const pte_fb::BackendDelegateInlineData& d) { return d.data(); }));
    const std::vector<SourcePtr>& payloads = input_.delegates;
    for (size_t i = 0; i < payloads.size(); ++i) {
      if (payloads[i] == nullptr) {
        return InvalidArgument("delegates[" + std::to_string(i) + "]: null source");
      }
    }

    const auto* plans = program_->execution_plan();
    if (plans == nullptr) {
      return InvalidArgument("program.execution_plan: expected an array of ExecutionPlan");
    }
    // Payloads kept inline when extracting (the empty ones), one entry per
    // delegate as the reference writer does.
    std::vector<SourcePtr> kept;
    std::vector<bool> referenced(payloads.size(), false);
    for (flatbuffers::uoffset_t p = 0; p < plans->size(); ++p) {
      const auto* delegates = plans->Get(p)->delegates();
      if (delegates == nullptr) continue;
      for (flatbuffers::uoffset_t d = 0; d < delegates->size(); ++d) {
        const pte_fb::BackendDelegateDataReference* ref = delegates->Get(d)->processed();
        auto path = [&] {
          return "program.execution_plan[" + std::to_string(p) + "].delegates[" +
                 std::to_string(d) + "].processed";
        };
        if (ref == nullptr) {
          return InvalidArgument(path() + ": missing; every delegate needs a data reference");
        }
        ETPACK_ASSIGN_OR_RETURN(uint64_t index, InlineIndex(*ref, path, payloads.size()));
        referenced[index] = true;
        // Without extraction the table and every reference stay as given.
        if (!options_.extract_delegate_segments) continue;
        const SourcePtr& payload = payloads[index];
        if (payload->size() == 0) {
          layout_.processed.push_back({pte::kLocationInline, kept.size()});
          kept.push_back(payload);
          continue;
        }
        ETPACK_ASSIGN_OR_RETURN(size_t seg, DelegateSegment(payload));
        layout_.processed.push_back({pte::kLocationSegment, seg});
      }
    }
    if (!options_.extract_delegate_segments) {
      // References stay as given; the table is rebuilt to hold the payloads,
      // read inline by the copy.
      if (inline_data != nullptr || !payloads.empty()) layout_.inline_data = payloads;
      return Status::OK();
    }
    for (size_t i = 0; i < referenced.size(); ++i) {
      // Extraction rebuilds the table from the references; an entry nothing
      // refers to would be lost silently (the reference writer refuses too).
      if (!referenced[i]) {
        return InvalidArgument("delegates[" + std::to_string(i) +
                               "] is not referenced by any delegate");
      }
    }
    layout_.inline_data = std::move(kept);
    return Status::OK();
  }

  // Validates an input reference (INLINE, index in range) and returns the index.
  template <typename PathFn>
  static Result<uint64_t> InlineIndex(const pte_fb::BackendDelegateDataReference& ref, PathFn path,
                                      size_t count) {
    const int location = static_cast<int>(ref.location());
    if (location != pte::kLocationInline) {
      return InvalidArgument(path() + ".location = " + std::to_string(location) +
                             ": delegates must be given INLINE (payload in "
                             "PteInput::delegates); the planner assigns segments");
    }
    const uint64_t index = ref.index();
    if (index >= count) {
      return InvalidArgument(path() + ".index = " + std::to_string(index) +
                             " is out of range: there are " + std::to_string(count) +
                             " delegate payloads (PteInput::delegates)");
    }
    return index;
  }

  // The segment for a delegate payload: an existing one with identical
  // bytes (ContentDedup reads only payloads of equal size), else a new one.
  // A planned artifact (ArtifactSource: a nested program, an NFAT container) is
  // nested, not read: its head and placements become the segment's pieces,
  // so its file ranges reach the output as file ranges.
  Result<size_t> DelegateSegment(const SourcePtr& payload) {
    ETPACK_ASSIGN_OR_RETURN(const size_t content, delegate_contents_.Add(payload));
    if (content < delegate_segment_.size()) return delegate_segment_[content];
    const size_t seg = segments_.size();
    if (const ArtifactPlan* nested = PlanBehind(*payload)) {
      ETPACK_ASSIGN_OR_RETURN(Segment s, NestedSegment(*nested, 1));
      AddSegment(SegmentRole::kDelegate, std::move(s));
    } else {
      AddSegment(SegmentRole::kDelegate, SourceSegment(payload));
    }
    delegate_segment_.push_back(seg);
    return seg;
  }

  // The named-data store (plan/named_store.h): a key repeated with the
  // same bytes is one entry, with other bytes an error; keys with identical
  // bytes share one segment.
  Status PlanNamedData() {
    if (input_.named_data.empty() && !options_.integrity_table) return Status::OK();
    NamedDataStore store(options_.strictest_shared_alignment ? SharedAlignment::kStrictest
                                                             : SharedAlignment::kFirstKey,
                         [this](size_t i) {
                           const std::string& what = input_.named_data[i].what;
                           return what.empty() ? "named_data[" + std::to_string(i) + "]" : what;
                         });
    for (size_t i = 0; i < input_.named_data.size(); ++i) {
      const NamedData& e = input_.named_data[i];
      ETPACK_RETURN_IF_ERROR(
          CheckDataKey(e.key, e.what.empty() ? "named_data[" + std::to_string(i) + "]" : e.what));
      ETPACK_RETURN_IF_ERROR(store.Add(e.key, e.source, e.alignment, i).status());
    }
    // Named data segments follow all the others.
    const size_t first = segments_.size();
    std::vector<NamedDataEntry> named;
    named.reserve(store.keys().size() + 1);
    for (const NamedDataStore::Key& k : store.keys()) {
      named.push_back({std::string(k.key), first + k.buffer});
    }
    for (Segment& s : store.Segments()) AddSegment(SegmentRole::kNamedData, std::move(s));
    if (options_.integrity_table) {
      // The last segment, so that it can cover every other one.
      std::vector<std::string_view> keys;
      for (const NamedDataStore::Key& k : store.keys()) keys.push_back(k.key);
      named.push_back({IntegrityKey("pte", keys), segments_.size()});
      AddSegment(SegmentRole::kNamedData,
                 SourceSegment(IntegrityTablePlaceholder(segments_.size() + 1)));
    }
    layout_.named_data = std::move(named);
    return Status::OK();
  }

  Result<PtePlan> Finish() {
    ETPACK_ASSIGN_OR_RETURN(SegmentOffsets seg_layout,
                            LayoutSegments(segments_, options_.segment_alignment));

    layout_.segments.reserve(segments_.size());
    for (size_t j = 0; j < segments_.size(); ++j) {
      layout_.segments.emplace_back(seg_layout.offsets[j], segments_[j].size);
    }

    BuildOptions copy;
    copy.root_path = "program";
    copy.vector_alignment = {{"Buffer.storage", options_.constant_tensor_alignment},
                             {"BackendDelegateInlineData.data", options_.delegate_alignment}};
    LayoutEdits edits(fbs::Decoded(SchemaId::kProgram), layout_);
    ETPACK_ASSIGN_OR_RETURN(std::vector<uint8_t> fb,
                            fbs::CopyFlatbuffer(SchemaId::kProgram, program_bytes_->contiguous(),
                                                program_bytes_->size(), &edits, copy));
    program_ = nullptr;
    program_bytes_.reset();
    layout_ = ProgramLayout();

    // Without segment bytes the reference writes a plain flatbuffer, no
    // extended header.
    std::optional<HeaderCodec> codec;
    if (seg_layout.data_size > 0) {
      ETPACK_ASSIGN_OR_RETURN(
          codec, pte::ExtendedHeaderCodec(
                     std::max(options_.constant_tensor_alignment, options_.delegate_alignment)));
    }
    // In the file, alignment holds only up to segment_alignment: the base
    // is aligned to that, and segment offsets are relative to the base (as
    // in the reference writer).
    ETPACK_ASSIGN_OR_RETURN(
        Assembly a, Assemble(std::move(fb), codec ? &*codec : nullptr, options_.segment_alignment,
                             segments_, seg_layout));
    // The reader's checks, on the head just built: a program the reader
    // would refuse is never written. Only the head is read.
    if (Result<CheckedPte> checked =
            CheckPte(a.artifact.head.data(), a.artifact.head.size(), a.artifact.file_size);
        !checked.ok()) {
      return InvalidArgument("the program would not load: " + checked.status().message());
    }
    PtePlan plan;
    plan.artifact =
        FinishedArtifact(std::move(a.artifact), inputs_.Take(), options_.integrity_table);
    PteSegmentMap& layout = plan.layout;
    layout.program_size = a.head.head_size;
    layout.segment_base_offset = a.head.segment_base_offset;
    layout.segment_data_size = a.head.segment_data_size;
    layout.segments.reserve(segments_.size());
    for (size_t j = 0; j < segments_.size(); ++j) {
      layout.segments.push_back(
          {roles_[j], seg_layout.offsets[j], segments_[j].size, seg_layout.alignments[j]});
    }
    return plan;
  }

  void AddSegment(SegmentRole role, Segment segment) {
    roles_.push_back(role);
    segments_.push_back(std::move(segment));
  }

  PteInput input_;
  InputFiles inputs_;        // what the plan must not overwrite (ArtifactPlan::inputs)
  SourcePtr program_bytes_;  // input_.program, verified
  const pte_fb::Program* program_ = nullptr;
  // The fields of the program that planning decides.
  ProgramLayout layout_;
  const PteOptions& options_;
  // What pass one decides, before offsets are absolute: segment j holds
  // segments_[j] and plays roles_[j].
  std::vector<Segment> segments_;
  std::vector<SegmentRole> roles_;
  // Delegate payloads by content; delegate_segment_[content id] = segment.
  ContentDedup delegate_contents_;
  std::vector<size_t> delegate_segment_;
};

}  // namespace

Result<PtePlan> PlanPte(PteInput input, const PteOptions& options) {
  return PtePlanner(std::move(input), options).Plan();
}

Status WritePte(const std::string& path, PteInput input, const PteOptions& options,
                const WriteOptions& write, const Env& env) {
  ETPACK_ASSIGN_OR_RETURN(PtePlan plan, PlanPte(std::move(input), options));
  return WriteArtifactFile(path, plan.artifact, write, env);
}

}  // namespace etpack
