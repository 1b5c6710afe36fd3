// base64.h (internal) — strict RFC 4648 §4 decoding for inline blobs in
// manifests and CASES.json: padding required, no whitespace, and zero bits
// in the unused part of the last group (§3.5), so every byte string has
// exactly one accepted spelling.

#ifndef ETPACK_BASE64_H_
#define ETPACK_BASE64_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace etpack {

// Decodes `s` into *out. On malformed input returns false and sets *why to
// a phrase such as "'*' at offset 3" or "length 5 is not a multiple of 4".
bool DecodeBase64(std::string_view s, std::vector<uint8_t>* out, std::string* why);

}  // namespace etpack

#endif  // ETPACK_BASE64_H_
