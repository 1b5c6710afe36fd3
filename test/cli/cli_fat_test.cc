// Fat (NFAT) delegates: inspect, verify and extract on the reference fat
// .pte, and verify on every malformed-container class.

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>
#include "catch.h"

#include "cli_test_util.h"
#include "etpack/json.h"

namespace fs = std::filesystem;

using namespace etpack::testing::cli;

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
