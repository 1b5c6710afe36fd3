// End-to-end tests of how the `etpack` binary reads its command line: usage
// errors (exit 2, one line naming the command and its help), --help and
// each command's help, -o, and the bounds of the alignment options.

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>
#include "catch.h"

#include "cli_test_util.h"
#include "etpack/etpack_c.h"
#include "etpack/json.h"

namespace fs = std::filesystem;

using namespace etpack::testing::cli;

TEST_CASE("--version prints the version the library was built as") {
  const Run run = Etpack({"--version"});
  CHECK(run.exit_code == 0);
  CHECK(run.output == std::string("etpack ") + etpack_version() + "\n");
}

TEST_CASE("usage errors exit 2") {
  TempDir dir;
  const std::string pte = Golden("pte_constants.pte");
  const std::vector<std::vector<std::string>> cases = {
      {},
      {"frobnicate"},
      {"verify"},
      {"verify", pte, pte},
      {"inspect", pte, "--bogus"},
      {"repack", pte},
      {"repack", pte, "-o"},
      {"repack", pte, "-o", dir / "x.pte", "--segment-alignment", "100"},
      {"pack", Golden("pte_constants.input.json"), "-o", dir / "x.pte", "--constant-alignment",
       "three"},
      {"demo", "--size", "12 parsecs"},
      {"demo", "--size", "1K"},
      {"demo", "extra"},
      {"verify", Golden("ptd_basic.ptd"), "--data", Golden("ptd_basic.ptd")},
      {"verify", pte, "--data"},
      {"repack", pte, "-o", dir / "x.pte", "--external-constants", dir / "x.pte"},
      {"pack", Golden("ptd_basic.input.json"), "-o", dir / "x.ptd", "--constant-alignment", "64"},
      {"ptd"},
      {"ptd", dir / "w.safetensors"},
      {"ptd", dir / "w.safetensors", "-o", dir / "x.ptd", "--align", "100"},
      {"ptd", "-o", dir / "x.ptd"},
      {"ptd", dir / "w.safetensors", "-o", "-"},
      {"ptd", dir / "w.safetensors", "-o", dir / "x.ptd", "--output", dir / "y.ptd"},
      {"inspect", pte, "--json", "--json"},
      {"bundle", pte, "--cases", dir / "c.json", "--cases", dir / "d.json", "-o", dir / "x.bpte"},
  };
  for (const auto& args : cases) {
    Run run = Etpack(args);
    INFO(run.output);
    CHECK(run.exit_code == 2);
    // One line saying what is wrong, one saying where help is: no help page.
    CHECK(Contains(run.output, "etpack: "));
    CHECK(Contains(run.output, "try 'etpack "));
    CHECK_FALSE(Contains(run.output, "usage:"));
    CHECK(std::count(run.output.begin(), run.output.end(), '\n') == 2);
  }
  CHECK(Listing(dir.path()).empty());
}

TEST_CASE("a usage error names its command and that command's help") {
  Run run = Etpack({"ptd"});
  CHECK(run.exit_code == 2);
  CHECK(run.output ==
        "etpack: ptd: give at least one .safetensors file or model.safetensors.index.json\n"
        "try 'etpack ptd --help'\n");
  // Every command's usage errors point at that command's help.
  const std::vector<std::vector<std::string>> commands = {
      {"compress", "a", "b"},
      {"compress", "x", "-o", "y", "--level", "0"},
      {"decompress", "x"},
      {"decompress", "x", "-o", "y", "--tensor", "a", "--segment", "0"},
      {"extract", "x.pte"},
      {"extract", "x.pte", "-o", "y", "--delegate", "z"},
      {"inspect", "x.pte", "--digest", "md5"}};
  for (const auto& args : commands) {
    run = Etpack(args);
    INFO(run.output);
    CHECK(run.exit_code == 2);
    CHECK(run.output.rfind("etpack: " + args[0] + ": ", 0) == 0);
    CHECK(Contains(run.output, "\ntry 'etpack " + args[0] + " --help'\n"));
  }
  run = Etpack({"frobnicate"});
  CHECK(run.exit_code == 2);
  CHECK(run.output == "etpack: unknown command 'frobnicate'\ntry 'etpack --help'\n");
  run = Etpack({"frobnicate", "--help"});
  CHECK(run.exit_code == 2);
  CHECK(Contains(run.output, "unknown command 'frobnicate'"));
}

TEST_CASE("--help lists the commands and succeeds") {
  Run run = Etpack({"--help"});
  CHECK(run.exit_code == 0);
  CHECK(Contains(run.output, "usage: etpack COMMAND"));
  for (const char* command :
       {"inspect", "verify", "repack", "pack", "ptd", "bundle", "unbundle", "demo"}) {
    CHECK(Contains(run.output, command));
  }
  CHECK(Contains(run.output, "etpack COMMAND --help"));
  // inspect and verify read all three kinds.
  CHECK(Contains(run.output, "inspect    show the layout of a .pte, .ptd or .bpte"));
  CHECK(Contains(run.output, "verify     validate a .pte, .ptd or .bpte"));
}

TEST_CASE("each command has its own help") {
  const std::vector<std::pair<std::string, std::string>> options = {
      {"inspect", "--json"},
      {"verify", "--data"},
      {"repack", "--external-constants"},
      {"pack", "--constant-alignment"},
      {"ptd", "--align"},
      {"bundle", "--program-alignment"},
      {"unbundle", "-o, --output"},
      {"demo", "--size"}};
  for (const auto& [command, option] : options) {
    INFO(command);
    for (const std::vector<std::string>& args : {std::vector<std::string>{command, "--help"},
                                                 {command, "-h"},
                                                 {"help", command},
                                                 {command, "x", "--bogus", "--help"}}) {
      Run run = Etpack(args);
      CHECK(run.exit_code == 0);
      CHECK(run.output.rfind("usage: etpack " + command + " ", 0) == 0);
      CHECK(Contains(run.output, option));
      CHECK_FALSE(Contains(run.output, "Commands:"));
    }
  }
  CHECK(Contains(Etpack({"verify", "--help"}).output, ".pte, .ptd or .bpte"));
}

TEST_CASE("-o names a file, once") {
  TempDir dir;
  const std::string pte = Golden("pte_constants.pte");
  Run dash = Etpack({"repack", pte, "-o", "-"});
  CHECK(dash.exit_code == 2);
  CHECK(Contains(dash.output,
                 "etpack: repack: -o '-': name an output file (etpack does not write to "
                 "standard output)"));
  Run twice = Etpack({"repack", pte, "-o", dir / "a.pte", "-o", dir / "b.pte"});
  CHECK(twice.exit_code == 2);
  CHECK(Contains(twice.output, "etpack: repack: option -o/--output given twice ('" + dir / "a.pte" +
                                   "' and '" + dir / "b.pte" + "')"));
  Run spelled = Etpack({"repack", pte, "--output=" + dir / "a.pte", "-o", dir / "b.pte"});
  CHECK(spelled.exit_code == 2);
  CHECK(Contains(spelled.output, "given twice"));
  Run ext = Etpack({"repack", pte, "-o", dir / "a.pte", "--external-constants", "-"});
  CHECK(ext.exit_code == 2);
  CHECK(Listing(dir.path()).empty());
  CHECK_FALSE(fs::exists("-"));
  // --data stays repeatable.
  Run data = Etpack({"verify", Golden("pte_external.pte"), "--data", Golden("ptd_basic.ptd"),
                     "--data", Golden("ptd_basic.ptd")});
  CHECK(data.exit_code == 1);
  CHECK(Contains(data.output, "is in both"));
}

TEST_CASE("alignment options are bounded: usage error naming the option, value and bound") {
  TempDir dir;
  const std::string pte = Golden("pte_constants.pte");
  const std::string st = dir / "w.safetensors";
  WriteFileText(st, "");  // never read: the flags are checked first
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"ptd", st, "-o", dir / "x.ptd", "--align", "8GiB"},
       "etpack: ptd: --align = 8GiB (8589934592) exceeds the maximum of 1073741824 (1 GiB)"},
      {{"repack", pte, "-o", dir / "x.pte", "--segment-alignment", "2147483648"},
       "etpack: repack: --segment-alignment = 2147483648 exceeds the maximum of 1073741824 "
       "(1 GiB)"},
      {{"repack", pte, "-o", dir / "x.pte", "--constant-alignment", "128K"},
       "etpack: repack: --constant-alignment = 128K (131072) exceeds the maximum of 65536 "
       "(64 KiB)"},
      {{"pack", Golden("pte_constants.input.json"), "-o", dir / "x.pte", "--constant-alignment",
        "1MiB"},
       "etpack: pack: --constant-alignment = 1MiB (1048576) exceeds the maximum of 65536 (64 KiB)"},
      {{"pack", Golden("ptd_basic.input.json"), "-o", dir / "x.ptd", "--segment-alignment", "2G"},
       "etpack: pack: --segment-alignment = 2G (2147483648) exceeds the maximum of 1073741824 "
       "(1 GiB)"},
      {{"bundle", pte, "--cases", dir / "c.json", "-o", dir / "x.bpte", "--layout", "segmented",
        "--program-alignment", "2GiB"},
       "etpack: bundle: --program-alignment = 2GiB (2147483648) exceeds the maximum of "
       "1073741824 (1 GiB)"},
  };
  for (const auto& [args, message] : cases) {
    Run run = Etpack(args);
    INFO(run.output);
    CHECK(run.exit_code == 2);
    CHECK(Contains(run.output, message + "\n"));
  }
  // The bound itself is allowed.
  Run at_bound = Etpack({"repack", pte, "-o", dir / "x.pte", "--constant-alignment", "64KiB"});
  INFO(at_bound.output);
  CHECK(at_bound.exit_code == 0);
  fs::remove(dir / "x.pte");

  // A manifest's alignment fields: a failure naming the file and the field.
  auto doc = etpack::json::ParseFile(Golden("ptd_basic.input.json"));
  REQUIRE(doc.ok());
  doc->Set("serializer_options",
           etpack::json::Value::Object(
               {{"segment_alignment", etpack::json::Value::UInt(uint64_t{8} << 30)}}));
  const std::string manifest = dir / "big.json";
  WriteFileText(manifest, etpack::json::Print(*doc));
  Run run = Etpack({"pack", manifest, "-o", dir / "x.ptd"});
  INFO(run.output);
  CHECK(run.exit_code == 1);
  CHECK(Contains(run.output, "etpack: " + manifest +
                                 ": serializer_options.segment_alignment = 8589934592 exceeds the "
                                 "maximum of 1073741824 (1 GiB)"));
  CHECK_FALSE(fs::exists(dir / "x.ptd"));
}
