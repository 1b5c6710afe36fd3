// Catch2 behind one include: Debian 12 has Catch2 2 (one header,
// catch2/catch.hpp), Debian 13 Catch2 3 (catch2/catch_all.hpp and a library).
// The tests include this and spell the string matchers the way both versions
// take (catch_text::), since Catch2 3 renamed Contains to ContainsSubstring
// and gave the old name to the range matcher.
#ifndef ETPACK_TEST_CATCH_H_
#define ETPACK_TEST_CATCH_H_

#include <string>

#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
#define ETPACK_CATCH2_MAJOR 3
#else
#include <catch2/catch.hpp>
#define ETPACK_CATCH2_MAJOR 2
#endif

namespace catch_text {

inline auto Contains(const std::string& text) {
#if ETPACK_CATCH2_MAJOR == 3
  return Catch::Matchers::ContainsSubstring(text);
#else
  return Catch::Matchers::Contains(text);
#endif
}
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;

}  // namespace catch_text

#endif  // ETPACK_TEST_CATCH_H_
