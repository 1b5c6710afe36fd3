// Helpers shared by the end-to-end tests of the `etpack` binary
// ($ETPACK_BIN), test/cli_*_test.cc: running it, a scratch folder, and the
// files the tests write and read back.
#ifndef ETPACK_TEST_CLI_TEST_UTIL_H_
#define ETPACK_TEST_CLI_TEST_UTIL_H_

#include <sys/wait.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>
#include "catch.h"

#include "etpack/json.h"
#include "test_files.h"

namespace etpack::testing::cli {

// What the CLI tests take from test_files.h, for one `using namespace` to
// bring everything.
using testing::Contains;
using testing::Golden;
using testing::ReadFile;

struct Run {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// `s` quoted for the shell.
inline std::string Quote(const std::string& s) {
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

inline std::string Bin() {
  const char* bin = std::getenv("ETPACK_BIN");
  REQUIRE(bin != nullptr);
  return bin;
}

// Runs the binary with `args`; waits for it to exit.
inline Run Etpack(const std::vector<std::string>& args) {
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

// testing::TempDir as these tests spell it: `dir / "name"` is a path in it,
// and path() a std::filesystem::path.
class TempDir : public testing::TempDir {
 public:
  std::string operator/(const std::string& name) const { return File(name); }
  std::filesystem::path path() const { return testing::TempDir::path(); }
};

inline void WriteFileText(const std::string& path, const std::string& text) {
  WriteFile(path, text);
}

// The names in `dir`, in the order the directory gives them.
inline std::vector<std::string> Listing(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  return names;
}

// The whole file, or "" where it cannot be read.
inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// What `etpack inspect --json path` prints, parsed; the command must succeed.
inline etpack::json::Value InspectJson(const std::string& path) {
  Run js = Etpack({"inspect", "--json", path});
  INFO(js.output);
  REQUIRE(js.exit_code == 0);
  auto doc = etpack::json::Parse(js.output, "inspect --json");
  REQUIRE(doc.ok());
  return std::move(doc).value();
}

// n bytes counting up from `seed` in steps of 13.
inline std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(seed + i * 13);
  return b;
}

// A golden manifest, edited by `edit`, written to `path`.
template <typename Edit>
void WriteEditedManifest(const std::string& golden, const std::string& path, Edit edit) {
  auto doc = etpack::json::Parse(ReadAll(Golden(golden)), golden);
  REQUIRE(doc.ok());
  edit(*doc);
  std::ofstream(path) << etpack::json::Print(*doc, 1);
}

// `bytes` with every occurrence of `from` replaced by `to` (same length).
inline std::string ReplaceAll(std::string bytes, const std::string& from, const std::string& to) {
  REQUIRE(from.size() == to.size());
  size_t n = 0;
  for (size_t at = bytes.find(from); at != std::string::npos; at = bytes.find(from, at + 1)) {
    bytes.replace(at, from.size(), to);
    ++n;
  }
  REQUIRE(n > 0);
  return bytes;
}

// The .ptd files in `dir` whose names start with `stem` + "-", sorted.
inline std::vector<std::string> Shards(const TempDir& dir, const std::string& stem) {
  std::vector<std::string> found;
  for (const std::string& n : Listing(dir.path())) {
    if (n.rfind(stem + "-", 0) == 0 && n.size() > 4 && n.substr(n.size() - 4) == ".ptd") {
      found.push_back(dir / n);
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace etpack::testing::cli

#endif  // ETPACK_TEST_CLI_TEST_UTIL_H_
