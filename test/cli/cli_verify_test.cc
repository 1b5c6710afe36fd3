// End-to-end tests of `etpack verify`: what it accepts and what it refuses,
// naming the file, the field and the value; --data for external tensors.

#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>
#include "catch.h"

#include "cli_test_util.h"

using namespace etpack::testing::cli;

namespace {

std::string Le32s(std::initializer_list<int32_t> xs) {
  std::string s;
  for (int32_t x : xs) {
    for (int i = 0; i < 4; ++i)
      s += static_cast<char>((static_cast<uint32_t>(x) >> (8 * i)) & 0xff);
  }
  return s;
}

}  // namespace

TEST_CASE("verify reports a missing file as invalid") {
  TempDir dir;
  const std::string missing = dir / "nope.pte";
  Run run = Etpack({"verify", missing});
  INFO(run.output);
  CHECK(run.exit_code == 1);
  CHECK(Contains(run.output, missing));
}

TEST_CASE("verify --data checks external references") {
  const std::string pte = Golden("pte_external.pte");
  Run ok = Etpack({"verify", pte, "--data", Golden("ptd_basic.ptd")});
  INFO(ok.output);
  CHECK(ok.exit_code == 0);
  CHECK(Contains(ok.output, pte + ": ok"));
  CHECK(Contains(ok.output, "3 external tensors resolve"));

  Run alone = Etpack({"verify", pte});
  INFO(alone.output);
  CHECK(alone.exit_code == 0);
  CHECK(Contains(alone.output, "3 external tensors not checked"));

  Run wrong = Etpack({"verify", pte, "--data", Golden("ptd_shared_blob.ptd")});
  INFO(wrong.output);
  CHECK(wrong.exit_code == 1);
  CHECK(Contains(wrong.output, pte + ": invalid: "));
  CHECK(Contains(wrong.output, "'linear.weight'"));

  Run twice =
      Etpack({"verify", pte, "--data", Golden("ptd_basic.ptd"), "--data", Golden("ptd_basic.ptd")});
  INFO(twice.output);
  CHECK(twice.exit_code == 1);
  CHECK(Contains(twice.output, "key 'linear.weight' is in both"));

  Run not_ptd = Etpack({"verify", pte, "--data", Golden("pte_constants.pte")});
  INFO(not_ptd.output);
  CHECK(not_ptd.exit_code == 1);
  CHECK(Contains(not_ptd.output, "pte_constants.pte: invalid"));

  Run neither = Etpack({"verify", Golden("README.md")});
  INFO(neither.output);
  CHECK(neither.exit_code == 1);
  CHECK(Contains(neither.output, "none of ET12 (.pte), FT01 (.ptd), BP08 (.bpte)"));
}

TEST_CASE("counts of one are singular") {
  Run verify = Etpack({"verify", Golden("pte_external.pte"), "--data", Golden("ptd_basic.ptd")});
  INFO(verify.output);
  CHECK(Contains(verify.output, ": ok (1 method, 1 segment, 1540 bytes; 3 external tensors "));
  Run text = Etpack({"inspect", Golden("pte_named_data.pte")});
  INFO(text.output);
  CHECK(Contains(text.output, "constants:           1 tensor, 24 bytes"));
}

TEST_CASE("verify refuses indices and strings the runtime refuses, naming field and value") {
  TempDir dir;
  const std::string golden = ReadAll(Golden("pte_constants.pte"));
  struct Case {
    std::string bytes;
    const char* fragment;
  };
  const std::vector<Case> cases = {
      // The method's inputs (and its chain's), [0, 7, 8, 9] -> [0, 12345, 8, 9].
      {ReplaceAll(golden, Le32s({4, 0, 7, 8, 9}), Le32s({4, 0, 12345, 8, 9})),
       "execution_plan[0].inputs[1] = 12345 is out of range"},
      // The first kernel call's arguments [0, 1, 10, 12, 12] -> [0, 999, ...].
      {ReplaceAll(golden, Le32s({5, 0, 1, 10, 12, 12}), Le32s({5, 0, 999, 10, 12, 12})),
       "execution_plan[0].chains[0].instructions[0].instr_args.args[1] = 999 is out of range"},
      {ReplaceAll(golden, "forward",
                  "forw\xff"
                  "rd"),
       "execution_plan[0].name is not valid UTF-8"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string path = dir / ("bad" + std::to_string(i) + ".pte");
    std::ofstream(path, std::ios::binary) << cases[i].bytes;
    Run run = Etpack({"verify", path});
    INFO(run.output);
    CHECK(run.exit_code == 1);
    CHECK(Contains(run.output, path + ": invalid: "));
    CHECK(Contains(run.output, cases[i].fragment));
  }
}

TEST_CASE("verify refuses a program and .ptd beside the markers of an interrupted write") {
  TempDir dir;
  const std::string pte = dir / "m.pte", ptd = dir / "m.ptd";
  for (int i = 0; i < 2; ++i) {  // new files, then replacing them: no marker left
    Run run =
        Etpack({"repack", Golden("pte_constants.pte"), "-o", pte, "--external-constants", ptd});
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    CHECK(Listing(dir.path()).size() == 2);
  }
  CHECK(Etpack({"verify", pte, ptd}).exit_code == 0);
  // What a write killed between its two renames leaves (publish_unit kills
  // one at each step).
  const std::string marker = dir / ".m.pte.etpack-publishing";
  WriteFileText(marker, "etpack-publishing 1\n" + ptd + "\n" + pte + "\n");
  Run refused = Etpack({"verify", pte, ptd});
  INFO(refused.output);
  CHECK(refused.exit_code == 1);
  CHECK(Contains(refused.output, pte + ": invalid: "));
  CHECK(Contains(refused.output, marker + " says its unit (" + ptd + ", " + pte + ")"));
  CHECK(Contains(refused.output, "write the unit again"));
  // Writing the unit again clears it.
  REQUIRE(Etpack({"repack", Golden("pte_constants.pte"), "-o", pte, "--external-constants", ptd})
              .exit_code == 0);
  CHECK(Listing(dir.path()).size() == 2);
  CHECK(Etpack({"verify", pte, ptd}).exit_code == 0);
}
