// End-to-end tests of `etpack share` (the library's are test/share/share_test.cc):
// the report, --json, --dry-run, the files written and what verify says of
// them, and the refusals.

#include <sys/wait.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>
#include "catch.h"

#include "cli_test_util.h"
#include "etpack/json.h"
#include "etpack/ptd.h"
#include "etpack/pte.h"
#include "test_programs.h"

namespace fs = std::filesystem;

using namespace etpack::testing::cli;
using etpack::json::Value;

namespace {

// Variant v of a family: weights shared by all (8 KiB, 16 KiB), a mask of
// its own size, named data shared by all.
std::vector<std::string> WriteFamily(const TempDir& dir, int n) {
  using etpack::testing::Pattern;
  std::vector<std::string> paths;
  for (int v = 0; v < n; ++v) {
    etpack::PteInput in = etpack::testing::SmallProgram(
        {Pattern(8192, 1), Pattern(16384, 2), Pattern(4096 * (v + 1), 50 + v)});
    in.named_data = {{"xnn.weight", Pattern(6000, 9), 16}};
    paths.push_back(dir / ("v" + std::to_string(v) + ".pte"));
    REQUIRE(etpack::WritePte(paths.back(), std::move(in)).ok());
  }
  return paths;
}

Value ParseJson(const Run& run) {
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  auto doc = etpack::json::Parse(run.output, "share --json");
  REQUIRE(doc.ok());
  return std::move(doc).value();
}

std::vector<std::string> Args(std::vector<std::string> head, const std::vector<std::string>& in,
                              std::vector<std::string> tail) {
  head.insert(head.end(), in.begin(), in.end());
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

}  // namespace

TEST_CASE("share: writes thin programs and one shared file that verify together") {
  TempDir dir;
  const std::vector<std::string> in = WriteFamily(dir, 3);
  const std::string out = dir / "out";  // made by the command
  Run run = Etpack(Args({"share"}, in, {"-o", out}));
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(Contains(run.output, "shared.ptd"));
  CHECK(Contains(run.output, "saved:"));
  CHECK(Contains(run.output, "shared:  "));
  for (int v = 0; v < 3; ++v) {
    const std::string thin = out + "/v" + std::to_string(v) + ".pte";
    Run verify = Etpack({"verify", thin, out + "/shared.ptd"});
    INFO(verify.output);
    CHECK(verify.exit_code == 0);
    CHECK(fs::file_size(thin) < fs::file_size(in[v]));
  }
  // The inputs are untouched and the outputs are exactly these, with the
  // marker that makes OUTDIR share's own.
  CHECK(Listing(out).size() == 5);
}

TEST_CASE("share --json: one object, the report and what was written") {
  TempDir dir;
  const std::vector<std::string> in = WriteFamily(dir, 2);
  const Value j = ParseJson(Etpack(Args({"share", "--json"}, in, {"-o", dir / "out"})));
  REQUIRE(j.Find("files")->items().size() == 2);
  CHECK(j.Find("entries")->items().size() == 3);  // w1, w2, xnn.weight
  CHECK(j.Find("written")->items().size() == 3);
  CHECK(j.Find("bytes_saved")->as_int() > 0);
  CHECK(j.Find("bytes_written")->as_uint() > 0);
  const Value& f = j.Find("files")->items()[0];
  CHECK(f.Find("output")->as_string() == dir / "out/v0.pte");
  CHECK(f.Find("data")->items().size() == 1);
}

TEST_CASE("share --dry-run writes nothing and prints the same report") {
  TempDir dir;
  const std::vector<std::string> in = WriteFamily(dir, 2);
  Run text = Etpack(Args({"share", "--dry-run"}, in, {"-o", dir / "out"}));
  INFO(text.output);
  REQUIRE(text.exit_code == 0);
  CHECK(Contains(text.output, "nothing written"));
  CHECK_FALSE(fs::exists(dir / "out"));
  const Value dry =
      ParseJson(Etpack(Args({"share", "--dry-run", "--json"}, in, {"-o", dir / "out"})));
  CHECK(dry.Find("dry_run")->as_bool());
  CHECK_FALSE(fs::exists(dir / "out"));
  const Value wet = ParseJson(Etpack(Args({"share", "--json"}, in, {"-o", dir / "out"})));
  for (const char* field : {"files", "entries", "shared_bytes", "bytes_after", "stayed"}) {
    INFO(field);
    CHECK(*dry.Find(field) == *wet.Find(field));
  }
}

TEST_CASE("share: --data, --max-shard-bytes, --min-bytes and --align") {
  TempDir dir;
  const std::vector<std::string> in = WriteFamily(dir, 2);
  const Value j =
      ParseJson(Etpack(Args({"share", "--json"}, in,
                            {"-o", dir / "out", "--data", "weights.ptd", "--max-shard-bytes",
                             "40000", "--min-bytes", "10000", "--align", "4096"})));
  // Only w2 (16 KiB) is at least 10000 bytes: one key, one shard.
  REQUIRE(j.Find("entries")->items().size() == 1);
  const auto& shards = j.Find("shared_files")->items();
  REQUIRE(shards.size() == 1);
  CHECK(Contains(shards[0].as_string(), "/weights-"));
  Run verify = Etpack({"verify", dir / "out/v1.pte", shards[0].as_string()});
  INFO(verify.output);
  CHECK(verify.exit_code == 0);
}

TEST_CASE("share: two .ptd files holding one key with different bytes: refused, nothing written") {
  TempDir dir;
  std::vector<std::string> in = WriteFamily(dir, 2);
  for (int i = 0; i < 2; ++i) {
    etpack::PtdInput data;
    data.buffers = {etpack::testing::Pattern(5000, static_cast<uint8_t>(90 + i))};
    data.entries = {{"emb", 0, 16, etpack::TensorLayout{0, {5000}, {0}}}};
    in.push_back(dir / ("d" + std::to_string(i) + ".ptd"));
    REQUIRE(etpack::WritePtd(in.back(), data).ok());
  }
  Run run = Etpack(Args({"share"}, in, {"-o", dir / "out"}));
  INFO(run.output);
  CHECK(run.exit_code == 1);
  CHECK(Contains(run.output, "'emb'"));
  CHECK(Contains(run.output, in[2]));
  CHECK(Contains(run.output, in[3]));
  CHECK_FALSE(fs::exists(dir / "out"));
}

TEST_CASE("share: an output that is an input is refused") {
  TempDir dir;
  const std::vector<std::string> in = WriteFamily(dir, 2);
  const std::string before = ReadAll(in[0]);
  Run run = Etpack(Args({"share"}, in, {"-o", dir.path().string()}));
  INFO(run.output);
  CHECK(run.exit_code == 1);
  CHECK(Contains(run.output, "refusing to overwrite an input"));
  CHECK(ReadAll(in[0]) == before);
  CHECK_FALSE(fs::exists(dir / "shared.ptd"));
}

TEST_CASE("share: usage errors") {
  TempDir dir;
  const std::vector<std::string> in = WriteFamily(dir, 2);
  CHECK(Etpack({"share", in[0], "-o", dir / "out"}).exit_code == 2);
  CHECK(Etpack({"share", in[0], in[1]}).exit_code == 2);
  CHECK(Etpack(Args({"share"}, in, {"-o", dir / "out", "--align", "3"})).exit_code == 2);
  CHECK(Etpack(Args({"share"}, in, {"-o", dir / "out", "--min-bytes", "x"})).exit_code == 2);
  Run help = Etpack({"share", "--help"});
  CHECK(help.exit_code == 0);
  CHECK(Contains(help.output, "--min-bytes"));
  CHECK_FALSE(fs::exists(dir / "out"));
}

TEST_CASE("share: a re-share leaves exactly the new unit, which verifies") {
  TempDir dir;
  const std::vector<std::string> in = WriteFamily(dir, 3);
  const std::string out = dir / "out";
  REQUIRE(Etpack(Args({"share"}, in, {"-o", out, "--max-shard-bytes", "20000"})).exit_code == 0);
  REQUIRE(Listing(out).size() > 5);
  // Other shards, v2 dropped from the family: nothing of the first unit stays.
  const Run again = Etpack(Args({"share"}, {in[0], in[1]}, {"-o", out}));
  INFO(again.output);
  REQUIRE(again.exit_code == 0);
  std::vector<std::string> names = Listing(out);
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{".etpack-unit", "shared.ptd", "v0.pte", "v1.pte"});
  std::vector<std::string> hidden = Listing(dir.path());
  CHECK(std::count_if(hidden.begin(), hidden.end(),
                      [](const std::string& n) { return n.rfind(".out.", 0) == 0; }) == 0);
  // The documented check: every program with OUTDIR/*.ptd.
  for (const char* p : {"v0.pte", "v1.pte"}) {
    const Run verify = Etpack({"verify", out + "/" + p, out + "/shared.ptd"});
    INFO(verify.output);
    CHECK(verify.exit_code == 0);
  }
}

TEST_CASE("share: a failed share leaves neither OUTDIR nor the parents it made") {
  TempDir dir;
  const std::vector<std::string> in = WriteFamily(dir, 2);
  const std::string out = dir / "p/q/out";
  // A full disk: the files may not grow past 4 KiB.
  std::string cmd = "ulimit -f 4; exec " + Quote(Bin()) + " share";
  for (const std::string& p : in) cmd += " " + Quote(p);
  cmd += " -o " + Quote(out) + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string output;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) output.append(buf, n);
  const int status = pclose(pipe);
  INFO(output);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) != 0);
  CHECK_FALSE(fs::exists(dir / "p"));
}

TEST_CASE("share: a folder share did not write is refused, untouched") {
  TempDir dir;
  const std::vector<std::string> in = WriteFamily(dir, 2);
  const std::string out = dir / "out";
  fs::create_directories(out);
  WriteFileText(out + "/README", "mine");
  const Run run = Etpack(Args({"share"}, in, {"-o", out}));
  INFO(run.output);
  CHECK(run.exit_code != 0);
  CHECK(Contains(run.output, "README"));
  CHECK(Listing(out) == std::vector<std::string>{"README"});
}
