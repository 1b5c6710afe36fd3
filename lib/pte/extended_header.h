// extended_header.h (internal) — decoding the `eh00` header of a .pte head.

#ifndef ETPACK_PTE_EXTENDED_HEADER_H_
#define ETPACK_PTE_EXTENDED_HEADER_H_

#include <cstdint>

#include "etpack/pte_file.h"  // ExtendedHeader
#include "etpack/status.h"

namespace etpack {

// Reads the extended header at offset 8 of a .pte head. `present` is false
// when the magic is not there. Fails (kCorrupt) for a present header that
// is malformed (length < 24) or a head shorter than the 64 bytes the
// runtime insists on.
Result<ExtendedHeader> ParseExtendedHeader(const uint8_t* data, uint64_t size);

}  // namespace etpack

#endif  // ETPACK_PTE_EXTENDED_HEADER_H_
