// bpte_format.h (internal) — .bpte wire constants and the `bh00` header of
// the segmented layout (docs/bpte-segments.md), shared by the planner (which
// writes it) and the reader (which checks it).
//
// The bh00 header has the byte layout of the .pte `eh00` header (formats.md
// §2) under another magic, so it is inserted and filled with the same
// helpers: 32 bytes at offset 8, u64 flatbuffer region size (header
// included), u64 segment_base_offset, u64 segment_data_size.

#ifndef ETPACK_BPTE_FORMAT_H_
#define ETPACK_BPTE_FORMAT_H_

#include <cstdint>
#include <vector>

#include "etpack/status.h"
#include "layout/header_insert.h"

namespace etpack::bpte {

inline constexpr char kFileIdentifier[4] = {'B', 'P', '0', '8'};
inline constexpr char kHeaderMagic[4] = {'b', 'h', '0', '0'};
inline constexpr uint64_t kHeaderOffset = kInsertedHeaderOffset;
// The length field, and the bytes inserted: 32 is already a multiple of the
// schema's largest force_align (32, on `program`), so no padding.
inline constexpr uint32_t kHeaderLength = 32;

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

struct Header {
  bool present = false;
  uint32_t length = 0;
  uint64_t flatbuffer_size = 0;  // bytes [0, flatbuffer_size), header included
  uint64_t segment_base_offset = 0;
  uint64_t segment_data_size = 0;
};

// Inserts a bh00 header with zero size fields at offset 8 of a finished
// BP08 flatbuffer and moves the root offset past it. Returns the new size.
Result<uint64_t> InsertHeader(std::vector<uint8_t>& flatbuffer);

// Fills the three 64-bit fields of an inserted header.
void WriteHeaderFields(uint8_t* file_start, uint64_t flatbuffer_size,
                       uint64_t segment_base_offset, uint64_t segment_data_size);

// Reads the header at offset 8. `present` is false when the file is too
// short to hold one or the magic is not there; a present header with a
// length below 32 is an error.
Result<Header> ParseHeader(const uint8_t* data, uint64_t size);

}  // namespace etpack::bpte

#endif  // ETPACK_BPTE_FORMAT_H_
