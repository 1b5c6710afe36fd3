#include "nfat/nfat_format.h"

#include <cstdio>

namespace etpack::nfat {

std::string BackendIdProblem(std::string_view id) {
  if (id.empty()) return "is empty";
  if (id.size() > kIdSize) {
    return "is " + std::to_string(id.size()) + " bytes long, more than the " +
           std::to_string(kIdSize) + " the table holds";
  }
  for (size_t i = 0; i < id.size(); ++i) {
    const auto c = static_cast<unsigned char>(id[i]);
    if (c == 0 || c > 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "0x%02x", c);
      return std::string("has byte ") + hex + " at " + std::to_string(i) +
             (c == 0 ? ", a NUL before the padding" : ", which is not ASCII");
    }
  }
  return "";
}

std::string ShownId(std::string_view id) {
  std::string out = "\"";
  for (char ch : id) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out += ch;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      out += hex;
    }
  }
  return out + "\"";
}

}  // namespace etpack::nfat
