// assembler.h (internal) — the one assembler of segmented artifacts.
//
// Every segmented format (.pte `eh00`, .ptd `FH01`, segmented .bpte `bh00`)
// has the same shape:
//
//   [0, 8)                      root offset | file identifier
//   [8, 8 + header_size)        the format's header, padded
//   [.., head_size)             the rest of the flatbuffer
//   [head_size, base)           zero padding
//   [base, base + data_size)    the segments, laid out by LayoutSegments
//
// Planning is two steps because the segment offsets go into the flatbuffer's
// own segment table: first LayoutSegments (segments.h) gives the offsets
// relative to the base, then the format builds its flatbuffer and
// Assemble() inserts the header, places the base and turns every piece into
// an absolute Placement.

#ifndef ETPACK_PLAN_ASSEMBLER_H_
#define ETPACK_PLAN_ASSEMBLER_H_

#include <cstdint>
#include <vector>

#include "etpack/plan.h"
#include "etpack/status.h"
#include "plan/segments.h"

namespace etpack {

// Where the assembler put the head and the segment data; what a header
// records.
struct HeadPlacement {
  uint64_t flatbuffer_size = 0;      // the flatbuffer as built, before the header
  uint64_t header_size = 0;          // bytes inserted at offset 8; 0 without a header
  uint64_t head_size = 0;            // flatbuffer_size + header_size
  uint64_t segment_base_offset = 0;  // 0 when there is neither header nor segment data
  uint64_t segment_data_size = 0;
};

// How a format puts its header into a finished flatbuffer. Each format's
// header file (pte/pte_header.h, ...) provides one beside its decoder.
struct HeaderCodec {
  // Bytes inserted after the file identifier: the header, padded to a
  // multiple of the flatbuffer's largest alignment so that every aligned
  // vector stays aligned.
  uint64_t header_size = 0;
  // Writes the header into `header`, the header_size zero bytes at offset 8
  // of the head, once `layout` is final.
  void (*encode)(const HeadPlacement& layout, uint8_t* header) = nullptr;
};

struct Assembly {
  ArtifactPlan artifact;
  HeadPlacement head;
};

// Inserts the header `codec` describes into `flatbuffer` (none when codec is
// null), places the segment base at the head's end rounded up to
// `base_alignment`, and each segment j at base + layout.offsets[j]. The file
// ends at the end of the segment data; without a header and without segment
// data it is the bare flatbuffer.
//
// A piece's placement promises min(AlignmentOf(base_alignment),
// layout.alignments[j], piece.alignment), a power of two (a piece at offset
// 0 needs no alignment of its own). base_alignment is any positive value.
// Empty pieces take no placement.
//
// REQUIRES: layout = LayoutSegments(segments, ...). Fails with
// kInvalidArgument for a piece outside its segment, out of order or off its
// alignment, and kOutOfRange when the file would not fit in 64 bits.
Result<Assembly> Assemble(std::vector<uint8_t> flatbuffer, const HeaderCodec* codec,
                          uint64_t base_alignment, const std::vector<Segment>& segments,
                          const SegmentOffsets& layout);

// The invariants of every ArtifactPlan (see writer.h), checked: sources
// present, alignments powers of two that the offsets honour, placements
// sorted, after the head, not overlapping and inside file_size. Errors are
// kInvalidArgument naming "artifact plan: placements[i]" and the value.
Status ValidateArtifactPlan(const ArtifactPlan& plan);

// The part of ValidateArtifactPlan about plan.integrity: each table has a
// placement of its exact size at its offset, and covers only bytes between
// its origin and itself.
Status ValidateIntegrity(const ArtifactPlan& plan);

// A whole artifact as one segment of another (a .pte inside a .bpte): its
// head at offset 0, its placements at their own offsets and alignments.
// Fails when `plan` is not a valid ArtifactPlan.
Result<Segment> NestedSegment(const ArtifactPlan& plan, uint64_t alignment);

// How every format ends its plan: the artifact Assemble() made, with
// `inputs` (ArtifactPlan::inputs) and, with `integrity_table`, the table
// over the head and every other segment, in the last segment (where each
// format that offers a table plans it). REQUIRES: !artifact.segments.empty()
// when integrity_table.
ArtifactPlan FinishedArtifact(ArtifactPlan artifact, std::vector<SourcePtr> inputs,
                              bool integrity_table);

}  // namespace etpack

#endif  // ETPACK_PLAN_ASSEMBLER_H_
