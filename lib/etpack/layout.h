// etpack/layout.h — the planner's arithmetic: where every byte goes.
//
// Pure functions over sizes and alignments. No I/O, no formats: the .pte,
// .ptd and .bpte layers describe their segments with these and build their
// headers from the answer. Every addition is overflow-checked; a layout
// that does not fit in 64 bits is an error, never a wrap.
//
// All alignments must be powers of two (1 allowed); anything else is
// kInvalidArgument naming the value. For powers of two lcm(a, b) =
// max(a, b), which is how per-item alignments combine with the segment
// alignment.

#ifndef ETPACK_LAYOUT_H_
#define ETPACK_LAYOUT_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "etpack/status.h"

namespace etpack {

// True for 1, 2, 4, ... 2^63.
constexpr bool IsPowerOfTwo(uint64_t a) { return a != 0 && (a & (a - 1)) == 0; }

// kInvalidArgument "<what> = <a> is not a power of two" unless it is.
Status CheckAlignment(uint64_t a, std::string_view what);

// The smallest multiple of `alignment` >= offset.
// REQUIRES: IsPowerOfTwo(alignment). Fails with kOutOfRange on overflow.
Result<uint64_t> AlignUp(uint64_t offset, uint64_t alignment);

// a + b, or kOutOfRange naming `what` when it does not fit.
Result<uint64_t> CheckedAdd(uint64_t a, uint64_t b, std::string_view what);

// Sub-buffers packed into one segment (constants, mutable initial values).
struct PackedBuffers {
  std::vector<uint64_t> offsets;  // one per input size, from the segment start
  uint64_t size = 0;              // end of the last buffer: no trailing pad
};

// Places buffers back to back; after every buffer except the last the
// offset is rounded up to `alignment` (1 = no padding).
Result<PackedBuffers> PackBuffers(const std::vector<uint64_t>& sizes,
                                  uint64_t alignment);

// One segment to place: its byte size and its own alignment requirement.
struct SegmentSpec {
  uint64_t size = 0;
  uint64_t alignment = 1;
};

struct SegmentLayout {
  std::vector<uint64_t> offsets;  // from the segment base; first is 0
  uint64_t data_size = 0;         // end of the last segment; 0 when none
};

// Segment j starts at the end of segment j-1 rounded up to
// max(segment_alignment, spec[j].alignment); the first starts at 0.
Result<SegmentLayout> LayoutSegments(const std::vector<SegmentSpec>& specs,
                                     uint64_t segment_alignment);

}  // namespace etpack

#endif  // ETPACK_LAYOUT_H_
