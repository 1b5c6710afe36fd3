#include "plan/header_insert.h"

#include <cstring>
#include <string>

namespace etpack {

void EncodeHeader(uint8_t* header, const char (&magic)[4], uint32_t length,
                  std::initializer_list<uint64_t> fields) {
  std::memcpy(header, magic, 4);
  StoreLE32(header + 4, length);
  uint8_t* p = header + 8;
  for (uint64_t f : fields) {
    StoreLE64(p, f);
    p += 8;
  }
}

uint64_t HeaderField(const uint8_t* header, int i) { return LoadLE64(header + 8 + 8 * i); }

Status InsertAfterIdentifier(std::vector<uint8_t>& fb, uint64_t length) {
  if (fb.size() < kInsertedHeaderOffset) {
    return InvalidArgument("flatbuffer of " + std::to_string(fb.size()) +
                           " bytes is too short to take a header");
  }
  const uint64_t root = LoadLE32(fb.data());
  if (root + length > UINT32_MAX) {
    return OutOfRange("root offset " + std::to_string(root) + " + header " +
                      std::to_string(length) + " exceeds 32 bits");
  }
  // Grown by exactly `length`: a vector's own growth would double a
  // flatbuffer of many MB for 40 bytes (builders that know of the header
  // reserve room for it, and then nothing moves).
  fb.reserve(fb.size() + length);
  fb.insert(fb.begin() + kInsertedHeaderOffset, length, 0);
  StoreLE32(fb.data(), static_cast<uint32_t>(root + length));
  return Status::OK();
}

}  // namespace etpack
