#include "pte_format.h"

#include <cstring>
#include <string>

#include "etpack/layout.h"

namespace etpack::pte {

void StoreLE32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void StoreLE64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t LoadLE32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t LoadLE64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

Result<uint64_t> InsertExtendedHeader(std::vector<uint8_t>& fb, uint64_t max_force_align) {
  if (fb.size() < kHeaderOffset) {
    return InvalidArgument("flatbuffer of " + std::to_string(fb.size()) +
                           " bytes is too short for an extended header");
  }
  // Every offset inside a flatbuffer is relative except the root offset, so
  // inserting bytes only moves the root; a multiple of the largest
  // force_align keeps every aligned vector aligned.
  ETPACK_ASSIGN_OR_RETURN(uint64_t padded, AlignUp(kHeaderLength, max_force_align));
  const uint32_t root = LoadLE32(fb.data());
  fb.insert(fb.begin() + kHeaderOffset, padded, 0);
  StoreLE32(fb.data(), static_cast<uint32_t>(root + padded));
  uint8_t* h = fb.data() + kHeaderOffset;
  std::memcpy(h, kHeaderMagic, 4);
  StoreLE32(h + 4, kHeaderLength);
  return fb.size();
}

void WriteExtendedHeaderFields(uint8_t* file_start, uint64_t program_size,
                               uint64_t segment_base_offset, uint64_t segment_data_size) {
  uint8_t* h = file_start + kHeaderOffset;
  StoreLE64(h + 8, program_size);
  StoreLE64(h + 16, segment_base_offset);
  StoreLE64(h + 24, segment_data_size);
}

}  // namespace etpack::pte
