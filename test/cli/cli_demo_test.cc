// End-to-end tests of `etpack demo`: the file it writes, which verify and
// inspect accept, and the folder it makes.

#include <cstdint>
#include <filesystem>
#include <string>
#include "catch.h"

#include "cli_test_util.h"
#include "etpack/json.h"

namespace fs = std::filesystem;

using namespace etpack::testing::cli;

TEST_CASE("demo writes a file that verify and inspect accept") {
  TempDir dir;
  const std::string pte = dir / "demo.pte";

  Run demo = Etpack({"demo", "--size", "8MiB", "-o", dir.path().string()});
  INFO(demo.output);
  REQUIRE(demo.exit_code == 0);
  CHECK(Contains(demo.output, pte));
  REQUIRE(fs::exists(pte));
  // 8 MiB of weights plus a small flatbuffer and alignment padding.
  CHECK(fs::file_size(pte) >= (uint64_t{15} << 19));
  CHECK(fs::file_size(pte) <= (uint64_t{9} << 20));

  Run verify = Etpack({"verify", pte});
  INFO(verify.output);
  CHECK(verify.exit_code == 0);
  CHECK(Contains(verify.output, pte + ": ok"));

  SECTION("a truncated copy is invalid and the message names it") {
    const std::string cut = dir / "truncated.pte";
    fs::copy_file(pte, cut);
    fs::resize_file(cut, fs::file_size(pte) / 2);
    Run bad = Etpack({"verify", cut});
    INFO(bad.output);
    CHECK(bad.exit_code == 1);
    CHECK(Contains(bad.output, cut + ": invalid"));
  }

  SECTION("inspect prints the layout") {
    Run text = Etpack({"inspect", pte});
    INFO(text.output);
    CHECK(text.exit_code == 0);
    CHECK(Contains(text.output, "ET12"));
    CHECK(Contains(text.output, "forward"));
    CHECK(Contains(text.output, "constants"));
  }

  SECTION("inspect --json prints one parseable object") {
    Run js = Etpack({"inspect", pte, "--json"});
    INFO(js.output);
    REQUIRE(js.exit_code == 0);
    auto doc = etpack::json::Parse(js.output, "inspect --json");
    REQUIRE(doc.ok());
    const etpack::json::Value* segments = doc->Find("segments");
    REQUIRE(segments != nullptr);
    REQUIRE(segments->kind() == etpack::json::Kind::kArray);
    CHECK(segments->items().size() >= 1);
    const etpack::json::Value* header = doc->Find("extended_header");
    REQUIRE(header != nullptr);
    CHECK(header->Find("present")->as_bool());
    const etpack::json::Value* constants = doc->Find("constants");
    REQUIRE(constants != nullptr);
    CHECK(constants->Find("tensors")->as_uint() >= 100);
    CHECK(constants->Find("bytes")->as_uint() <= (uint64_t{8} << 20));
    CHECK(constants->Find("bytes")->as_uint() >= (uint64_t{15} << 19));
  }
}

TEST_CASE("demo -o makes the folder it is given") {
  TempDir dir;
  const std::string nested = dir / "new/sub";
  Run demo = Etpack({"demo", "--size", "8MiB", "-o", nested});
  INFO(demo.output);
  REQUIRE(demo.exit_code == 0);
  CHECK(fs::exists(nested + "/demo.pte"));
  for (const char* plural : {" 1 heads", " 1 layers", " 1 tensors"}) {
    CHECK_FALSE(Contains(demo.output, plural));
  }
}
