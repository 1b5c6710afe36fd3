// Pass one for .pte: turns an exporter's program structure plus data sources
// into an ArtifactPlan. The program arrives as a verified flatbuffer (a tree
// is built into one first); the planner reads it, decides the few fields
// that change (constant_buffer emptied, delegates re-pointed, segment tables
// filled) and copies it once with those replaced. Bulk bytes never enter it.

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
#include "flatbuffer/tree_builder.h"
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

// Sub-buffer offsets as a SubsegmentOffsets table.
json::Value SubsegmentOffsets(uint64_t segment_index, const std::vector<uint64_t>& offsets) {
  std::vector<json::Value> items;
  items.reserve(offsets.size());
  for (uint64_t off : offsets) items.push_back(json::Value::UInt(off));
  return json::Value::Object({{"segment_index", json::Value::UInt(segment_index)},
                              {"offsets", json::Value::Array(std::move(items))}});
}

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
    ETPACK_RETURN_IF_ERROR(CheckAlignment(options_.constant_tensor_alignment,
                                          "constant_tensor_alignment", kMaxInlineAlignment));
    ETPACK_RETURN_IF_ERROR(
        CheckAlignment(options_.delegate_alignment, "delegate_alignment", kMaxInlineAlignment));
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
    // Index 0 is the runtime's "no data" placeholder; a program without it
    // still gets one so constant_segment.offsets is never empty.
    if (sources.empty()) sources.push_back(OwnedSource({}));

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
    overrides_.Set("constant_buffer", json::Value::Array());
    overrides_.Set("constant_segment", SubsegmentOffsets(segments_.size(), offsets));
    AddSegment(SegmentRole::kConstants, std::move(seg));
    return Status::OK();
  }

  Status PlanMutable() {
    overrides_.Set("mutable_data_segments", json::Value::Null());
    for (const auto& s : input_.mutable_data) {
      if (s == nullptr) return InvalidArgument("mutable_data: null source");
    }
    ETPACK_ASSIGN_OR_RETURN(Segment seg, PackSegment(input_.mutable_data, 1));
    if (seg.size == 0) return Status::OK();  // the reference writes no segment then
    overrides_.Set("mutable_data_segments",
                   json::Value::Array({SubsegmentOffsets(segments_.size(), PieceOffsets(seg))}));
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
    std::vector<json::Value> kept;
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
          processed_.push_back(DataReference(pte::kLocationInline, kept.size()));
          kept.push_back(json::Value::Object({{"data", json::Value::Array()}}));
          continue;
        }
        ETPACK_ASSIGN_OR_RETURN(size_t seg, DelegateSegment(payload));
        processed_.push_back(DataReference(pte::kLocationSegment, seg));
      }
    }
    if (!options_.extract_delegate_segments) {
      // References stay as given; the table is rebuilt to hold the payloads,
      // read inline by the builder.
      kept.reserve(payloads.size());
      for (size_t i = 0; i < payloads.size(); ++i) {
        kept.push_back(json::Value::Object(
            {{"data", json::Value::Object({{"source", json::Value::UInt(i)}})}}));
      }
      if (inline_data != nullptr || !kept.empty()) {
        overrides_.Set("backend_delegate_data", json::Value::Array(std::move(kept)));
      }
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
    overrides_.Set("backend_delegate_data", json::Value::Array(std::move(kept)));
    return Status::OK();
  }

  static json::Value DataReference(int location, uint64_t index) {
    return json::Value::Object(
        {{"location", json::Value::Int(location)}, {"index", json::Value::UInt(index)}});
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
    overrides_.Set("named_data", json::Value::Null());
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
    std::vector<json::Value> named;
    named.reserve(store.keys().size());
    for (const NamedDataStore::Key& k : store.keys()) {
      named.push_back(
          json::Value::Object({{"key", json::Value::String(std::string(k.key))},
                               {"segment_index", json::Value::UInt(first + k.buffer)}}));
    }
    for (Segment& s : store.Segments()) AddSegment(SegmentRole::kNamedData, std::move(s));
    if (options_.integrity_table) {
      // The last segment, so that it can cover every other one.
      std::vector<std::string_view> keys;
      for (const NamedDataStore::Key& k : store.keys()) keys.push_back(k.key);
      named.push_back(
          json::Value::Object({{"key", json::Value::String(IntegrityKey("pte", keys))},
                               {"segment_index", json::Value::UInt(segments_.size())}}));
      AddSegment(SegmentRole::kNamedData,
                 SourceSegment(IntegrityTablePlaceholder(segments_.size() + 1)));
    }
    overrides_.Set("named_data", json::Value::Array(std::move(named)));
    return Status::OK();
  }

  Result<PtePlan> Finish() {
    ETPACK_ASSIGN_OR_RETURN(SegmentOffsets seg_layout,
                            LayoutSegments(segments_, options_.segment_alignment));

    std::vector<json::Value> table;
    table.reserve(segments_.size());
    for (size_t j = 0; j < segments_.size(); ++j) {
      table.push_back(json::Value::Object({{"offset", json::Value::UInt(seg_layout.offsets[j])},
                                           {"size", json::Value::UInt(segments_[j].size)}}));
    }
    overrides_.Set("segments", json::Value::Array(std::move(table)));

    TreeBuildOptions build;
    build.root_path = "program";
    build.vector_alignment = {{"Buffer.storage", options_.constant_tensor_alignment},
                              {"BackendDelegateInlineData.data", options_.delegate_alignment}};
    if (!options_.extract_delegate_segments) {
      build.sources = std::move(input_.delegates);
      build.sources_fields = {"BackendDelegateInlineData.data"};
    }
    if (options_.extract_delegate_segments) {
      build.replaced_field = "BackendDelegate.processed";
      build.replacements = std::move(processed_);
    }
    ETPACK_ASSIGN_OR_RETURN(std::vector<uint8_t> fb,
                            RebuildFlatbuffer(SchemaId::kProgram, program_bytes_->contiguous(),
                                              program_bytes_->size(), overrides_, build));
    program_ = nullptr;
    program_bytes_.reset();

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
    plan.artifact = std::move(a.artifact);
    plan.artifact.inputs = inputs_.Take();
    if (options_.integrity_table) plan.artifact.integrity = {IntegritySpecOf(plan.artifact)};
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
  // What replaces the program's own fields: at the root, and each
  // BackendDelegate's processed reference in plan order.
  json::Value overrides_ = json::Value::Object();
  std::vector<json::Value> processed_;
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
                const ProgressFn& progress) {
  ETPACK_ASSIGN_OR_RETURN(PtePlan plan, PlanPte(std::move(input), options));
  WriteOptions write;
  write.progress = progress;
  return WriteArtifactFile(path, plan.artifact, write);
}

}  // namespace etpack
