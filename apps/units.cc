#include "units.h"

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <iterator>
#include <utility>

namespace etpack::cli {

Result<uint64_t> ParseByteSize(std::string_view text, std::string_view what) {
  const std::string given = std::string(what) + " = '" + std::string(text) + "'";
  // Digits and a known suffix make a byte count; one past 2^64 - 1 is too
  // large, which is not the same mistake as text that is no count at all.
  size_t digits = 0;
  bool overflow = false;
  uint64_t value = 0;
  for (; digits < text.size() && text[digits] >= '0' && text[digits] <= '9'; ++digits) {
    const uint64_t d = static_cast<uint64_t>(text[digits] - '0');
    if (value > (UINT64_MAX - d) / 10) overflow = true;
    value = value * 10 + d;
  }
  std::string suffix(text.substr(digits));
  for (char& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::pair<const char*, int> kSuffixes[] = {
      {"", 0},     {"b", 0},  {"k", 10},   {"kib", 10}, {"m", 20},   {"mib", 20}, {"g", 30},
      {"gib", 30}, {"t", 40}, {"tib", 40}, {"p", 50},   {"pib", 50}, {"e", 60},   {"eib", 60}};
  for (const auto& [name, shift] : kSuffixes) {
    if (digits == 0 || suffix != name) continue;
    if (overflow || (shift > 0 && value > (UINT64_MAX >> shift))) {
      return OutOfRange(given + " is too large: a byte count is at most " +
                        std::to_string(UINT64_MAX) + " (16 EiB - 1)");
    }
    return value << shift;
  }
  return InvalidArgument(given + " is not a byte count (e.g. 4096, 64K, 512MiB, 6GiB)");
}

std::string BytesText(uint64_t bytes) {
  std::string text = Count(bytes, "byte");
  if (bytes >= 1024) text += " (" + HumanBytes(bytes) + ")";
  return text;
}

std::string HumanBytes(uint64_t bytes) {
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  char buf[48];
  if (bytes < 1024) return Count(bytes, "byte");
  double v = static_cast<double>(bytes) / 1024.0;
  size_t unit = 0;
  while (v >= 1024.0 && unit + 1 < std::size(kUnits)) {
    v /= 1024.0;
    ++unit;
  }
  std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[unit]);
  return buf;
}

Result<uint64_t> ParseAlignment(std::string_view text, std::string_view what, uint64_t max) {
  ETPACK_ASSIGN_OR_RETURN(uint64_t value, ParseByteSize(text, what));
  if (value == 0 || (value & (value - 1)) != 0) {
    return InvalidArgument(std::string(what) + " = " + std::to_string(value) +
                           " is not a power of two");
  }
  if (value > max) {
    const std::string given = std::string(text) == std::to_string(value)
                                  ? std::string(text)
                                  : std::string(text) + " (" + std::to_string(value) + ")";
    // Bounds are powers of two of at least 1 KiB: "1 GiB", never "1.0 GiB".
    const char* const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    size_t unit = 0;
    uint64_t n = max >> 10;
    while (n >= 1024 && unit + 1 < std::size(units)) n >>= 10, ++unit;
    return InvalidArgument(std::string(what) + " = " + given + " exceeds the maximum of " +
                           std::to_string(max) + " (" + std::to_string(n) + " " + units[unit] +
                           ")");
  }
  return value;
}

std::string Count(uint64_t n, std::string_view one, std::string_view many) {
  std::string noun(n == 1 ? one : many.empty() ? std::string(one) + "s" : many);
  return std::to_string(n) + " " + noun;
}

}  // namespace etpack::cli
