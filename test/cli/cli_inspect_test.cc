// End-to-end tests of `etpack inspect`: the layout it prints (text and
// --json) for .pte and .ptd, --sizes, and the memory it needs.

#include <sys/wait.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>
#include "catch.h"

#include "cli_test_util.h"
#include "etpack/json.h"
#include "etpack/ptd.h"

namespace fs = std::filesystem;

using namespace etpack::testing::cli;

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
