// bpte_format.h (internal) — .bpte wire constants (docs/bpte-segments.md),
// shared by the planner and the reader. The `bh00` header of the segmented
// layout has its own file, bpte_header.h.

#ifndef ETPACK_BPTE_FORMAT_H_
#define ETPACK_BPTE_FORMAT_H_

#include <cstdint>

namespace etpack::bpte {

inline constexpr char kFileIdentifier[4] = {'B', 'P', '0', '8'};

// force_align of BundledProgram.program and of Tensor.data.
inline constexpr uint64_t kProgramVectorAlignment = 32;
inline constexpr uint64_t kTensorDataAlignment = 16;
// The least a reader accepts for a segmented program: the runtime's
// max_align_t, which PteFile also needs.
inline constexpr uint64_t kMinProgramSegmentAlignment = 16;
// What PlanBpte accepts for BpteOptions::program_alignment at the least: a
// .pte's own segments are 128-aligned relative to its start.
inline constexpr uint64_t kMinProgramAlignmentOption = 128;

// data_segment / program_segment value meaning "not in a segment".
inline constexpr int32_t kNoSegment = -1;

}  // namespace etpack::bpte

#endif  // ETPACK_BPTE_FORMAT_H_
