#include "plan/assembler.h"

#include <algorithm>
#include <string>
#include <utility>

#include "integrity/table.h"
#include "plan/header_insert.h"

namespace etpack {
namespace {

// Checks segment j's pieces against the segment and appends their
// placements. `start` is the segment's absolute offset and `align` what
// it is a multiple of.
Status PlaceSegment(const Segment& s, size_t j, uint64_t start, uint64_t align,
                    std::vector<Placement>& out) {
  uint64_t prev_end = 0;
  for (size_t i = 0; i < s.pieces.size(); ++i) {
    const Piece& p = s.pieces[i];
    // Built only on the way out: a segment can hold 10^5 pieces.
    auto what = [&] { return "segment " + std::to_string(j) + " piece " + std::to_string(i); };
    if (p.source == nullptr) return InvalidArgument(what() + ": source is null");
    if (!IsPowerOfTwo(p.alignment)) return CheckPowerOfTwo(p.alignment, what() + " alignment");
    const uint64_t size = p.source->size();
    if (p.offset < prev_end || p.offset > s.size || size > s.size - p.offset) {
      return InvalidArgument(what() + " [" + std::to_string(p.offset) + ", +" +
                             std::to_string(size) + ") is out of order or outside the segment [" +
                             std::to_string(prev_end) + ", " + std::to_string(s.size) + ")");
    }
    if (p.offset % p.alignment != 0) {
      return InvalidArgument(what() + " offset " + std::to_string(p.offset) +
                             " is not a multiple of its alignment " + std::to_string(p.alignment));
    }
    prev_end = p.offset + size;
    if (size == 0) continue;
    // Offset 0 shares the segment's alignment whatever the piece asks for.
    const uint64_t a = p.offset == 0 ? align : std::min(align, p.alignment);
    out.push_back({start + p.offset, a, p.source});  // below start + s.size: checked by the caller
  }
  return Status::OK();
}

}  // namespace

Result<Assembly> Assemble(std::vector<uint8_t> flatbuffer, const HeaderCodec* codec,
                          uint64_t base_alignment, const std::vector<Segment>& segments,
                          const SegmentOffsets& layout) {
  ETPACK_RETURN_IF_ERROR(CheckAlignment(base_alignment, "segment base alignment"));
  if (layout.offsets.size() != segments.size() || layout.alignments.size() != segments.size()) {
    return InvalidArgument("internal: a layout of " + std::to_string(layout.offsets.size()) +
                           " segments for " + std::to_string(segments.size()) + " segments");
  }
  Assembly out;
  HeadPlacement& h = out.head;
  h.flatbuffer_size = flatbuffer.size();
  if (codec != nullptr) {
    ETPACK_RETURN_IF_ERROR(InsertAfterIdentifier(flatbuffer, codec->header_size));
    h.header_size = codec->header_size;
  }
  h.head_size = flatbuffer.size();
  h.segment_data_size = layout.data_size;
  uint64_t file_size = h.head_size;
  if (codec != nullptr || layout.data_size > 0) {
    ETPACK_ASSIGN_OR_RETURN(h.segment_base_offset, AlignUp(h.head_size, base_alignment));
    ETPACK_ASSIGN_OR_RETURN(file_size,
                            CheckedAdd(h.segment_base_offset, layout.data_size, "file size"));
  }
  if (codec != nullptr) codec->encode(h, flatbuffer.data() + kInsertedHeaderOffset);

  std::vector<Placement>& placements = out.artifact.placements;
  for (size_t j = 0; j < segments.size(); ++j) {
    const Segment& s = segments[j];
    // Segments lie inside the data (LayoutSegments), so no sum below wraps.
    if (layout.offsets[j] > layout.data_size || s.size > layout.data_size - layout.offsets[j]) {
      return InvalidArgument("internal: segment " + std::to_string(j) +
                             " lies outside the layout's " + std::to_string(layout.data_size) +
                             " bytes");
    }
    // Achieved: the base is at a multiple of base_alignment, which may be
    // no power of two (12 guarantees 4).
    const uint64_t align = std::min(AlignmentOf(base_alignment), layout.alignments[j]);
    ETPACK_RETURN_IF_ERROR(
        PlaceSegment(s, j, h.segment_base_offset + layout.offsets[j], align, placements));
    out.artifact.segments.push_back({h.segment_base_offset + layout.offsets[j], s.size});
  }
  out.artifact.head = std::move(flatbuffer);
  out.artifact.file_size = file_size;
  return out;
}

Status ValidateArtifactPlan(const ArtifactPlan& plan) {
  const uint64_t head = plan.head.size();
  if (head > plan.file_size) {
    return InvalidArgument("artifact plan: head is " + std::to_string(head) +
                           " bytes but file_size = " + std::to_string(plan.file_size));
  }
  uint64_t prev_end = head;
  for (size_t i = 0; i < plan.placements.size(); ++i) {
    const Placement& p = plan.placements[i];
    // Built only on the way out: plans can hold many thousands of items.
    auto field = [i] { return "artifact plan: placements[" + std::to_string(i) + "]"; };
    if (p.source == nullptr) return InvalidArgument(field() + ".source is null");
    if (!IsPowerOfTwo(p.alignment)) return CheckPowerOfTwo(p.alignment, field() + ".alignment");
    if (p.offset % p.alignment != 0) {
      return InvalidArgument(field() + ".offset = " + std::to_string(p.offset) +
                             " is not a multiple of its alignment " + std::to_string(p.alignment));
    }
    if (p.offset < prev_end) {
      return InvalidArgument(field() + ".offset = " + std::to_string(p.offset) +
                             (i == 0 ? " lies inside the head, which ends at "
                                     : " overlaps or precedes placements[" + std::to_string(i - 1) +
                                           "], which ends at ") +
                             std::to_string(prev_end));
    }
    const uint64_t size = p.source->size();
    if (p.offset > plan.file_size || size > plan.file_size - p.offset) {
      return InvalidArgument(field() + " [" + std::to_string(p.offset) + ", +" +
                             std::to_string(size) + ") of " + p.source->Describe() +
                             " runs past file_size = " + std::to_string(plan.file_size));
    }
    prev_end = p.offset + size;
  }
  // Where a tail starts: everything else ends before it.
  uint64_t end = plan.file_size;
  if (plan.base != nullptr && plan.base->size() != plan.file_size) {
    return InvalidArgument("artifact plan: base " + plan.base->Describe() + " has " +
                           std::to_string(plan.base->size()) +
                           " bytes, file_size = " + std::to_string(plan.file_size));
  }
  if (plan.replaces_base && plan.base == nullptr) {
    return InvalidArgument("artifact plan: replaces_base without a base");
  }
  if (plan.tail != nullptr) {
    if (plan.base != nullptr || !plan.integrity.empty()) {
      return InvalidArgument("artifact plan: a tail with a base or integrity tables");
    }
    const uint64_t max = plan.tail->max_size();
    if (max > plan.file_size || prev_end > plan.file_size - max) {
      return InvalidArgument("artifact plan: the tail of up to " + std::to_string(max) +
                             " bytes does not fit after byte " + std::to_string(prev_end) +
                             " in file_size = " + std::to_string(plan.file_size));
    }
    end = prev_end;
  }
  for (size_t j = 0; j < plan.segments.size(); ++j) {
    const ByteRange& r = plan.segments[j];
    if (r.offset > end || r.size > end - r.offset) {
      return InvalidArgument("artifact plan: segments[" + std::to_string(j) + "] runs past " +
                             (plan.tail ? "the start of the tail, " : "file_size = ") +
                             std::to_string(end));
    }
  }
  return ValidateIntegrity(plan);
}

Status ValidateIntegrity(const ArtifactPlan& plan) {
  size_t next = 0;  // placements are sorted, and so are the tables
  for (size_t t = 0; t < plan.integrity.size(); ++t) {
    const IntegrityTableSpec& spec = plan.integrity[t];
    const std::string field = "artifact plan: integrity[" + std::to_string(t) + "]";
    while (next < plan.placements.size() && plan.placements[next].offset < spec.table_offset) {
      ++next;
    }
    if (next == plan.placements.size() || plan.placements[next].offset != spec.table_offset ||
        plan.placements[next].source->size() != IntegrityTableSize(spec.ranges.size())) {
      return InvalidArgument(field + ": no placement of " +
                             std::to_string(IntegrityTableSize(spec.ranges.size())) +
                             " bytes at table_offset = " + std::to_string(spec.table_offset));
    }
    ++next;
    for (const ByteRange& r : spec.ranges) {
      if (r.offset < spec.origin || r.offset > spec.table_offset ||
          r.size > spec.table_offset - r.offset) {
        return InvalidArgument(field + ": range [" + std::to_string(r.offset) + ", +" +
                               std::to_string(r.size) +
                               ") is not between origin = " + std::to_string(spec.origin) +
                               " and table_offset = " + std::to_string(spec.table_offset));
      }
    }
  }
  return Status::OK();
}

Result<Segment> NestedSegment(const ArtifactPlan& plan, uint64_t alignment) {
  ETPACK_RETURN_IF_ERROR(ValidateArtifactPlan(plan));
  Segment out{plan.file_size, alignment, {}};
  out.pieces.reserve(plan.placements.size() + 1);
  if (!plan.head.empty()) out.pieces.push_back({0, 1, OwnedSource(plan.head)});
  for (const Placement& p : plan.placements) {
    out.pieces.push_back({p.offset, p.alignment, p.source});
  }
  return out;
}

ArtifactPlan FinishedArtifact(ArtifactPlan artifact, std::vector<SourcePtr> inputs,
                              bool integrity_table) {
  artifact.inputs = std::move(inputs);
  if (integrity_table) {
    IntegrityTableSpec spec;
    spec.table_offset = artifact.segments.back().offset;
    spec.ranges.push_back({0, artifact.head.size()});
    spec.ranges.insert(spec.ranges.end(), artifact.segments.begin(), artifact.segments.end() - 1);
    artifact.integrity = {std::move(spec)};
  }
  return artifact;
}

}  // namespace etpack
