// Replays saved inputs through one fuzz target, linked in: every file in
// the folders listed in ETPACK_FUZZ_REPLAY (':'-separated; missing folders
// are skipped). meson runs one such test per target over its regressions
// and seeds, so a fixed finding stays fixed; the sanitizer suite (build-san)
// is where undefined behaviour in them fails loudly.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>
#include "../support/catch.h"

#include "fuzz_input.h"

namespace {

std::vector<std::string> ReplayFiles() {
  const char* list = std::getenv("ETPACK_FUZZ_REPLAY");
  REQUIRE(list != nullptr);
  std::vector<std::string> files;
  std::stringstream dirs(list);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty() || !std::filesystem::is_directory(dir)) continue;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      if (e.is_regular_file()) files.push_back(e.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

TEST_CASE("fuzz replay: every saved input runs through the target") {
  const std::vector<std::string> files = ReplayFiles();
  REQUIRE(!files.empty());
  for (const std::string& path : files) {
    INFO(path);
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>());
    CHECK(LLVMFuzzerTestOneInput(bytes.data(), bytes.size()) == 0);
  }
}
