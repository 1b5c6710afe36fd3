// bpte_header.h (internal) — the `bh00` header of the segmented .bpte layout
// (docs/bpte-segments.md), encoded and decoded here and nowhere else. It
// has the shape of the .pte `eh00` header under another magic:
//
//   [8, 12)   "bh00"
//   [12, 16)  u32 length: 32
//   [16, 24)  u64 flatbuffer_size: the flatbuffer region, header included
//   [24, 32)  u64 segment_base_offset
//   [32, 40)  u64 segment_data_size
//
// A standard-layout file has no header.

#ifndef ETPACK_BPTE_HEADER_H_
#define ETPACK_BPTE_HEADER_H_

#include <cstdint>

#include "etpack/status.h"
#include "plan/assembler.h"
#include "plan/header_insert.h"

namespace etpack::bpte {

inline constexpr char kHeaderMagic[4] = {'b', 'h', '0', '0'};
inline constexpr uint64_t kHeaderOffset = kInsertedHeaderOffset;
// The length field, and the bytes inserted: 32 is already a multiple of the
// schema's largest force_align (32, on `program`), so no padding.
inline constexpr uint32_t kHeaderLength = 32;

struct Header {
  bool present = false;
  uint32_t length = 0;
  uint64_t flatbuffer_size = 0;  // bytes [0, flatbuffer_size), header included
  uint64_t segment_base_offset = 0;
  uint64_t segment_data_size = 0;
};

// Encoding: how the assembler inserts and fills the header.
extern const HeaderCodec kHeaderCodec;

// Decoding: reads the header at offset 8. `present` is false when the file
// is too short to hold one or the magic is not there; a present header with
// a length below 32 is an error.
Result<Header> ParseHeader(const uint8_t* data, uint64_t size);

}  // namespace etpack::bpte

#endif  // ETPACK_BPTE_HEADER_H_
