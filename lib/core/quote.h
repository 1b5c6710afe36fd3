// quote.h (internal) — 'key': how messages set off a key or a name the
// user gave, so it reads the same wherever it is reported.

#ifndef ETPACK_QUOTE_H_
#define ETPACK_QUOTE_H_

#include <string>

namespace etpack {

inline std::string Quote(const std::string& s) { return "'" + s + "'"; }

}  // namespace etpack

#endif  // ETPACK_QUOTE_H_
