// header_insert.h (internal) — the trick both .pte and .ptd headers use:
// a fixed header inserted into a finished flatbuffer right after its root
// offset and file identifier, plus little-endian field access.

#ifndef ETPACK_HEADER_INSERT_H_
#define ETPACK_HEADER_INSERT_H_

#include <cstdint>
#include <vector>

#include "etpack/status.h"

namespace etpack {

// Where inserted headers start: after the root offset and file identifier.
inline constexpr uint64_t kInsertedHeaderOffset = 8;

// Inserts `length` zero bytes at offset 8 of a finished flatbuffer and
// moves the root offset past them. Every other flatbuffer offset is
// relative, so the buffer stays valid; `length` must be a multiple of the
// buffer's largest alignment so that every aligned vector stays aligned.
Status InsertAfterIdentifier(std::vector<uint8_t>& flatbuffer, uint64_t length);

void StoreLE32(uint8_t* p, uint32_t v);
void StoreLE64(uint8_t* p, uint64_t v);
uint32_t LoadLE32(const uint8_t* p);
uint64_t LoadLE64(const uint8_t* p);

}  // namespace etpack

#endif  // ETPACK_HEADER_INSERT_H_
