// The embedded schemas as the library decodes them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "etpack/source.h"
#include "flatbuffer_fixtures.h"

namespace etpack {
namespace {

using namespace etpack::testing;

TEST_CASE("GetSchema is the embedded program schema") {
  const reflection::Schema& s = GetSchema(SchemaId::kProgram);
  REQUIRE(s.root_table() != nullptr);
  CHECK(s.root_table()->name()->str() == "etpack.pte_fb.Program");
  CHECK(s.file_ident()->str() == "ET12");
}

}  // namespace
}  // namespace etpack
