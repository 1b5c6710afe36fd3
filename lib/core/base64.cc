#include "core/base64.h"

#include <array>

namespace etpack {

bool DecodeBase64(std::string_view s, std::vector<uint8_t>* out, std::string* why) {
  static const auto kTable = [] {
    std::array<int8_t, 256> t{};
    t.fill(-1);
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 64; ++i)
      t[static_cast<unsigned char>(alphabet[i])] = static_cast<int8_t>(i);
    return t;
  }();
  if (s.size() % 4 != 0) {
    *why = "length " + std::to_string(s.size()) + " is not a multiple of 4";
    return false;
  }
  size_t pad = 0;
  if (!s.empty() && s.back() == '=') pad = s[s.size() - 2] == '=' ? 2 : 1;
  out->clear();
  out->reserve(s.size() / 4 * 3);
  for (size_t i = 0; i < s.size(); i += 4) {
    const bool last = i + 4 == s.size();
    uint32_t group = 0;
    for (size_t j = 0; j < 4; ++j) {
      const unsigned char c = static_cast<unsigned char>(s[i + j]);
      int8_t d = kTable[c];
      if (d < 0 && c == '=' && last && j >= 4 - pad) d = 0;
      if (d < 0) {
        *why = ((c >= 0x20 && c < 0x7f) ? std::string("'") + static_cast<char>(c) + "'"
                                        : "byte " + std::to_string(c)) +
               " at offset " + std::to_string(i + j);
        return false;
      }
      group = (group << 6) | static_cast<uint32_t>(d);
    }
    out->push_back(static_cast<uint8_t>(group >> 16));
    if (!last || pad < 2) out->push_back(static_cast<uint8_t>(group >> 8));
    if (!last || pad < 1) out->push_back(static_cast<uint8_t>(group));
    if (last && (group & (pad == 2 ? 0xFFFFu : pad == 1 ? 0xFFu : 0u)) != 0) {
      *why = "the padding bits of the last group are not zero";
      return false;
    }
  }
  return true;
}

}  // namespace etpack
