// byte_order.h (internal) — little-endian loads and stores, whatever the
// host's byte order: every fixed-width field etpack writes or reads outside
// a flatbuffer (the .pte/.ptd/.bpte headers, integrity tables, NFAT and
// archive headers) is little-endian.

#ifndef ETPACK_CORE_BYTE_ORDER_H_
#define ETPACK_CORE_BYTE_ORDER_H_

#include <cstdint>

namespace etpack {

// REQUIRES: p points at 4 (32) or 8 (64) bytes.
inline void StoreLE32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline void StoreLE64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline uint32_t LoadLE32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
inline uint64_t LoadLE64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace etpack

#endif  // ETPACK_CORE_BYTE_ORDER_H_
