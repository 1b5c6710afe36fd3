// End-to-end tests of the `etpack` binary ($ETPACK_BIN): exit codes,
// messages and the files it leaves behind.

#include <stdlib.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "etpack/json.h"

namespace fs = std::filesystem;

namespace {

struct Run {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q += c;
    }
  }
  return q + "'";
}

std::string Bin() {
  const char* bin = std::getenv("ETPACK_BIN");
  REQUIRE(bin != nullptr);
  return bin;
}

std::string Golden(const std::string& name) {
  const char* dir = std::getenv("ETPACK_GOLDEN_DIR");
  REQUIRE(dir != nullptr);
  return (fs::path(dir) / name).string();
}

Run Etpack(const std::vector<std::string>& args) {
  std::string cmd = Quote(Bin());
  for (const std::string& a : args) cmd += " " + Quote(a);
  cmd += " 2>&1";
  Run run;
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) run.output.append(buf, n);
  const int status = pclose(pipe);
  REQUIRE(WIFEXITED(status));
  run.exit_code = WEXITSTATUS(status);
  return run;
}

// A fresh directory, removed with everything in it at the end of the test.
class TempDir {
 public:
  TempDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/etpack-cli-XXXXXX";
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::vector<std::string> Listing(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  return names;
}

}  // namespace

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

TEST_CASE("inspect --json describes delegates, named data and alignments") {
  using etpack::json::Value;
  Run del = Etpack({"inspect", "--json", Golden("pte_delegates.pte")});
  INFO(del.output);
  REQUIRE(del.exit_code == 0);
  auto d = etpack::json::Parse(del.output, "inspect --json");
  REQUIRE(d.ok());
  const std::vector<Value>& delegates = d->Find("delegates")->items();
  REQUIRE(delegates.size() == 4);
  CHECK(delegates[0].Find("backend")->as_string() == "BackendAlpha");
  CHECK(delegates[0].Find("location")->as_string() == "segment 1");
  CHECK(delegates[0].Find("size")->as_uint() == 300);
  CHECK(delegates[1].Find("location")->as_string() == "inline 0");
  CHECK(delegates[1].Find("size")->as_uint() == 0);
  CHECK(delegates[3].Find("size")->as_uint() == 1000);

  Run named = Etpack({"inspect", "--json", Golden("pte_named_data.pte")});
  INFO(named.output);
  REQUIRE(named.exit_code == 0);
  auto n = etpack::json::Parse(named.output, "inspect --json");
  REQUIRE(n.ok());
  const std::vector<Value>& entries = n->Find("named_data")->items();
  REQUIRE(entries.size() == 4);
  CHECK(entries[2].Find("key")->as_string() == "blob.b_alias");
  CHECK(entries[2].Find("segment")->as_uint() == 2);
  CHECK(entries[2].Find("size")->as_uint() == 200);
  CHECK(n->Find("constants")->Find("tensors")->as_uint() == 1);
  CHECK(n->Find("constants")->Find("bytes")->as_uint() == 24);

  const uint64_t base = n->Find("extended_header")->Find("segment_base_offset")->as_uint();
  const std::vector<Value>& segments = n->Find("segments")->items();
  REQUIRE(segments.size() == 4);
  CHECK(segments[1].Find("role")->as_string() == "named_data");
  for (const Value& seg : segments) {
    const uint64_t absolute = seg.Find("absolute_offset")->as_uint();
    const uint64_t alignment = seg.Find("alignment")->as_uint();
    CHECK(absolute == base + seg.Find("offset")->as_uint());
    // The largest power of two dividing the offset: twice it must not divide.
    CHECK((alignment & (alignment - 1)) == 0);
    CHECK(absolute % alignment == 0);
    CHECK(absolute % (2 * alignment) != 0);
  }
}

TEST_CASE("verify reports a missing file as invalid") {
  TempDir dir;
  const std::string missing = dir / "nope.pte";
  Run run = Etpack({"verify", missing});
  INFO(run.output);
  CHECK(run.exit_code == 1);
  CHECK(Contains(run.output, missing));
}

TEST_CASE("repack of a golden file verifies") {
  TempDir dir;
  const std::string out = dir / "repacked.pte";
  Run run = Etpack({"repack", Golden("pte_constants.pte"), "-o", out, "--segment-alignment",
                    "4096", "--constant-alignment", "64"});
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  Run verify = Etpack({"verify", out});
  INFO(verify.output);
  CHECK(verify.exit_code == 0);

  Run js = Etpack({"inspect", "--json", out});
  REQUIRE(js.exit_code == 0);
  auto doc = etpack::json::Parse(js.output, "inspect --json");
  REQUIRE(doc.ok());
  const auto& header = *doc->Find("extended_header");
  CHECK(header.Find("segment_base_offset")->as_uint() % 4096 == 0);
  for (const auto& seg : doc->Find("segments")->items()) {
    CHECK(seg.Find("alignment")->as_uint() >= 4096);
  }
}

TEST_CASE("pack of a golden manifest verifies") {
  TempDir dir;
  const std::string out = dir / "packed.pte";
  Run run = Etpack({"pack", Golden("pte_constants.input.json"), "-o", out});
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(Contains(run.output, out));
  Run verify = Etpack({"verify", out});
  INFO(verify.output);
  CHECK(verify.exit_code == 0);
}

TEST_CASE("pack of a manifest naming a missing file fails cleanly") {
  TempDir dir;
  fs::create_directory(dir.path() / "out");
  // The golden manifest with one constant moved to a file that is not there,
  // so the missing file is the only thing wrong with it.
  std::ifstream in(Golden("pte_constants.input.json"));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto doc = etpack::json::Parse(text, "pte_constants.input.json");
  REQUIRE(doc.ok());
  etpack::json::Value& buffers = *doc->Find("program")->Find("constant_buffer");
  REQUIRE(buffers.items().size() >= 2);
  buffers.items()[1].Set("storage", etpack::json::Value::Object(
                                        {{"file", etpack::json::Value::String("missing-weights.bin")}}));
  const std::string manifest = dir / "manifest.json";
  std::ofstream(manifest) << etpack::json::Print(*doc, 1);

  Run run = Etpack({"pack", manifest, "-o", dir / "out/model.pte"});
  INFO(run.output);
  CHECK(run.exit_code == 1);
  CHECK(Contains(run.output, "etpack: "));
  CHECK(Contains(run.output, "missing-weights.bin"));
  CHECK(Listing(dir.path() / "out").empty());
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
  };
  for (const auto& args : cases) {
    Run run = Etpack(args);
    INFO(run.output);
    CHECK(run.exit_code == 2);
    CHECK(Contains(run.output, "etpack: "));
    CHECK(Contains(run.output, "usage: etpack"));
  }
  CHECK(Listing(dir.path()).empty());
}

TEST_CASE("--help prints usage and succeeds") {
  Run run = Etpack({"--help"});
  CHECK(run.exit_code == 0);
  CHECK(Contains(run.output, "usage: etpack"));
  for (const char* command : {"inspect", "verify", "repack", "pack", "demo"}) {
    CHECK(Contains(run.output, command));
  }
}
