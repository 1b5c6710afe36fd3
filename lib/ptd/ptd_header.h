// ptd_header.h (internal) — the .ptd header `FH01` (docs/formats.md §3.2),
// encoded and decoded here and nowhere else:
//
//   [8, 12)   "FH01"
//   [12, 16)  u32 length: 40
//   [16, 24)  u64 flatbuffer_offset: the bytes inserted at offset 8 (48)
//   [24, 32)  u64 flatbuffer_size: the flatbuffer before the insertion
//   [32, 40)  u64 segment_base_offset
//   [40, 48)  u64 segment_data_size
//   [48, 56)  zero padding to 16

#ifndef ETPACK_PTD_HEADER_H_
#define ETPACK_PTD_HEADER_H_

#include <cstdint>

#include "etpack/ptd.h"
#include "etpack/status.h"
#include "plan/assembler.h"

namespace etpack::ptd {

inline constexpr char kHeaderMagic[4] = {'F', 'H', '0', '1'};
inline constexpr uint32_t kHeaderLength = 40;        // the length field
inline constexpr uint64_t kPaddedHeaderLength = 48;  // bytes inserted: 40 padded to 16

// Encoding: how the assembler inserts and fills the header.
extern const HeaderCodec kHeaderCodec;

// Decoding: reads the header; fails when the head is shorter than the
// runtime's 64 bytes, the magic is absent or the length is below 40.
Result<FlatTensorHeader> ParseHeader(const uint8_t* data, uint64_t size);

}  // namespace etpack::ptd

#endif  // ETPACK_PTD_HEADER_H_
