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
#include <utility>
#include <vector>

#include "etpack/layout.h"
#include "etpack/pte.h"
#include "etpack/writer.h"
#include "flatbuffer/tree_builder.h"
#include "pte/pte_format.h"

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

constexpr uint64_t kMaxInlineAlignment = 65536;

// Checks that the [ubyte] member `field` of every `table` object in the
// Program's array `array` is empty: the bytes travel beside the tree, in
// PteInput::`list`. Paths are spelled only on failure: a program can have
// 10^5 entries.
Status CheckNoBytes(const std::vector<json::Value>* entries, const char* array,
                    const char* table, const char* field, const char* list) {
  if (entries == nullptr) return Status::OK();
  for (size_t i = 0; i < entries->size(); ++i) {
    const json::Value& e = (*entries)[i];
    auto path = [&] { return std::string(array) + "[" + std::to_string(i) + "]"; };
    if (e.kind() != json::Kind::kObject) {
      return InvalidArgument(path() + ": expected a " + table + " object");
    }
    const json::Value* bytes = e.Find(field);
    if (bytes == nullptr || bytes->is_null() ||
        (bytes->kind() == json::Kind::kArray && bytes->items().empty())) {
      continue;
    }
    const std::string held = bytes->kind() == json::Kind::kArray
                                 ? std::to_string(bytes->items().size()) + " bytes"
                                 : json::Print(*bytes);
    return InvalidArgument(path() + "." + field + " holds " + held + ": the bytes go in " +
                           "PteInput::" + list + "[" + std::to_string(i) +
                           "], beside the program; leave the field empty");
  }
  return Status::OK();
}

// The array member `key` of `obj`, or nullptr when absent or null.
Result<const std::vector<json::Value>*> OptionalArray(const json::Value& obj,
                                                      std::string_view key,
                                                      const std::string& path) {
  const json::Value* v = obj.Find(key);
  if (v == nullptr || v->is_null()) return nullptr;
  if (v->kind() != json::Kind::kArray) {
    return InvalidArgument(path + std::string(key) + ": expected an array, got " +
                           json::Print(*v));
  }
  return &v->items();
}

json::Value OffsetsArray(const std::vector<uint64_t>& offsets) {
  std::vector<json::Value> items;
  items.reserve(offsets.size());
  for (uint64_t o : offsets) items.push_back(json::Value::UInt(o));
  return json::Value::Array(std::move(items));
}

json::Value SubsegmentOffsets(uint64_t segment_index, const std::vector<uint64_t>& offsets) {
  return json::Value::Object({{"segment_index", json::Value::UInt(segment_index)},
                              {"offsets", OffsetsArray(offsets)}});
}

// Everything pass one decides, before offsets are absolute.
struct PendingSegment {
  SegmentRole role;
  SegmentSpec spec;
  // Pieces at offsets relative to the segment start.
  std::vector<std::pair<uint64_t, SourcePtr>> pieces;
  uint64_t piece_alignment = 1;  // what each piece's relative offset is aligned to
};

// Delegate segments by payload size, for deduplication.
struct DedupCandidate {
  size_t segment;
  std::optional<uint64_t> hash;  // ContentHash, once needed
};
using DedupIndex = std::map<uint64_t, std::vector<DedupCandidate>>;

class PtePlanner {
 public:
  PtePlanner(PteInput input, const PteOptions& options)
      : input_(std::move(input)), options_(options) {}

  Result<PtePlan> Plan() {
    ETPACK_RETURN_IF_ERROR(CheckAlignment(options_.segment_alignment, "segment_alignment"));
    ETPACK_RETURN_IF_ERROR(
        CheckAlignment(options_.constant_tensor_alignment, "constant_tensor_alignment"));
    ETPACK_RETURN_IF_ERROR(CheckAlignment(options_.delegate_alignment, "delegate_alignment"));
    // Both also align data inside the flatbuffer and pad the extended
    // header, where more than 64 KiB is never useful.
    for (auto [value, name] : {std::pair{options_.constant_tensor_alignment, "constant_tensor_alignment"},
                               std::pair{options_.delegate_alignment, "delegate_alignment"}}) {
      if (value > kMaxInlineAlignment) {
        return InvalidArgument(std::string(name) + " = " + std::to_string(value) +
                               " exceeds the maximum of " + std::to_string(kMaxInlineAlignment));
      }
    }
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
    ETPACK_ASSIGN_OR_RETURN(auto entries, OptionalArray(program_, "constant_buffer", ""));
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

    std::vector<uint64_t> sizes;
    sizes.reserve(sources.size());
    for (const auto& s : sources) sizes.push_back(s->size());
    ETPACK_ASSIGN_OR_RETURN(PackedBuffers packed,
                            PackBuffers(sizes, options_.constant_tensor_alignment));

    PendingSegment seg{SegmentRole::kConstants, {packed.size, 1}, {},
                       options_.constant_tensor_alignment};
    for (size_t i = 0; i < sources.size(); ++i) {
      seg.pieces.emplace_back(packed.offsets[i], std::move(sources[i]));
    }
    program_.Set("constant_buffer", json::Value::Array());
    program_.Set("constant_segment", SubsegmentOffsets(segments_.size(), packed.offsets));
    segments_.push_back(std::move(seg));
    return Status::OK();
  }

  Status PlanMutable() {
    program_.Set("mutable_data_segments", json::Value::Null());
    std::vector<uint64_t> sizes;
    uint64_t total = 0;
    for (const auto& s : input_.mutable_data) {
      if (s == nullptr) return InvalidArgument("mutable_data: null source");
      sizes.push_back(s->size());
      ETPACK_ASSIGN_OR_RETURN(total, CheckedAdd(total, s->size(), "mutable_data size"));
    }
    if (total == 0) return Status::OK();  // the reference writes no segment then
    ETPACK_ASSIGN_OR_RETURN(PackedBuffers packed, PackBuffers(sizes, 1));
    PendingSegment seg{SegmentRole::kMutable, {packed.size, 1}, {}, 1};
    for (size_t i = 0; i < sizes.size(); ++i) {
      seg.pieces.emplace_back(packed.offsets[i], input_.mutable_data[i]);
    }
    program_.Set("mutable_data_segments",
                 json::Value::Array({SubsegmentOffsets(segments_.size(), packed.offsets)}));
    segments_.push_back(std::move(seg));
    return Status::OK();
  }

  Status PlanDelegates() {
    ETPACK_ASSIGN_OR_RETURN(auto inline_data,
                            OptionalArray(program_, "backend_delegate_data", ""));
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
      return InvalidArgument("execution_plan: expected an array of ExecutionPlan");
    }
    // Payloads kept inline when extracting (the empty ones), one entry per
    // delegate as the reference writer does; segments by size for dedup.
    std::vector<json::Value> kept;
    DedupIndex by_size;
    std::vector<bool> referenced(payloads.size(), false);
    for (size_t p = 0; p < plans->items().size(); ++p) {
      json::Value& plan = plans->items()[p];
      const std::string ppath = "execution_plan[" + std::to_string(p) + "]";
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
        ETPACK_ASSIGN_OR_RETURN(size_t seg, DelegateSegment(payload, by_size));
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
    return json::Value::Object({{"location", json::Value::Int(location)},
                                {"index", json::Value::UInt(index)}});
  }

  // Validates an input reference (INLINE, index in range) and returns the index.
  static Result<uint64_t> InlineIndex(const json::Value& ref, const std::string& path,
                                      size_t count) {
    const json::Value* loc = ref.Find("location");
    const bool is_inline =
        loc == nullptr || loc->is_null() ||
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
  // bytes, else a new one. Payloads meet only others of their size; each is
  // hashed once, on its first such meeting, and bytes are compared only when
  // hashes agree, so k same-size payloads cost k reads, not k^2.
  Result<size_t> DelegateSegment(const SourcePtr& payload, DedupIndex& by_size) {
    std::vector<DedupCandidate>& same_size = by_size[payload->size()];
    std::optional<uint64_t> hash;
    for (DedupCandidate& c : same_size) {
      const SourcePtr& other = segments_[c.segment].pieces.front().second;
      if (other == payload) return c.segment;
      if (!hash) {
        ETPACK_ASSIGN_OR_RETURN(hash, ContentHash(*payload));
      }
      if (!c.hash) {
        ETPACK_ASSIGN_OR_RETURN(c.hash, ContentHash(*other));
      }
      if (*c.hash != *hash) continue;
      ETPACK_ASSIGN_OR_RETURN(const bool same, SameBytes(*other, *payload));
      if (same) return c.segment;
    }
    const size_t seg = segments_.size();
    segments_.push_back(PendingSegment{SegmentRole::kDelegate, {payload->size(), 1},
                                       {{0, payload}}, 1});
    same_size.push_back({seg, hash});
    return seg;
  }


  Status PlanNamedData() {
    program_.Set("named_data", json::Value::Null());
    if (input_.named_data.empty()) return Status::OK();
    std::map<const Source*, size_t> segment_of_source;
    std::vector<json::Value> named;
    named.reserve(input_.named_data.size());
    for (size_t i = 0; i < input_.named_data.size(); ++i) {
      const NamedData& e = input_.named_data[i];
      const std::string path = "named_data[" + std::to_string(i) + "]";
      if (e.source == nullptr) return InvalidArgument(path + ".source: null source");
      ETPACK_RETURN_IF_ERROR(CheckAlignment(e.alignment, path + ".alignment"));
      auto it = segment_of_source.find(e.source.get());
      if (it == segment_of_source.end()) {
        // The first key that uses a buffer decides its alignment, as in the
        // reference serializer; later keys' alignments are not consulted.
        it = segment_of_source.emplace(e.source.get(), segments_.size()).first;
        segments_.push_back(PendingSegment{SegmentRole::kNamedData,
                                           {e.source->size(), e.alignment},
                                           {{0, e.source}}, 1});
      }
      named.push_back(json::Value::Object({{"key", json::Value::String(e.key)},
                                           {"segment_index", json::Value::UInt(it->second)}}));
    }
    program_.Set("named_data", json::Value::Array(std::move(named)));
    return Status::OK();
  }

  Result<PtePlan> Finish() {
    std::vector<SegmentSpec> specs;
    specs.reserve(segments_.size());
    for (const auto& s : segments_) specs.push_back(s.spec);
    ETPACK_ASSIGN_OR_RETURN(SegmentLayout seg_layout,
                            LayoutSegments(specs, options_.segment_alignment));

    std::vector<json::Value> table;
    table.reserve(segments_.size());
    for (size_t j = 0; j < segments_.size(); ++j) {
      table.push_back(json::Value::Object(
          {{"offset", json::Value::UInt(seg_layout.offsets[j])},
           {"size", json::Value::UInt(segments_[j].spec.size)}}));
    }
    program_.Set("segments", json::Value::Array(std::move(table)));

    TreeBuildOptions build;
    build.vector_alignment = {{"Buffer.storage", options_.constant_tensor_alignment},
                              {"BackendDelegateInlineData.data", options_.delegate_alignment}};
    if (!options_.extract_delegate_segments) build.sources = std::move(input_.delegates);
    ETPACK_ASSIGN_OR_RETURN(std::vector<uint8_t> fb,
                            BuildFlatbuffer(SchemaId::kProgram, program_, build));

    PtePlan plan;
    PteLayout& layout = plan.layout;
    for (size_t j = 0; j < segments_.size(); ++j) {
      layout.segments.push_back({segments_[j].role, seg_layout.offsets[j],
                                 segments_[j].spec.size,
                                 std::max(options_.segment_alignment,
                                          segments_[j].spec.alignment)});
    }
    if (seg_layout.data_size == 0) {
      // Nothing to put after the flatbuffer: the reference writes a plain
      // flatbuffer without the extended header in that case.
      layout.program_size = fb.size();
      plan.artifact.file_size = fb.size();
      plan.artifact.head = std::move(fb);
      return plan;
    }

    const uint64_t max_force_align =
        std::max(options_.constant_tensor_alignment, options_.delegate_alignment);
    ETPACK_ASSIGN_OR_RETURN(layout.program_size,
                            pte::InsertExtendedHeader(fb, max_force_align));
    ETPACK_ASSIGN_OR_RETURN(layout.segment_base_offset,
                            AlignUp(layout.program_size, options_.segment_alignment));
    layout.segment_data_size = seg_layout.data_size;
    ETPACK_ASSIGN_OR_RETURN(plan.artifact.file_size,
                            CheckedAdd(layout.segment_base_offset, seg_layout.data_size,
                                       "file size"));
    pte::WriteExtendedHeaderFields(fb.data(), layout.program_size,
                                   layout.segment_base_offset, layout.segment_data_size);
    plan.artifact.head = std::move(fb);

    for (size_t j = 0; j < segments_.size(); ++j) {
      // In the file, alignment holds only up to segment_alignment: the base
      // is aligned to that, and segment offsets are relative to the base
      // (as in the reference writer).
      const uint64_t seg_start = layout.segment_base_offset + seg_layout.offsets[j];
      const uint64_t piece_align =
          std::min(options_.segment_alignment, segments_[j].piece_alignment);
      for (auto& [rel, source] : segments_[j].pieces) {
        if (source->size() == 0) continue;
        plan.artifact.placements.push_back(
            {seg_start + rel, rel == 0 ? options_.segment_alignment : piece_align, source});
      }
    }
    return plan;
  }

  PteInput input_;
  json::Value program_;  // taken from input_.program
  const PteOptions& options_;
  std::vector<PendingSegment> segments_;
};

}  // namespace

Result<PtePlan> PlanPte(PteInput input, const PteOptions& options) {
  return PtePlanner(std::move(input), options).Plan();
}

Status WritePte(const std::string& path, PteInput input, const PteOptions& options,
                const ProgressFn& progress) {
  ETPACK_ASSIGN_OR_RETURN(PtePlan plan, PlanPte(std::move(input), options));
  return WriteArtifactFile(path, plan.artifact, FileSinkOptions{}, progress);
}

}  // namespace etpack
