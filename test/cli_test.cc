// End-to-end tests of the `etpack` binary ($ETPACK_BIN): exit codes,
// messages and the files it leaves behind.

#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include "etpack/json.h"
#include "etpack/ptd.h"
#include "test_files.h"

namespace fs = std::filesystem;

namespace {

using etpack::testing::Contains;
using etpack::testing::Golden;

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

void WriteFileText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  REQUIRE(out.good());
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
  Run run = Etpack({"repack", Golden("pte_constants.pte"), "-o", out, "--segment-alignment", "4096",
                    "--constant-alignment", "64"});
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
  buffers.items()[1].Set(
      "storage",
      etpack::json::Value::Object({{"file", etpack::json::Value::String("missing-weights.bin")}}));
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

TEST_CASE("pack names the manifest and the program. path of a program-tree error") {
  TempDir dir;
  auto doc = etpack::json::ParseFile(Golden("pte_constants.input.json"));
  REQUIRE(doc.ok());
  doc->Find("program")->Set("bogus_field", etpack::json::Value::Int(1));
  const std::string manifest = dir / "m.json";
  WriteFileText(manifest, etpack::json::Print(*doc));
  Run run = Etpack({"pack", manifest, "-o", dir / "x.pte"});
  CHECK(run.exit_code == 1);
  CHECK(run.output ==
        "etpack: " + manifest + ": program.bogus_field: unknown member of table Program\n");
  CHECK_FALSE(fs::exists(dir / "x.pte"));
}

TEST_CASE("a .ptd manifest without \"format\" is told so") {
  TempDir dir;
  auto doc = etpack::json::ParseFile(Golden("ptd_basic.input.json"));
  REQUIRE(doc.ok());
  std::vector<etpack::json::Value::Member> kept;
  for (auto& m : doc->members()) {
    if (m.first != "format") kept.push_back(m);
  }
  const std::string manifest = dir / "w.json";  // its blobs are inline
  WriteFileText(manifest, etpack::json::Print(etpack::json::Value::Object(std::move(kept))));
  Run run = Etpack({"pack", manifest, "-o", dir / "x.ptd"});
  CHECK(run.exit_code == 1);
  CHECK(Contains(run.output, manifest + ": has no \"format\" member; a .ptd manifest"));
  CHECK(Contains(run.output, "needs \"format\": \"ptd\""));
  CHECK_FALSE(Contains(run.output, "unknown member"));
}

// ------------------------------------------------------------ .ptd commands

namespace {

std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
}

etpack::json::Value InspectJson(const std::string& path) {
  Run js = Etpack({"inspect", "--json", path});
  INFO(js.output);
  REQUIRE(js.exit_code == 0);
  auto doc = etpack::json::Parse(js.output, "inspect --json");
  REQUIRE(doc.ok());
  return std::move(doc).value();
}

struct StTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

// A minimal safetensors writer: u64 header length, JSON header, data.
void WriteSafetensors(const std::string& path, const std::vector<StTensor>& tensors) {
  using etpack::json::Value;
  std::vector<Value::Member> header;
  std::vector<uint8_t> data;
  for (const StTensor& t : tensors) {
    std::vector<Value> shape;
    for (int64_t d : t.shape) shape.push_back(Value::Int(d));
    const uint64_t begin = data.size();
    data.insert(data.end(), t.bytes.begin(), t.bytes.end());
    header.emplace_back(
        t.name, Value::Object({{"dtype", Value::String(t.dtype)},
                               {"shape", Value::Array(std::move(shape))},
                               {"data_offsets",
                                Value::Array({Value::UInt(begin), Value::UInt(data.size())})}}));
  }
  header.emplace_back("__metadata__", Value::Object({{"format", Value::String("pt")}}));
  const std::string text = etpack::json::Print(Value::Object(std::move(header)));
  std::ofstream out(path, std::ios::binary);
  const uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>(n >> (8 * i)));
  out << text;
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  REQUIRE(out.good());
}

std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(seed + i * 13);
  return b;
}

}  // namespace

TEST_CASE("pack of a .ptd manifest verifies and serves pte_external") {
  TempDir dir;
  const std::string out = dir / "weights.ptd";
  Run run = Etpack({"pack", Golden("ptd_basic.input.json"), "-o", out});
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(Contains(run.output, "wrote " + out));
  Run verify = Etpack({"verify", out});
  INFO(verify.output);
  CHECK(verify.exit_code == 0);
  CHECK(Contains(verify.output, out + ": ok (.ptd, 3 entries"));
  Run ext = Etpack({"verify", Golden("pte_external.pte"), "--data", out});
  INFO(ext.output);
  CHECK(ext.exit_code == 0);
  // Segment data equals the reference's, byte for byte.
  const etpack::json::Value mine = InspectJson(out);
  const etpack::json::Value ref = InspectJson(Golden("ptd_basic.ptd"));
  const uint64_t size = mine.Find("header")->Find("segment_data_size")->as_uint();
  REQUIRE(size == ref.Find("header")->Find("segment_data_size")->as_uint());
  const uint64_t base = mine.Find("header")->Find("segment_base_offset")->as_uint();
  const uint64_t ref_base = ref.Find("header")->Find("segment_base_offset")->as_uint();
  const auto a = ReadFile(out), b = ReadFile(Golden("ptd_basic.ptd"));
  CHECK(std::vector<uint8_t>(a.begin() + base, a.end()) ==
        std::vector<uint8_t>(b.begin() + ref_base, b.begin() + ref_base + size));

  SECTION("--segment-alignment overrides the manifest") {
    const std::string wide = dir / "wide.ptd";
    Run r =
        Etpack({"pack", Golden("ptd_basic.input.json"), "-o", wide, "--segment-alignment", "4096"});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const etpack::json::Value doc = InspectJson(wide);
    for (const auto& seg : doc.Find("segments")->items()) {
      CHECK(seg.Find("absolute_offset")->as_uint() % 4096 == 0);
    }
  }
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

TEST_CASE("inspect understands .ptd") {
  Run text = Etpack({"inspect", Golden("ptd_shared_blob.ptd")});
  INFO(text.output);
  REQUIRE(text.exit_code == 0);
  CHECK(Contains(text.output, "FT01"));
  CHECK(Contains(text.output, "segment_base_offset: 512"));
  CHECK(Contains(text.output, "t.a_alias"));
  CHECK(Contains(text.output, "FLOAT[4] dim_order [0]"));
  CHECK(Contains(text.output, "(opaque blob)"));

  const etpack::json::Value doc = InspectJson(Golden("ptd_shared_blob.ptd"));
  CHECK(doc.Find("kind")->as_string() == "ptd");
  CHECK(doc.Find("header")->Find("flatbuffer_offset")->as_uint() == 48);
  const auto& entries = doc.Find("entries")->items();
  REQUIRE(entries.size() == 4);
  CHECK(entries[1].Find("key")->as_string() == "t.a_alias");
  CHECK(entries[1].Find("segment")->as_uint() == 0);
  CHECK(entries[1].Find("size")->as_uint() == 16);
  CHECK(entries[1].Find("tensor_layout")->Find("scalar_type")->as_uint() == 6);
  CHECK(entries[2].Find("tensor_layout")->is_null());
  const auto& segments = doc.Find("segments")->items();
  REQUIRE(segments.size() == 3);
  CHECK(segments[1].Find("offset")->as_uint() == 256);
  CHECK(segments[1].Find("absolute_offset")->as_uint() == 768);

  // A .pte lists its EXTERNAL tensors.
  const etpack::json::Value pte = InspectJson(Golden("pte_external.pte"));
  const auto& external = pte.Find("external_tensors")->items();
  REQUIRE(external.size() == 3);
  CHECK(external[2].Find("key")->as_string() == "conv.weight");
  CHECK(external[2].Find("tensor_layout")->Find("text")->as_string() ==
        "BFLOAT16[2, 3, 2, 2] dim_order [0, 2, 3, 1]");
}

TEST_CASE("repack --external-constants writes a program and its data") {
  TempDir dir;
  const std::string pte = dir / "model.pte";
  const std::string ptd = dir / "model.ptd";
  Run run = Etpack({"repack", Golden("pte_constants.pte"), "-o", pte, "--external-constants", ptd});
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(Contains(run.output, "wrote " + pte));
  CHECK(Contains(run.output, "wrote " + ptd));

  Run v1 = Etpack({"verify", pte});
  INFO(v1.output);
  CHECK(v1.exit_code == 0);
  Run v2 = Etpack({"verify", ptd});
  INFO(v2.output);
  CHECK(v2.exit_code == 0);
  CHECK(Contains(v2.output, "6 entries"));
  Run v3 = Etpack({"verify", pte, "--data", ptd});
  INFO(v3.output);
  CHECK(v3.exit_code == 0);
  CHECK(Contains(v3.output, "6 external tensors resolve"));

  const etpack::json::Value doc = InspectJson(pte);
  CHECK(doc.Find("constants")->Find("tensors")->as_uint() == 0);
  CHECK(doc.Find("external_tensors")->items().size() == 6);
  // The only files in the folder are the two outputs: no staging leftovers.
  auto names = Listing(dir.path());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"model.ptd", "model.pte"});

  SECTION("a failure leaves neither file behind") {
    TempDir out;
    Run bad = Etpack({"repack", Golden("pte_constants.pte"), "-o", out / "missing/model.pte",
                      "--external-constants", out / "model.ptd"});
    INFO(bad.output);
    CHECK(bad.exit_code == 1);
    CHECK(Contains(bad.output, "etpack: "));
    CHECK(Listing(out.path()).empty());
  }
}

TEST_CASE("pack --external-named-data writes a fat delegate's named data to a .ptd") {
  TempDir dir;
  etpack::testing::WriteFile(dir / "w.bin", Pattern(4096, 1));
  etpack::testing::WriteFile(dir / "mlx.bin", Pattern(100, 2));
  // A fat delegate: the native program (its weight EXTERNAL "layer.w") and
  // an MLX payload, both bringing w.bin under their own keys.
  const std::string chain = R"("chains": [{"inputs": [], "outputs": [], "instructions": []}],
      "operators": [], "non_const_buffer_sizes": [0])";
  const std::string native = R"({"version": 0, "execution_plan": [{"name": "forward",
      "values": [{"val_type": "Tensor", "val": {"scalar_type": 0, "sizes": [4096],
        "dim_order": [0], "extra_tensor_info": {"fully_qualified_name": "layer.w",
        "location": 1}}}],
      "inputs": [], "outputs": [0], "delegates": [], )" +
                             chain + "}]}";
  const std::string manifest = R"({"format": "pte", "program": {"version": 0,
      "execution_plan": [{"name": "forward", "values": [], "inputs": [], "outputs": [],
        "delegates": [{"id": "NativeBackend", "processed": {"location": 0, "index": 0},
                       "compile_specs": []}], )" +
                               chain + R"(}],
      "backend_delegate_data": [{"data": {"nfat": {"entries": [
        {"backend_id": "NativeBackend", "program": {"program": )" +
                               native + R"(},
         "named_data": {"buffers": [{"file": "w.bin"}],
                        "entries": [{"key": "layer.w", "buffer_index": 0, "alignment": 64}]}},
        {"backend_id": "MLXBackend", "data": {"file": "mlx.bin"},
         "named_data": {"buffers": [{"file": "w.bin"}],
                        "entries": [{"key": "mlx/layer.w", "buffer_index": 0}]}}]}}}]}})";
  WriteFileText(dir / "fat.json", manifest);
  const std::string pte = dir / "m.pte";
  const std::string ptd = dir / "m.ptd";
  Run run = Etpack({"pack", dir / "fat.json", "-o", pte, "--external-named-data", ptd});
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(Contains(run.output, "wrote " + ptd + " (4352 bytes, 2 entries, 1 segment"));
  CHECK(Contains(run.output, "wrote " + pte));
  CHECK(InspectJson(pte).Find("named_data")->items().empty());

  // The program entry's key resolves in the .ptd, and only there.
  Run alone = Etpack({"verify", pte});
  INFO(alone.output);
  CHECK(alone.exit_code == 1);
  CHECK(Contains(alone.output,
                 "EXTERNAL key \"layer.w\" is not in the outer program's "
                 "named data (no .ptd file given)"));
  Run both = Etpack({"verify", pte, "--data", ptd});
  INFO(both.output);
  CHECK(both.exit_code == 0);
  CHECK(Contains(both.output, "1 entry external keys resolve"));
  Run data = Etpack({"verify", ptd});
  INFO(data.output);
  CHECK(data.exit_code == 0);

  SECTION("usage errors") {
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"pack", dir / "fat.json", "-o", pte, "--external-named-data",
                                   pte},
          {"pack", dir / "fat.json", "-o", pte, "--external-named-data", "-"},
          {"pack", Golden("ptd_basic.input.json"), "-o", dir / "x.ptd", "--external-named-data",
           dir / "y.ptd"}}) {
      Run bad = Etpack(args);
      INFO(bad.output);
      CHECK(bad.exit_code == 2);
      CHECK(Contains(bad.output, "etpack: pack: "));
    }
  }
}

TEST_CASE("ptd converts safetensors checkpoints") {
  TempDir dir;
  // BF16 matrix, F32 vector, a zero-element tensor and a 1-byte tensor.
  const std::vector<StTensor> shard1 = {
      {"model.embed.weight", "BF16", {3, 4}, Pattern(24, 1)},
      {"model.norm.weight", "F32", {5}, Pattern(20, 2)},
  };
  const std::vector<StTensor> shard2 = {
      {"model.empty", "F32", {0, 7}, {}},
      {"model.flag", "U8", {1}, {0xa5}},
  };
  WriteSafetensors(dir / "model-00001-of-00002.safetensors", shard1);
  WriteSafetensors(dir / "model-00002-of-00002.safetensors", shard2);

  SECTION("from shard files, page-aligned") {
    const std::string out = dir / "w.ptd";
    Run run = Etpack({"ptd", dir / "model-00001-of-00002.safetensors",
                      dir / "model-00002-of-00002.safetensors", "-o", out, "--align", "4096"});
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    CHECK(Contains(run.output, "4 tensors"));
    CHECK(Contains(run.output, "45 bytes"));
    CHECK(Contains(run.output, "peak RSS"));
    CHECK(Contains(run.output, "MiB/s"));
    Run verify = Etpack({"verify", out});
    INFO(verify.output);
    CHECK(verify.exit_code == 0);

    const etpack::json::Value doc = InspectJson(out);
    const auto& entries = doc.Find("entries")->items();
    const auto& segments = doc.Find("segments")->items();
    REQUIRE(entries.size() == 4);
    const auto bytes = ReadFile(out);
    std::vector<StTensor> all = shard1;
    all.insert(all.end(), shard2.begin(), shard2.end());
    for (size_t i = 0; i < all.size(); ++i) {
      INFO(all[i].name);
      const auto& e = entries[i];
      CHECK(e.Find("key")->as_string() == all[i].name);
      const auto& seg = segments[e.Find("segment")->as_uint()];
      const uint64_t at = seg.Find("absolute_offset")->as_uint();
      CHECK(at % 4096 == 0);
      REQUIRE(seg.Find("size")->as_uint() == all[i].bytes.size());
      REQUIRE(at + all[i].bytes.size() <= bytes.size());
      CHECK(std::vector<uint8_t>(bytes.begin() + at, bytes.begin() + at + all[i].bytes.size()) ==
            all[i].bytes);
    }
    CHECK(entries[0].Find("tensor_layout")->Find("text")->as_string() ==
          "BFLOAT16[3, 4] dim_order [0, 1]");
    CHECK(entries[2].Find("tensor_layout")->Find("text")->as_string() ==
          "FLOAT[0, 7] dim_order [0, 1]");
    CHECK(entries[3].Find("tensor_layout")->Find("text")->as_string() == "BYTE[1] dim_order [0]");
  }

  SECTION("from a sharded index") {
    const std::string index = dir / "model.safetensors.index.json";
    std::ofstream(index) << R"({"metadata": {"total_size": 45}, "weight_map": {
        "model.embed.weight": "model-00001-of-00002.safetensors",
        "model.norm.weight": "model-00001-of-00002.safetensors",
        "model.empty": "model-00002-of-00002.safetensors",
        "model.flag": "model-00002-of-00002.safetensors"}})";
    const std::string out = dir / "idx.ptd";
    Run run = Etpack({"ptd", index, "-o", out});
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    const etpack::json::Value doc = InspectJson(out);
    CHECK(doc.Find("entries")->items().size() == 4);
    for (const auto& seg : doc.Find("segments")->items()) {
      CHECK(seg.Find("absolute_offset")->as_uint() % 128 == 0);
    }
  }

  SECTION("a malformed checkpoint fails and leaves no output") {
    TempDir out;
    const std::string bad = dir / "bad.safetensors";
    {
      std::ofstream f(bad, std::ios::binary);
      const uint64_t n = 1000;  // header length past the end of the file
      for (int i = 0; i < 8; ++i) f.put(static_cast<char>(n >> (8 * i)));
      f << "{}";
    }
    Run run = Etpack({"ptd", bad, "-o", out / "w.ptd"});
    INFO(run.output);
    CHECK(run.exit_code == 1);
    CHECK(Contains(run.output, "etpack: "));
    CHECK(Contains(run.output, "bad.safetensors"));
    CHECK(Listing(out.path()).empty());

    // The same shard given twice: said so, not "appears in both A and A".
    const std::string shard = dir / "model-00001-of-00002.safetensors";
    Run dup = Etpack({"ptd", shard, shard, "-o", out / "w.ptd"});
    INFO(dup.output);
    CHECK(dup.exit_code == 1);
    CHECK(dup.output == "etpack: " + shard +
                            " is read twice (given twice, or also through an index); give each "
                            "file once\n");
    CHECK(Listing(out.path()).empty());

    // A tensor with an empty name: the input is to blame, not the output.
    const std::string unnamed = dir / "unnamed.safetensors";
    WriteSafetensors(unnamed, {{"", "U8", {1}, {7}}});
    Run empty = Etpack({"ptd", unnamed, "-o", out / "w.ptd"});
    INFO(empty.output);
    CHECK(empty.exit_code == 1);
    CHECK(empty.output == "etpack: " + unnamed + ": tensor name: empty key\n");
    CHECK(Listing(out.path()).empty());
  }

  SECTION("counts say what was read, in the singular when it is one") {
    const std::string none = dir / "none.safetensors";
    WriteSafetensors(none, {});
    Run empty = Etpack({"ptd", none, "-o", dir / "none.ptd"});
    INFO(empty.output);
    REQUIRE(empty.exit_code == 0);
    CHECK(Contains(empty.output, "read:    0 tensors from 1 safetensors file, 0 bytes of tensor"));
    const std::string one = dir / "one.safetensors";
    WriteSafetensors(one, {{"w", "U8", {1}, {7}}});
    Run single = Etpack({"ptd", one, "-o", dir / "one.ptd"});
    INFO(single.output);
    REQUIRE(single.exit_code == 0);
    CHECK(Contains(single.output, "read:    1 tensor from 1 safetensors file, 1 byte of tensor"));
    Run verify = Etpack({"verify", dir / "one.ptd"});
    CHECK(Contains(verify.output, ": ok (.ptd, 1 entry, 1 segment, "));
    Run two = Etpack({"ptd", one, none, "-o", dir / "two.ptd"});
    INFO(two.output);
    REQUIRE(two.exit_code == 0);
    CHECK(Contains(two.output, "read:    1 tensor from 2 safetensors files"));
  }
}

TEST_CASE("counts of one are singular") {
  Run verify = Etpack({"verify", Golden("pte_external.pte"), "--data", Golden("ptd_basic.ptd")});
  INFO(verify.output);
  CHECK(Contains(verify.output, ": ok (1 method, 1 segment, 1540 bytes; 3 external tensors "));
  Run text = Etpack({"inspect", Golden("pte_named_data.pte")});
  INFO(text.output);
  CHECK(Contains(text.output, "constants:           1 tensor, 24 bytes"));
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

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

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

// Fat (NFAT) delegates: inspect, verify and extract on the reference fat
// .pte, and verify on every malformed-container class.
namespace {

std::vector<uint8_t> Bytes(const std::string& path) { return etpack::testing::ReadFile(path); }

// Where pte_fat.pte's delegate payload (segment 1, nfat_basic.nfat) starts:
// the segment base, since segments 0 and 1 are at offset 0.
uint64_t FatPayloadOffset() {
  const std::vector<uint8_t> b = Bytes(Golden("pte_fat.pte"));
  uint64_t base = 0;
  for (int i = 0; i < 8; ++i) base |= uint64_t{b[24 + i]} << (8 * i);  // eh00 segment_base_offset
  return base;
}

}  // namespace

namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A golden manifest, edited by `edit`, written to `path`.
template <typename Edit>
void WriteEditedManifest(const std::string& golden, const std::string& path, Edit edit) {
  auto doc = etpack::json::Parse(ReadAll(Golden(golden)), golden);
  REQUIRE(doc.ok());
  edit(*doc);
  std::ofstream(path) << etpack::json::Print(*doc, 1);
}

// The value `v` (the member "val") of the first method of a manifest.
etpack::json::Value& ManifestValue(etpack::json::Value& doc, size_t v) {
  return *doc.Find("program")
              ->Find("execution_plan")
              ->items()[0]
              .Find("values")
              ->items()[v]
              .Find("val");
}

// `bytes` with every occurrence of `from` replaced by `to` (same length).
std::string ReplaceAll(std::string bytes, const std::string& from, const std::string& to) {
  REQUIRE(from.size() == to.size());
  size_t n = 0;
  for (size_t at = bytes.find(from); at != std::string::npos; at = bytes.find(from, at + 1)) {
    bytes.replace(at, from.size(), to);
    ++n;
  }
  REQUIRE(n > 0);
  return bytes;
}

std::string Le32s(std::initializer_list<int32_t> xs) {
  std::string s;
  for (int32_t x : xs) {
    for (int i = 0; i < 4; ++i)
      s += static_cast<char>((static_cast<uint32_t>(x) >> (8 * i)) & 0xff);
  }
  return s;
}

}  // namespace

TEST_CASE("extract writes a delegate payload or one NFAT entry, byte for byte") {
  TempDir dir;
  const std::string fat = Golden("pte_fat.pte");
  const std::vector<uint8_t> nfat = Bytes(Golden("nfat_basic.nfat"));
  Run whole = Etpack({"extract", fat, "--delegate", "0", "-o", dir / "d0.bin"});
  INFO(whole.output);
  REQUIRE(whole.exit_code == 0);
  CHECK(Bytes(dir / "d0.bin") == nfat);
  // nfat_basic: NativeBackend [0, +2080), MLXBackend [2080, +37) after a 108-byte table.
  Run native = Etpack(
      {"extract", fat, "--delegate", "0", "--entry", "NativeBackend", "-o", dir / "native.pte"});
  REQUIRE(native.exit_code == 0);
  CHECK(Bytes(dir / "native.pte") == std::vector<uint8_t>(nfat.begin() + 108, nfat.begin() + 2188));
  Run mlx = Etpack({"extract", fat, "--delegate", "0", "--entry", "MLXBackend", "-o", dir / "mlx"});
  REQUIRE(mlx.exit_code == 0);
  CHECK(Bytes(dir / "mlx") == std::vector<uint8_t>(nfat.begin() + 2188, nfat.end()));
  // The extracted program entry is a program of its own.
  CHECK(Etpack({"verify", dir / "native.pte"}).exit_code == 0);

  Run missing = Etpack({"extract", fat, "--delegate", "0", "--entry", "Vulkan", "-o", dir / "x"});
  CHECK(missing.exit_code == 1);
  CHECK(Contains(missing.output,
                 "no entry \"Vulkan\"; the entries are \"NativeBackend\", "
                 "\"MLXBackend\""));
  Run range = Etpack({"extract", fat, "--delegate", "1", "-o", dir / "x"});
  CHECK(range.exit_code == 1);
  CHECK(Contains(range.output, "--delegate 1 is out of range: the program has 1 delegates"));
  Run not_fat = Etpack(
      {"extract", Golden("pte_delegates.pte"), "--delegate", "0", "--entry", "X", "-o", dir / "x"});
  CHECK(not_fat.exit_code == 1);
  CHECK(Contains(not_fat.output, "is not an NFAT container"));
  CHECK_FALSE(fs::exists(dir / "x"));
  CHECK(Etpack({"extract", fat, "-o", dir / "x"}).exit_code == 2);
}

TEST_CASE("inspect and verify describe a fat delegate's entries") {
  const std::string fat = Golden("pte_fat.pte");
  Run text = Etpack({"inspect", fat});
  INFO(text.output);
  REQUIRE(text.exit_code == 0);
  CHECK(Contains(text.output, "fat delegates (1):"));
  CHECK(Contains(text.output, "delegate 0: NFAT container, 2 entries, 2225 bytes"));
  CHECK(Contains(text.output, "MLXBackend"));
  CHECK(Contains(text.output, "program: methods "));

  Run js = Etpack({"inspect", "--json", fat});
  REQUIRE(js.exit_code == 0);
  auto doc = etpack::json::Parse(js.output);
  REQUIRE(doc.ok());
  const auto& list = doc->Find("fat_delegates")->items();
  REQUIRE(list.size() == 1);
  const auto& entries = list[0].Find("entries")->items();
  REQUIRE(entries.size() == 2);
  CHECK(entries[0].Find("backend_id")->as_string() == "NativeBackend");
  CHECK(entries[0].Find("kind")->as_string() == "program");
  CHECK(entries[0].Find("offset")->as_uint() == 0);
  CHECK(entries[1].Find("offset")->as_uint() == 2080);
  CHECK(entries[1].Find("length")->as_uint() == 37);
  CHECK(entries[1].Find("kind")->as_string() == "bytes");
  CHECK(entries[1].Find("file_offset")->as_uint() == FatPayloadOffset() + 108 + 2080);

  Run ok = Etpack({"verify", fat});
  INFO(ok.output);
  CHECK(ok.exit_code == 0);
  CHECK(Contains(ok.output, "1 fat delegates, 2 entries, 1 programs"));
}

TEST_CASE("verify names the delegate, the entry and the value for every malformed container") {
  TempDir dir;
  const std::vector<uint8_t> good = Bytes(Golden("pte_fat.pte"));
  const uint64_t c = FatPayloadOffset();
  const uint64_t row1 = c + 12 + 48;
  auto put64 = [](std::vector<uint8_t>& b, uint64_t at, uint64_t v) {
    for (int i = 0; i < 8; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
  };
  const std::vector<std::pair<std::vector<uint8_t>, std::string>> cases = [&] {
    std::vector<std::pair<std::vector<uint8_t>, std::string>> out;
    auto add = [&](auto mutate, const std::string& message) {
      std::vector<uint8_t> b = good;
      mutate(b);
      out.push_back({std::move(b), message});
    };
    add([&](auto& b) { b[c + 4] = 2; }, "version = 2 is not 1");
    add([&](auto& b) { b[c + 8] = 0; }, "count = 0");
    add([&](auto& b) { b[c + 8] = 200; }, "count = 200 needs a table ending at 9612");
    add([&](auto& b) { b[row1 + 1] = 0x80; },
        "entries[1] \"M\\x80XBackend\": backend id has byte 0x80");
    add([&](auto& b) { b[row1 + 20] = 'Z'; },
        "entries[1] \"MLXBackend\": backend id is not NUL-padded");
    add([&](auto& b) { std::fill(b.begin() + row1, b.begin() + row1 + 32, 0); },
        "entries[1] \"\": backend id is empty");
    add([&](auto& b) { put64(b, row1 + 40, 38); },
        "entries[1] \"MLXBackend\": [2080, +38) runs past the data section");
    add([&](auto& b) { put64(b, row1 + 32, 2000); },
        "entries[1] \"MLXBackend\" [2000, +37) overlaps entries[0] \"NativeBackend\" [0, +2080)");
    return out;
  }();
  for (const auto& [bytes, message] : cases) {
    std::ofstream(dir / "bad.pte", std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    Run run = Etpack({"verify", dir / "bad.pte"});
    INFO(message << "\n" << run.output);
    CHECK(run.exit_code == 1);
    CHECK(Contains(run.output, "delegate 0 (forward[0] NativeBackend)"));
    CHECK(Contains(run.output, message));
    Run extract = Etpack({"extract", dir / "bad.pte", "--delegate", "0", "--entry", "NativeBackend",
                          "-o", dir / "out"});
    CHECK(extract.exit_code == 1);
    CHECK(Contains(extract.output, message));
    CHECK_FALSE(fs::exists(dir / "out"));
  }
}

TEST_CASE("pack refuses what verify would refuse and writes nothing") {
  using etpack::json::Value;
  struct Case {
    const char* golden;
    std::function<void(Value&)> edit;
    const char* fragment;
  };
  const std::vector<Case> cases = {
      {"pte_constants.input.json",
       [](Value& d) { ManifestValue(d, 1).Set("scalar_type", Value::Int(99)); },
       "execution_plan[0].values[1].scalar_type = 99 is not a scalar type"},
      {"pte_constants.input.json",
       [](Value& d) { ManifestValue(d, 1).Set("data_buffer_idx", Value::Int(999)); },
       "execution_plan[0].values[1].data_buffer_idx = 999 is out of range"},
      {"pte_mutable.input.json",
       [](Value& d) { ManifestValue(d, 4).Set("data_buffer_idx", Value::Int(999)); },
       "execution_plan[0].values[4].data_buffer_idx = 999 is out of range: "
       "mutable_data_segments[0] has 4 offsets"},
      {"pte_constants.input.json",
       [](Value& d) {
         ManifestValue(d, 1).Set("sizes", Value::Array({Value::Int(2), Value::Int(300)}));
       },
       "execution_plan[0].values[1]: 2400 bytes at offset"},
  };
  for (const Case& c : cases) {
    TempDir dir;
    fs::create_directory(dir.path() / "out");
    const std::string manifest = dir / "manifest.json";
    WriteEditedManifest(c.golden, manifest, c.edit);
    Run run = Etpack({"pack", manifest, "-o", dir / "out/model.pte"});
    INFO(run.output);
    CHECK(run.exit_code == 1);
    CHECK(Contains(run.output, c.fragment));
    CHECK(Listing(dir.path() / "out").empty());
  }
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

TEST_CASE("inspect --json prints valid JSON whatever bytes a name holds") {
  // A .ptd key with a byte that is not UTF-8: printed as U+FFFD.
  TempDir dir;
  const std::string path = dir / "bad_key.ptd";
  std::ofstream(path, std::ios::binary)
      << ReplaceAll(ReadAll(Golden("ptd_basic.ptd")), "linear.bias",
                    "linear\xff"
                    "bias");
  Run run = Etpack({"inspect", "--json", path});
  INFO(run.output);
  if (run.exit_code == 0) {
    auto doc = etpack::json::Parse(run.output, "inspect --json");
    INFO(doc.status().ToString());
    CHECK(doc.ok());
    CHECK(Contains(run.output,
                   "linear\xEF\xBF\xBD"
                   "bias"));
  } else {
    // A reader that refuses such keys is fine too; it must say so cleanly.
    CHECK(run.exit_code == 1);
    CHECK(Contains(run.output, path));
  }
}

TEST_CASE("repack without flags keeps the file's options and is a fixed point") {
  // Each golden was written by the reference serializer with the options in
  // its input's "effective_alignments": repack reports the same ones and
  // writes what pack writes from that input. pte_delegates_inline was
  // written with delegate_alignment 32, which the file does not record
  // (its payload's offset is a multiple of 32 but could be by chance), so
  // the default 16 holds.
  TempDir dir;
  for (const char* name :
       {"pte_all_kinds", "pte_constants", "pte_constants_align64", "pte_delegates",
        "pte_delegates_inline", "pte_external", "pte_fat", "pte_multi_method", "pte_mutable",
        "pte_named_data", "pte_no_segments"}) {
    INFO(name);
    const std::string base = name;
    const std::string golden = Golden(base + ".pte");
    const std::string manifest = dir / (base + ".json");
    WriteEditedManifest(base + ".input.json", manifest, [](etpack::json::Value& d) {
      d.Find("serializer_options")->Set("delegate_alignment", etpack::json::Value());
    });
    auto input = etpack::json::Parse(ReadAll(manifest), manifest);
    REQUIRE(input.ok());
    const auto& effective = *input->Find("effective_alignments");
    const std::string packed = dir / (base + ".packed.pte");
    REQUIRE(Etpack({"pack", manifest, "-o", packed}).exit_code == 0);

    const std::string once = dir / (base + ".1.pte");
    const std::string twice = dir / (base + ".2.pte");
    Run first = Etpack({"repack", golden, "-o", once});
    INFO(first.output);
    REQUIRE(first.exit_code == 0);
    CHECK(Contains(first.output,
                   "segment alignment " +
                       std::to_string(effective.Find("segment_alignment")->as_uint()) +
                       ", constant alignment " +
                       std::to_string(effective.Find("constant_tensor_alignment")->as_uint())));
    CHECK(ReadAll(once) == ReadAll(packed));
    Run second = Etpack({"repack", once, "-o", twice});
    INFO(second.output);
    REQUIRE(second.exit_code == 0);
    CHECK(ReadAll(once) == ReadAll(twice));
  }
}

TEST_CASE("pack and repack --dedup store identical constants once; inspect reports it") {
  TempDir dir;
  // pte_constants with a seventh constant repeating the first (f32[2,3],
  // 24 bytes), read by a new tensor value.
  auto doc = etpack::json::ParseFile(Golden("pte_constants.input.json"));
  REQUIRE(doc.ok());
  etpack::json::Value& program = *doc->Find("program");
  auto& buffers = program.Find("constant_buffer")->items();
  buffers.push_back(buffers[1]);
  auto& values = program.Find("execution_plan")->items()[0].Find("values")->items();
  etpack::json::Value copy = values[1];
  copy.Find("val")->Set("data_buffer_idx", etpack::json::Value::UInt(buffers.size() - 1));
  values.push_back(copy);
  const std::string manifest = dir / "m.json";
  std::ofstream(manifest) << etpack::json::Print(*doc);

  const std::string plain = dir / "plain.pte", shared = dir / "shared.pte";
  Run a = Etpack({"pack", manifest, "-o", plain});
  INFO(a.output);
  REQUIRE(a.exit_code == 0);
  Run b = Etpack({"pack", manifest, "-o", shared, "--dedup"});
  INFO(b.output);
  REQUIRE(b.exit_code == 0);
  CHECK(Contains(b.output, "identical constants stored once"));
  CHECK(fs::file_size(plain) == fs::file_size(shared) + 32);  // 24 bytes padded to 16

  Run v = Etpack({"verify", shared});
  INFO(v.output);
  CHECK(v.exit_code == 0);
  Run text = Etpack({"inspect", shared});
  CHECK(Contains(text.output,
                 "dedup:               1 entry in bytes another entry holds, "
                 "24 bytes saved"));
  CHECK(Contains(Etpack({"inspect", plain}).output, "no entry shares another's bytes"));

  // repack keeps what the input does, and --dedup adds it.
  const std::string again = dir / "again.pte", deduped = dir / "deduped.pte";
  REQUIRE(Etpack({"repack", shared, "-o", again}).exit_code == 0);
  CHECK(fs::file_size(again) == fs::file_size(shared));
  REQUIRE(Etpack({"repack", plain, "-o", deduped, "--dedup"}).exit_code == 0);
  CHECK(fs::file_size(deduped) == fs::file_size(shared));
}

// Readers keep to the file's size plus a little, however many entries it
// has: inspect (text and --json, printed as the report is produced) and
// verify of a .ptd of 100,000 entries run with the process's heap capped
// (RLIMIT_DATA, which mapped files do not count against) at 40 MiB. A
// report built whole needed about 2.6 KiB per entry (260 MB here).
TEST_CASE("inspect and verify of 100k entries fit a 40 MiB heap") {
  // AddressSanitizer's shadow memory counts against RLIMIT_DATA.
#if defined(__SANITIZE_ADDRESS__)
  constexpr bool kAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  constexpr bool kAsan = true;
#else
  constexpr bool kAsan = false;
#endif
#else
  constexpr bool kAsan = false;
#endif
  if (kAsan) {
    WARN("skipped under AddressSanitizer");
    return;
  }
  TempDir dir;
  const std::string ptd = dir / "many.ptd";
  {
    etpack::PtdInput in;
    constexpr uint32_t kEntries = 100000;
    for (uint32_t i = 0; i < kEntries; ++i) {
      std::vector<uint8_t> bytes(16, 0);
      for (int k = 0; k < 4; ++k) bytes[k] = static_cast<uint8_t>(i >> (8 * k));
      in.buffers.push_back(etpack::OwnedSource(std::move(bytes)));
      in.entries.push_back({"layers." + std::to_string(i) + ".weight", i, 1,
                            etpack::TensorLayout{6, {2, 2}, {0, 1}}});
    }
    REQUIRE(etpack::WritePtd(ptd, in).ok());
  }
  for (const char* args : {"inspect", "inspect --json", "verify"}) {
    INFO(args);
    const std::string cmd =
        "ulimit -d 40960 && " + Quote(Bin()) + " " + args + " " + Quote(ptd) + " 2>&1 >/dev/null";
    FILE* pipe = popen(cmd.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::string err;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) err.append(buf, n);
    const int status = pclose(pipe);
    INFO(err);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
}

namespace {

// The .ptd files in `dir` whose names start with `stem` + "-", sorted.
std::vector<std::string> Shards(const TempDir& dir, const std::string& stem) {
  std::vector<std::string> found;
  for (const std::string& n : Listing(dir.path())) {
    if (n.rfind(stem + "-", 0) == 0 && n.size() > 4 && n.substr(n.size() - 4) == ".ptd") {
      found.push_back(dir / n);
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace

TEST_CASE("ptd --max-shard-bytes writes shards under the cap that verify and inspect as a set") {
  TempDir dir;
  std::vector<StTensor> tensors;
  for (int i = 0; i < 12; ++i) {
    const int n = 1000 + 500 * i;
    tensors.push_back({"layers." + std::to_string(i) + ".weight",
                       "U8",
                       {n},
                       Pattern(static_cast<size_t>(n), static_cast<uint8_t>(i))});
  }
  const std::string st = dir / "model.safetensors";
  WriteSafetensors(st, tensors);

  Run run = Etpack({"ptd", st, "-o", dir / "model.ptd", "--max-shard-bytes", "8K"});
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const std::vector<std::string> shards = Shards(dir, "model");
  REQUIRE(shards.size() > 2);
  CHECK_FALSE(fs::exists(dir / "model.ptd"));
  for (const std::string& s : shards) {
    CHECK(Contains(run.output, s));  // every name printed
    CHECK(fs::file_size(s) <= 8192);
    CHECK(std::regex_match(fs::path(s).filename().string(),
                           std::regex(R"(model-[0-9a-f]{16}\.ptd)")));
  }
  CHECK(Contains(run.output, std::to_string(shards.size()) + " shards"));

  std::vector<std::string> verify = {"verify"};
  verify.insert(verify.end(), shards.begin(), shards.end());
  Run v = Etpack(verify);
  INFO(v.output);
  CHECK(v.exit_code == 0);
  CHECK(Contains(v.output, "each key in exactly one file"));
  CHECK(Contains(v.output, "12 entries"));

  std::vector<std::string> inspect = {"inspect", "--json"};
  inspect.insert(inspect.end(), shards.begin(), shards.end());
  Run js = Etpack(inspect);
  REQUIRE(js.exit_code == 0);
  auto doc = etpack::json::Parse(js.output, "inspect --json");
  REQUIRE(doc.ok());
  CHECK(doc->items().size() == shards.size());

  SECTION("inspect --json of a set with an unreadable file prints valid JSON and fails") {
    Run bad = Etpack({"inspect", "--json", shards[0], st});
    CHECK(bad.exit_code != 0);
    // stdout and stderr come mixed: the array starts at "[{" and ends at
    // the last ']' printed.
    const size_t begin = bad.output.find("[{");
    REQUIRE(begin != std::string::npos);
    const std::string json = bad.output.substr(begin, bad.output.rfind(']') + 1 - begin);
    auto partial = etpack::json::Parse(json, "inspect --json");
    INFO(bad.output);
    REQUIRE(partial.ok());
    CHECK(partial->items().size() == 1);
  }
  SECTION("the same input gives the same names and bytes") {
    TempDir again;
    Run r2 = Etpack({"ptd", st, "-o", again / "model.ptd", "--max-shard-bytes", "8K"});
    REQUIRE(r2.exit_code == 0);
    const std::vector<std::string> shards2 = Shards(again, "model");
    REQUIRE(shards2.size() == shards.size());
    for (size_t i = 0; i < shards.size(); ++i) {
      CHECK(fs::path(shards[i]).filename() == fs::path(shards2[i]).filename());
      CHECK(ReadFile(shards[i]) == ReadFile(shards2[i]));
    }
  }
  SECTION("a key in two files of the set is refused") {
    verify.push_back(shards[0]);
    fs::copy_file(shards[0], dir / "copy.ptd");
    verify.back() = dir / "copy.ptd";
    Run twice = Etpack(verify);
    INFO(twice.output);
    CHECK(twice.exit_code == 1);
    CHECK(Contains(twice.output, "is in both"));
  }
  SECTION("a tensor that cannot fit is an error naming it, its size and the cap") {
    TempDir out;
    Run big = Etpack({"ptd", st, "-o", out / "model.ptd", "--max-shard-bytes", "4000"});
    INFO(big.output);
    CHECK(big.exit_code == 1);
    CHECK(Contains(big.output, "'layers.6.weight' (4000 bytes)"));
    CHECK(Contains(big.output, "max_shard_bytes = 4000"));
    CHECK(Listing(out.path()).empty());
  }
  SECTION("a zero or malformed cap is a usage error") {
    CHECK(Etpack({"ptd", st, "-o", dir / "x.ptd", "--max-shard-bytes", "0"}).exit_code == 2);
    CHECK(Etpack({"ptd", st, "-o", dir / "x.ptd", "--max-shard-bytes", "lots"}).exit_code == 2);
  }
  SECTION("a byte count past 2^64 - 1 is too large, with the limit; P and E are units") {
    for (const std::string text :
         {"16EiB", "16e", "16384PiB", "18446744073709551616", "99999999999999999999999K"}) {
      Run r = Etpack({"ptd", st, "-o", dir / "x.ptd", "--max-shard-bytes", text});
      INFO(r.output);
      CHECK(r.exit_code == 2);
      CHECK(Contains(r.output, "--max-shard-bytes = '" + text +
                                   "' is too large: a byte count is at most "
                                   "18446744073709551615 (16 EiB - 1)"));
    }
    Run not_count = Etpack({"ptd", st, "-o", dir / "x.ptd", "--max-shard-bytes", "16XiB"});
    CHECK(not_count.exit_code == 2);
    CHECK(Contains(not_count.output, "'16XiB' is not a byte count"));
    TempDir out;
    Run eib = Etpack({"ptd", st, "-o", out / "model.ptd", "--max-shard-bytes", "1EiB"});
    INFO(eib.output);
    CHECK(eib.exit_code == 0);
    CHECK(Listing(out.path()).size() == 1);
  }
  SECTION("-o .ptd has no name for the shards: refused, nothing written") {
    TempDir out;
    Run r = Etpack({"ptd", st, "-o", out / ".ptd", "--max-shard-bytes", "8K"});
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(Contains(r.output, ".ptd': shards are named after the output's file name"));
    CHECK(Listing(out.path()).empty());
  }
}

TEST_CASE("repack --external-constants --max-shard-bytes: program and shards as one unit") {
  TempDir dir;
  const std::string pte = dir / "model.pte";
  Run run = Etpack({"repack", Golden("pte_constants.pte"), "-o", pte, "--external-constants",
                    dir / "model.ptd", "--max-shard-bytes", "512"});
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const std::vector<std::string> shards = Shards(dir, "model");
  REQUIRE(shards.size() > 1);
  for (const std::string& s : shards) CHECK(fs::file_size(s) <= 512);

  std::vector<std::string> verify = {"verify", pte};
  verify.insert(verify.end(), shards.begin(), shards.end());
  Run v = Etpack(verify);
  INFO(v.output);
  CHECK(v.exit_code == 0);
  CHECK(Contains(v.output, "6 external tensors resolve"));
  // --data takes them too; without one shard a key resolves nowhere.
  Run missing = Etpack({"verify", pte, "--data", shards[0]});
  INFO(missing.output);
  CHECK(missing.exit_code == 1);
  CHECK(Contains(missing.output, "is not in"));

  SECTION("a failure leaves no file behind") {
    TempDir out;
    Run bad = Etpack({"repack", Golden("pte_constants.pte"), "-o", out / "missing/model.pte",
                      "--external-constants", out / "model.ptd", "--max-shard-bytes", "512"});
    CHECK(bad.exit_code == 1);
    CHECK(Listing(out.path()).empty());
  }
  SECTION("the cap without --external-constants is a usage error") {
    CHECK(Etpack({"repack", Golden("pte_constants.pte"), "-o", dir / "x.pte", "--max-shard-bytes",
                  "512"})
              .exit_code == 2);
  }
}

TEST_CASE("inspect --sizes: rows sum to the file size for every golden file") {
  size_t files = 0;
  for (const auto& e : fs::recursive_directory_iterator(etpack::testing::GoldenDir())) {
    const std::string ext = e.path().extension().string();
    if (ext != ".pte" && ext != ".ptd" && ext != ".bpte") continue;
    ++files;
    const std::string path = e.path().string();
    INFO(path);
    const uint64_t size = fs::file_size(e.path());
    // Every row, contiguous from 0.
    Run all = Etpack({"inspect", "--sizes", "--all", "--json", path});
    INFO(all.output);
    REQUIRE(all.exit_code == 0);
    auto doc = etpack::json::Parse(all.output);
    REQUIRE(doc.ok());
    CHECK(doc->Find("file_size")->as_uint() == size);
    uint64_t at = 0;
    for (const auto& row : doc->Find("rows")->items()) {
      CHECK(row.Find("offset")->as_uint() == at);
      at += row.Find("size")->as_uint();
    }
    CHECK(at == size);
    CHECK(doc->Find("grouped")->items().empty());
    // Grouped: the rows shown and the groups still sum to the file size.
    Run grouped = Etpack({"inspect", "--sizes", "--json", path});
    REQUIRE(grouped.exit_code == 0);
    doc = etpack::json::Parse(grouped.output);
    REQUIRE(doc.ok());
    uint64_t sum = 0;
    for (const char* list : {"rows", "grouped"}) {
      for (const auto& row : doc->Find(list)->items()) sum += row.Find("size")->as_uint();
    }
    CHECK(sum == size);
    // The table ends with the file's size.
    Run text = Etpack({"inspect", "--sizes", path});
    REQUIRE(text.exit_code == 0);
    CHECK(Contains(text.output, "total " + std::string(14 - std::to_string(size).size(), ' ') +
                                    std::to_string(size) + "  (the file's size)"));
  }
  CHECK(files >= 22);
}

TEST_CASE("inspect --sizes of several files reports the bytes they hold alike") {
  TempDir dir;
  // A program and the same program with its constants moved to a .ptd:
  // the constants are in both files alike.
  const std::string pte = dir / "m.pte", thin = dir / "thin.pte", data = dir / "thin.ptd";
  REQUIRE(Etpack({"repack", Golden("pte_constants.pte"), "-o", pte}).exit_code == 0);
  REQUIRE(Etpack({"repack", Golden("pte_constants.pte"), "-o", thin, "--external-constants", data})
              .exit_code == 0);
  Run text = Etpack({"inspect", "--sizes", "--all", pte, data});
  INFO(text.output);
  REQUIRE(text.exit_code == 0);
  CHECK(Contains(text.output, "held by several files (by content):"));
  CHECK(Contains(text.output, "a cross-file share would save"));
  Run json = Etpack({"inspect", "--sizes", "--json", pte, data});
  REQUIRE(json.exit_code == 0);
  auto doc = etpack::json::Parse(json.output);
  REQUIRE(doc.ok());
  CHECK(doc->Find("files")->items().size() == 2);
  const auto* shared = doc->Find("shared");
  REQUIRE(shared != nullptr);
  CHECK_FALSE(shared->Find("contents")->items().empty());
  for (const auto& c : shared->Find("contents")->items()) {
    CHECK(c.Find("files")->items().size() == 2);
  }
}

TEST_CASE("inspect --sizes: usage errors") {
  CHECK(Etpack({"inspect", "--all", Golden("pte_constants.pte")}).exit_code == 2);
  CHECK(
      Etpack({"inspect", "--sizes", "--digest", "sha256", Golden("pte_constants.pte")}).exit_code ==
      2);
  Run missing = Etpack({"inspect", "--sizes", "/nonexistent/x.pte"});
  CHECK(missing.exit_code == 1);
  CHECK(Contains(missing.output, "/nonexistent/x.pte"));
}
