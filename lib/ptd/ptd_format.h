// ptd_format.h (internal) — the .ptd FH01 header (formats.md §4.2), shared
// by the planner and the reader.

#ifndef ETPACK_PTD_FORMAT_H_
#define ETPACK_PTD_FORMAT_H_

#include <cstdint>

#include "etpack/ptd.h"
#include "etpack/status.h"

namespace etpack::ptd {

inline constexpr char kFileIdentifier[4] = {'F', 'T', '0', '1'};
inline constexpr char kHeaderMagic[4] = {'F', 'H', '0', '1'};
inline constexpr uint32_t kHeaderLength = 40;         // the length field
inline constexpr uint64_t kPaddedHeaderLength = 48;   // bytes inserted: 40 padded to 16
inline constexpr uint64_t kRuntimeHeadBytes = 64;     // the runtime reads this much first

// Fills the header at offset 8 of a file head with room for it.
void WriteHeader(uint8_t* file_start, const PtdLayout& layout);

// Reads the header; fails when the magic is absent, the length is below 40
// or the head is shorter than the runtime's 64 bytes.
Result<FlatTensorHeader> ParseHeader(const uint8_t* data, uint64_t size);

}  // namespace etpack::ptd

#endif  // ETPACK_PTD_FORMAT_H_
