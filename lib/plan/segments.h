// segments.h (internal) — the planner's arithmetic: where every byte goes
// relative to the segment base.
//
// A format describes its bulk data as segments, each a run of pieces (a
// piece is a source at an offset inside its segment). LayoutSegments places
// the segments back to back; PackSegment places sources back to back inside
// one segment with the same arithmetic. Nothing here knows the file: the
// assembler (assembler.h) puts the result after a format's head.
//
// Every addition is overflow-checked; a layout that does not fit in 64 bits
// is kOutOfRange, never a wrap.
//
// Two kinds of alignment meet here. A *requested* alignment (an option, a
// segment's or a named-data entry's own) is any positive integer, as the
// reference serializer takes it: offsets are multiples of the least common
// multiple of every alignment that applies (lcm(12, 8) = 24). An *achieved*
// alignment (Piece::alignment, Placement::alignment, what a report or a
// zero-copy loader relies on) is a power of two: the largest one a
// requested alignment guarantees, AlignmentOf(requested).

#ifndef ETPACK_PLAN_SEGMENTS_H_
#define ETPACK_PLAN_SEGMENTS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "etpack/plan.h"
#include "etpack/source.h"
#include "etpack/status.h"

namespace etpack {

// True for 1, 2, 4, ... 2^63.
constexpr bool IsPowerOfTwo(uint64_t a) { return a != 0 && (a & (a - 1)) == 0; }

// The alignment an offset achieves: the largest power of two dividing it
// (2^63 for 0). Of a requested alignment, what every multiple of it
// achieves (AlignmentOf(24) = 8).
constexpr uint64_t AlignmentOf(uint64_t offset) {
  return offset == 0 ? uint64_t{1} << 63 : offset & (~offset + 1);
}

// The alignment a named-data key read back from a file is given again: the
// one its segment's offset (from the segment base) shows, as OffsetAlignment
// (etpack/plan.h) reads it, and 1 for the first segment, whose offset 0 shows
// nothing (the alignment the key asked for is not recorded in the file).
uint64_t ReadBackAlignment(uint64_t segment_offset);

// For a requested alignment (options, entries): kInvalidArgument
// "<what> = 0 is not a positive alignment" for 0, and "<what> = <a> exceeds
// the maximum of 1073741824 (1 GiB)" above `max`. Any other value is
// accepted, a power of two or not. REQUIRES: max is a power of two.
Status CheckAlignment(uint64_t a, std::string_view what, uint64_t max = kMaxAlignment);

// As CheckAlignment, and also kInvalidArgument "<what> = <a> is not a power
// of two" unless it is: for a requested alignment the format itself needs
// to be a power of two (a flatbuffer's force_align: constant_tensor_alignment,
// delegate_alignment) and for achieved alignments (pieces, placements).
Status CheckPowerOfTwo(uint64_t a, std::string_view what, uint64_t max = kMaxAlignment);

// lcm(a, b), or kOutOfRange naming `what` when it does not fit in 64 bits.
// REQUIRES: a > 0, b > 0.
Result<uint64_t> Lcm(uint64_t a, uint64_t b, std::string_view what);

// The smallest multiple of `alignment` >= offset.
// REQUIRES: alignment > 0. Fails with kOutOfRange on overflow.
Result<uint64_t> AlignUp(uint64_t offset, uint64_t alignment);

// a + b, or kOutOfRange naming `what` when it does not fit.
Result<uint64_t> CheckedAdd(uint64_t a, uint64_t b, std::string_view what);

// A source's bytes at `offset` from the start of its segment.
struct Piece {
  uint64_t offset = 0;
  // A power of two that `offset` is a multiple of; what the piece's bytes
  // may rely on in the file (up to the alignment of the segment itself).
  uint64_t alignment = 1;
  SourcePtr source;
};

// A run of bytes after the head. Pieces are sorted by offset, do not
// overlap and lie inside [0, size); bytes no piece covers are zero.
struct Segment {
  uint64_t size = 0;
  uint64_t alignment = 1;  // its own request (any positive), combined by lcm
  std::vector<Piece> pieces;
};

// One segment holding `source` at its start.
Segment SourceSegment(SourcePtr source, uint64_t alignment = 1);

struct SegmentOffsets {
  std::vector<uint64_t> offsets;  // from the segment base; the first is 0
  // The largest power of two each offset is a multiple of by construction
  // (achieved, not requested: 8 for a segment placed at a multiple of 24).
  std::vector<uint64_t> alignments;
  uint64_t data_size = 0;  // end of the last segment; 0 when none
};

// Segment j starts at the end of segment j-1 rounded up to a multiple of
// lcm(alignment, segments[j].alignment); the first starts at 0. There is no
// padding after the last. `item` names the segments in errors ("segment 3
// end", "segment_alignment = 0").
Result<SegmentOffsets> LayoutSegments(const std::vector<Segment>& segments, uint64_t alignment,
                                      std::string_view item = "segment");

// One segment holding `sources` back to back, each after the first at a
// multiple of `alignment` (1 = no padding), none after the last: how .pte
// packs constants and mutable initial values. The pieces' offsets are the
// sources' offsets inside the segment; their alignment AlignmentOf(alignment).
Result<Segment> PackSegment(std::vector<SourcePtr> sources, uint64_t alignment);

}  // namespace etpack

#endif  // ETPACK_PLAN_SEGMENTS_H_
