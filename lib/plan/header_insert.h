// header_insert.h (internal) — what the three on-disk headers (.pte eh00,
// .ptd FH01, .bpte bh00) share: inserted into a finished flatbuffer right
// after its root offset and file identifier, one shape (4-byte magic, u32
// length, u64 fields), little-endian whatever the host is.

#ifndef ETPACK_HEADER_INSERT_H_
#define ETPACK_HEADER_INSERT_H_

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "core/byte_order.h"
#include "etpack/status.h"

namespace etpack {

// Where inserted headers start: after the root offset and file identifier.
inline constexpr uint64_t kInsertedHeaderOffset = 8;

// Inserts `length` zero bytes at offset 8 of a finished flatbuffer and
// moves the root offset past them. Every other flatbuffer offset is
// relative, so the buffer stays valid; `length` must be a multiple of the
// buffer's largest alignment so that every aligned vector stays aligned.
Status InsertAfterIdentifier(std::vector<uint8_t>& flatbuffer, uint64_t length);

// Writes `magic`, `length` and then each of `fields` at `header`
// (8 + 8 * fields.size() bytes).
void EncodeHeader(uint8_t* header, const char (&magic)[4], uint32_t length,
                  std::initializer_list<uint64_t> fields);

// The u64 field i of a header encoded as above. REQUIRES: it is there.
uint64_t HeaderField(const uint8_t* header, int i);

}  // namespace etpack

#endif  // ETPACK_HEADER_INSERT_H_
