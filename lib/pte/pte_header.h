// pte_header.h (internal) — the .pte extended header `eh00` (docs/formats.md §2.2),
// encoded and decoded here and nowhere else:
//
//   [8, 12)   "eh00"
//   [12, 16)  u32 length: 32 (24 in legacy files, which lack the last field)
//   [16, 24)  u64 program_size: the flatbuffer, header included
//   [24, 32)  u64 segment_base_offset
//   [32, 40)  u64 segment_data_size
//
// A program without segment data has no header at all.

#ifndef ETPACK_PTE_HEADER_H_
#define ETPACK_PTE_HEADER_H_

#include <cstdint>

#include "etpack/pte_file.h"  // ExtendedHeader
#include "etpack/status.h"
#include "plan/assembler.h"
#include "plan/header_insert.h"

namespace etpack::pte {

inline constexpr char kHeaderMagic[4] = {'e', 'h', '0', '0'};
inline constexpr uint64_t kHeaderOffset = kInsertedHeaderOffset;
inline constexpr uint32_t kHeaderLength = 32;     // what writers put in the length field
inline constexpr uint32_t kMinHeaderLength = 24;  // legacy headers lack segment_data_size

// Encoding: the codec that inserts the header, padded to a multiple of
// max_force_align (the largest force_align of the program's vectors) so
// every aligned vector stays aligned. Fails for an alignment that is not a
// power of two.
Result<HeaderCodec> ExtendedHeaderCodec(uint64_t max_force_align);

}  // namespace etpack::pte

namespace etpack {

// Decoding: reads the extended header at offset 8 of a .pte head. `present`
// is false when the magic is not there. Fails (kCorrupt) for a present
// header that is malformed (length < 24) or a head shorter than the 64
// bytes the runtime insists on.
Result<ExtendedHeader> ParseExtendedHeader(const uint8_t* data, uint64_t size);

}  // namespace etpack

#endif  // ETPACK_PTE_HEADER_H_
