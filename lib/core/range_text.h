// range_text.h (internal) — the "[offset, +length)" notation that source and
// output messages share, so a range reads the same wherever it is reported.

#ifndef ETPACK_RANGE_TEXT_H_
#define ETPACK_RANGE_TEXT_H_

#include <cstdint>
#include <string>

namespace etpack {

inline std::string RangeText(uint64_t offset, uint64_t length) {
  return "[" + std::to_string(offset) + ", +" + std::to_string(length) + ")";
}

}  // namespace etpack

#endif  // ETPACK_RANGE_TEXT_H_
