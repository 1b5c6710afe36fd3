// End-to-end tests of `etpack bundle` and `unbundle`, and of verify and
// inspect on bundled programs (.bpte).

#include <fstream>
#include <string>
#include <vector>
#include "catch.h"

#include "cli_test_util.h"
#include "etpack/json.h"

using namespace etpack::testing::cli;

namespace {

// CASES.json for pte_constants.pte's method: f32[2,3], double, bool, int.
void WriteConstantsCases(const TempDir& dir) {
  std::ofstream out(dir / "cases.json");
  out << R"({"methods": {"forward": [
    {"inputs": [{"tensor": {"dtype": "FLOAT", "sizes": [2, 3],
                            "base64": "AACAPwAAAEAAAEBAAACAQAAAoEAAAMBA"}},
                {"double": 0.5}, {"bool": true}, {"int": 3}],
     "expected_outputs": [{"tensor": {"dtype": "FLOAT", "sizes": [2, 3],
                                      "base64": "AACAPwAAAEAAAEBAAACAQAAAoEAAAMBA"}}]}]}})";
}

// The whole file (the name the round-trip test reads it by).
std::string Slurp(const std::string& path) { return ReadAll(path); }

}  // namespace

TEST_CASE("bundle and unbundle round-trip in both layouts") {
  TempDir dir;
  WriteConstantsCases(dir);
  const std::string pte = Golden("pte_constants.pte");
  for (const std::string layout : {"standard", "segmented"}) {
    INFO(layout);
    const std::string bpte = dir / ("b." + layout + ".bpte");
    Run b = Etpack({"bundle", pte, "--cases", dir / "cases.json", "-o", bpte, "--layout", layout});
    INFO(b.output);
    REQUIRE(b.exit_code == 0);
    Run v = Etpack({"verify", bpte});
    INFO(v.output);
    CHECK(v.exit_code == 0);
    CHECK(Contains(v.output, layout + " layout, 1 suite, 1 case; embedded program 1896 bytes, "
                                      "1 method)"));
    Run i = Etpack({"inspect", bpte});
    CHECK(i.exit_code == 0);
    CHECK(Contains(i.output, "--- embedded program ---"));
    const std::string back = dir / ("back." + layout + ".pte");
    Run u = Etpack({"unbundle", bpte, "-o", back});
    INFO(u.output);
    REQUIRE(u.exit_code == 0);
    CHECK(Slurp(back) == Slurp(pte));
  }
}

TEST_CASE("bundle refuses cases that do not fit the program, leaving nothing") {
  TempDir dir;
  std::ofstream(dir / "cases.json") << R"({"methods": {"forward": [{"inputs": [{"int": 1}]}]}})";
  Run b = Etpack(
      {"bundle", Golden("pte_constants.pte"), "--cases", dir / "cases.json", "-o", dir / "x.bpte"});
  CHECK(b.exit_code == 1);
  CHECK(Contains(b.output, "forward"));
  CHECK(Listing(dir.path()) == std::vector<std::string>{"cases.json"});
  Run bad = Etpack({"bundle", Golden("pte_constants.pte"), "--cases", dir / "cases.json", "-o",
                    dir / "x.bpte", "--layout", "sideways"});
  CHECK(bad.exit_code == 2);
}

TEST_CASE("verify and inspect read golden bundled programs") {
  for (const char* f :
       {"bpte_basic.bpte", "bpte_multi_method.bpte", "upstream/bundled_program.bpte"}) {
    Run v = Etpack({"verify", Golden(f)});
    INFO(v.output);
    CHECK(v.exit_code == 0);
    Run j = Etpack({"inspect", "--json", Golden(f)});
    REQUIRE(j.exit_code == 0);
    auto doc = etpack::json::Parse(j.output);
    REQUIRE(doc.ok());
    CHECK(doc->Find("kind")->as_string() == "bpte");  // as "pte" and "ptd"
    CHECK(doc->Find("format") == nullptr);
    CHECK(doc->Find("program")->Find("methods") != nullptr);
  }
}
