// pte_format.h (internal) — .pte wire constants and the extended header,
// shared by the planner (which writes it) and the reader (which checks it).
// See formats.md §2.

#ifndef ETPACK_PTE_FORMAT_H_
#define ETPACK_PTE_FORMAT_H_

#include <cstdint>
#include <vector>

#include "etpack/status.h"
#include "layout/header_insert.h"

namespace etpack::pte {

inline constexpr char kFileIdentifier[4] = {'E', 'T', '1', '2'};
inline constexpr char kHeaderMagic[4] = {'e', 'h', '0', '0'};
inline constexpr uint64_t kHeaderOffset = kInsertedHeaderOffset;
inline constexpr uint32_t kHeaderLength = 32;     // what writers put in the length field
inline constexpr uint32_t kMinHeaderLength = 24;  // legacy headers lack segment_data_size
inline constexpr uint64_t kRuntimeHeadBytes = 64; // the runtime reads this much first

// DataLocation values of BackendDelegateDataReference.
inline constexpr int kLocationInline = 0;
inline constexpr int kLocationSegment = 1;

// Inserts a zeroed extended header at offset 8 of a finished flatbuffer,
// padded to a multiple of max_force_align so every force-aligned vector
// stays aligned, and moves the root offset past it. Returns the new size
// (program_size). The header's magic and length are filled in; the three
// 64-bit fields are zero until WriteExtendedHeaderFields.
Result<uint64_t> InsertExtendedHeader(std::vector<uint8_t>& flatbuffer,
                                      uint64_t max_force_align);

void WriteExtendedHeaderFields(uint8_t* file_start, uint64_t program_size,
                               uint64_t segment_base_offset,
                               uint64_t segment_data_size);

// The formats are little-endian whatever the host is.
using etpack::LoadLE32;
using etpack::LoadLE64;
using etpack::StoreLE32;
using etpack::StoreLE64;

}  // namespace etpack::pte

#endif  // ETPACK_PTE_FORMAT_H_
