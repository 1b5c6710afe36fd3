// Pass one for .pte: turns an exporter's program structure plus data sources
// into an ArtifactPlan. The planner owns the tree and edits the few fields
// that change (constant_buffer emptied, delegates re-pointed, segment tables
// filled) in place. Bulk bytes never enter it.

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

// Checks that the [ubyte] member `field` of every `table` object in the
// Program's array `array` is empty: the bytes travel beside the tree, in
// PteInput::`list`. Paths are spelled only on failure: a program can have
// 10^5 entries.
Status CheckNoBytes(const std::vector<json::Value>* entries, const char* array, const char* table,
                    const char* field, const char* list) {
  if (entries == nullptr) return Status::OK();
  for (size_t i = 0; i < entries->size(); ++i) {
    const json::Value& e = (*entries)[i];
    auto path = [&] { return std::string("program.") + array + "[" + std::to_string(i) + "]"; };
    if (e.kind() != json::Kind::kObject) {
      return InvalidArgument(path() + ": expected a " + table + " object");
    }
    const json::Value* bytes = e.Find(field);
    if (bytes == nullptr || bytes->is_null() ||
        (bytes->kind() == json::Kind::kArray && bytes->items().empty())) {
      continue;
    }
    const std::string held = bytes->kind() == json::Kind::kArray
                                 ? std::to_string(bytes->items().size()) +
                                       (bytes->items().size() == 1 ? " byte" : " bytes")
                                 : json::Print(*bytes);
    return InvalidArgument(path() + "." + field + " holds " + held + ": the bytes go in " +
                           "PteInput::" + list + "[" + std::to_string(i) +
                           "], beside the program; leave the field empty");
  }
  return Status::OK();
}

// The array member `key` of `obj`, or nullptr when absent or null.
Result<const std::vector<json::Value>*> OptionalArray(const json::Value& obj, std::string_view key,
                                                      const std::string& path) {
  const json::Value* v = obj.Find(key);
  if (v == nullptr || v->is_null()) return nullptr;
  if (v->kind() != json::Kind::kArray) {
    return InvalidArgument(path + std::string(key) + ": expected an array, got " + json::Print(*v));
  }
  return &v->items();
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
    ETPACK_ASSIGN_OR_RETURN(program_, std::move(input_.program).TakeTree());
    if (program_.kind() != json::Kind::kObject) {
      return InvalidArgument("program: expected an object (the Program table)");
    }

    ETPACK_RETURN_IF_ERROR(PlanConstants());
    ETPACK_RETURN_IF_ERROR(PlanMutable());
    ETPACK_RETURN_IF_ERROR(PlanDelegates());
    ETPACK_RETURN_IF_ERROR(PlanNamedData());
    return Finish();
  }

 private:
  Status PlanConstants() {
    ETPACK_ASSIGN_OR_RETURN(auto entries, OptionalArray(program_, "constant_buffer", "program."));
    ETPACK_RETURN_IF_ERROR(
        CheckNoBytes(entries, "constant_buffer", "Buffer", "storage", "constants"));
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
    program_.Set("constant_buffer", json::Value::Array());
    program_.Set("constant_segment", SubsegmentOffsets(segments_.size(), offsets));
    AddSegment(SegmentRole::kConstants, std::move(seg));
    return Status::OK();
  }

  Status PlanMutable() {
    program_.Set("mutable_data_segments", json::Value::Null());
    for (const auto& s : input_.mutable_data) {
      if (s == nullptr) return InvalidArgument("mutable_data: null source");
    }
    ETPACK_ASSIGN_OR_RETURN(Segment seg, PackSegment(input_.mutable_data, 1));
    if (seg.size == 0) return Status::OK();  // the reference writes no segment then
    program_.Set("mutable_data_segments",
                 json::Value::Array({SubsegmentOffsets(segments_.size(), PieceOffsets(seg))}));
    AddSegment(SegmentRole::kMutable, std::move(seg));
    return Status::OK();
  }

  Status PlanDelegates() {
    ETPACK_ASSIGN_OR_RETURN(auto inline_data,
                            OptionalArray(program_, "backend_delegate_data", "program."));
    ETPACK_RETURN_IF_ERROR(CheckNoBytes(inline_data, "backend_delegate_data",
                                        "BackendDelegateInlineData", "data", "delegates"));
    const std::vector<SourcePtr>& payloads = input_.delegates;
    for (size_t i = 0; i < payloads.size(); ++i) {
      if (payloads[i] == nullptr) {
        return InvalidArgument("delegates[" + std::to_string(i) + "]: null source");
      }
    }

    json::Value* plans = program_.Find("execution_plan");
    if (plans == nullptr || plans->kind() != json::Kind::kArray) {
      return InvalidArgument("program.execution_plan: expected an array of ExecutionPlan");
    }
    // Payloads kept inline when extracting (the empty ones), one entry per
    // delegate as the reference writer does.
    std::vector<json::Value> kept;
    std::vector<bool> referenced(payloads.size(), false);
    for (size_t p = 0; p < plans->items().size(); ++p) {
      json::Value& plan = plans->items()[p];
      const std::string ppath = "program.execution_plan[" + std::to_string(p) + "]";
      if (plan.kind() != json::Kind::kObject) {
        return InvalidArgument(ppath + ": expected an ExecutionPlan object");
      }
      json::Value* delegates = plan.Find("delegates");
      if (delegates == nullptr || delegates->is_null()) continue;
      if (delegates->kind() != json::Kind::kArray) {
        return InvalidArgument(ppath + ".delegates: expected an array");
      }
      for (size_t d = 0; d < delegates->items().size(); ++d) {
        const std::string dpath = ppath + ".delegates[" + std::to_string(d) + "].processed";
        json::Value& delegate = delegates->items()[d];
        const json::Value* ref =
            delegate.kind() == json::Kind::kObject ? delegate.Find("processed") : nullptr;
        if (ref == nullptr || ref->kind() != json::Kind::kObject) {
          return InvalidArgument(dpath + ": missing; every delegate needs a data reference");
        }
        ETPACK_ASSIGN_OR_RETURN(uint64_t index, InlineIndex(*ref, dpath, payloads.size()));
        referenced[index] = true;
        // Without extraction the table and every reference stay as given.
        if (!options_.extract_delegate_segments) continue;
        const SourcePtr& payload = payloads[index];
        if (payload->size() == 0) {
          delegate.Set("processed", DataReference(pte::kLocationInline, kept.size()));
          kept.push_back(json::Value::Object({{"data", json::Value::Array()}}));
          continue;
        }
        ETPACK_ASSIGN_OR_RETURN(size_t seg, DelegateSegment(payload));
        delegate.Set("processed", DataReference(pte::kLocationSegment, seg));
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
        program_.Set("backend_delegate_data", json::Value::Array(std::move(kept)));
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
    program_.Set("backend_delegate_data", json::Value::Array(std::move(kept)));
    return Status::OK();
  }

  static json::Value DataReference(int location, uint64_t index) {
    return json::Value::Object(
        {{"location", json::Value::Int(location)}, {"index", json::Value::UInt(index)}});
  }

  // Validates an input reference (INLINE, index in range) and returns the index.
  static Result<uint64_t> InlineIndex(const json::Value& ref, const std::string& path,
                                      size_t count) {
    const json::Value* loc = ref.Find("location");
    const bool is_inline = loc == nullptr || loc->is_null() ||
                           (loc->is_integer() && loc->as_double() == pte::kLocationInline) ||
                           (loc->kind() == json::Kind::kString && loc->as_string() == "INLINE");
    if (!is_inline) {
      return InvalidArgument(path + ".location = " + json::Print(*loc) +
                             ": delegates must be given INLINE (payload in "
                             "PteInput::delegates); the planner assigns segments");
    }
    const json::Value* idx = ref.Find("index");
    uint64_t index = 0;
    if (idx != nullptr && !idx->is_null()) {
      if (!idx->is_integer() || idx->as_double() < 0) {
        return InvalidArgument(path + ".index = " + json::Print(*idx) +
                               ": expected a non-negative integer");
      }
      index = idx->as_uint();
    }
    if (index >= count) {
      return InvalidArgument(path + ".index = " + std::to_string(index) +
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
    program_.Set("named_data", json::Value::Null());
    if (input_.named_data.empty() && !options_.integrity_table) return Status::OK();
    NamedDataStore store(options_.strictest_shared_alignment ? SharedAlignment::kStrictest
                                                             : SharedAlignment::kFirstKey);
    for (size_t i = 0; i < input_.named_data.size(); ++i) {
      const NamedData& e = input_.named_data[i];
      ETPACK_RETURN_IF_ERROR(CheckDataKey(e.key, "named_data[" + std::to_string(i) + "]"));
      ETPACK_RETURN_IF_ERROR(
          store.Add(e.key, e.source, e.alignment, "named_data[" + std::to_string(i) + "]")
              .status());
    }
    // Named data segments follow all the others.
    const size_t first = segments_.size();
    std::vector<json::Value> named;
    named.reserve(store.keys().size());
    for (const NamedDataStore::Key& k : store.keys()) {
      named.push_back(
          json::Value::Object({{"key", json::Value::String(k.key)},
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
    program_.Set("named_data", json::Value::Array(std::move(named)));
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
    program_.Set("segments", json::Value::Array(std::move(table)));

    TreeBuildOptions build;
    build.root_path = "program";
    build.vector_alignment = {{"Buffer.storage", options_.constant_tensor_alignment},
                              {"BackendDelegateInlineData.data", options_.delegate_alignment}};
    if (!options_.extract_delegate_segments) {
      build.sources = std::move(input_.delegates);
      build.sources_fields = {"BackendDelegateInlineData.data"};
    }
    ETPACK_ASSIGN_OR_RETURN(std::vector<uint8_t> fb,
                            BuildFlatbuffer(SchemaId::kProgram, program_, build));

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
  InputFiles inputs_;    // what the plan must not overwrite (ArtifactPlan::inputs)
  json::Value program_;  // taken from input_.program
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
  return WriteArtifactFile(path, plan.artifact, OutputOptions{}, progress);
}

}  // namespace etpack
