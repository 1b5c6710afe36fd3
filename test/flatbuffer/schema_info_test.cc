// The embedded schemas as the library decodes them.
#include "catch.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "etpack/error_path.h"
#include "etpack/source.h"
#include "flatbuffer_fixtures.h"

namespace etpack {
namespace {

using namespace etpack::testing;

TEST_CASE("ErrorPath renders the root, fields and indices pushed, and only those") {
  ErrorPath path;
  CHECK(path.Text().empty());
  {
    ErrorPath::Push plan(path, "execution_plan");  // no dot before the first field
    ErrorPath::Push p(path, size_t{0});
    ErrorPath::Push values(path, "values");
    ErrorPath::Push v(path, size_t{12});
    CHECK(path.Text() == "execution_plan[0].values[12]");
  }
  CHECK(path.Text().empty());
  path.root() = "emitter_output.program";
  ErrorPath::Push field(path, "constant_buffer");
  CHECK(path.Text() == "emitter_output.program.constant_buffer");
}

TEST_CASE("ErrorPath renders a mapping's key as ['key'], without a dot") {
  ErrorPath path;
  const std::string tag = "model", key = "w.0";
  {
    ErrorPath::Push map(path, "external_constant_map");
    ErrorPath::Push t(path, ErrorPath::Key{tag});
    ErrorPath::Push k(path, ErrorPath::Key{key});
    CHECK(path.Text() == "external_constant_map['model']['w.0']");
    ErrorPath::Push field(path, "alignment");
    CHECK(path.Text() == "external_constant_map['model']['w.0'].alignment");
  }
  CHECK(path.Text().empty());
}

TEST_CASE("GetSchema is the embedded program schema") {
  const reflection::Schema& s = GetSchema(SchemaId::kProgram);
  REQUIRE(s.root_table() != nullptr);
  CHECK(s.root_table()->name()->str() == "etpack.pte_fb.Program");
  CHECK(s.file_ident()->str() == "ET12");
}

}  // namespace
}  // namespace etpack
