// Helpers shared by the share tests (share_test.cc, share_unit_test.cc).
#ifndef ETPACK_TEST_SHARE_TEST_UTIL_H_
#define ETPACK_TEST_SHARE_TEST_UTIL_H_

#include <string>
#include <utility>
#include <vector>
#include "catch.h"

#include "etpack/share.h"
#include "etpack/verify.h"

namespace etpack::testing {

// A thin program of a written share verifies with its data files (its
// output, then f.data): the verdict, for more checks.
inline VerifyReport CheckVerifies(const ShareFileReport& f) {
  std::vector<std::string> files = {f.output};
  files.insert(files.end(), f.data.begin(), f.data.end());
  Result<VerifyReport> v = Verify(files);
  REQUIRE(v.ok());
  INFO(v->verdict.ToString());
  CHECK(v->ok());
  return std::move(v).value();
}

}  // namespace etpack::testing

#endif  // ETPACK_TEST_SHARE_TEST_UTIL_H_
