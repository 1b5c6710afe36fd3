// Scratch files for tests: a temporary directory removed with everything in
// it, deterministic byte patterns, and whole-file reads and writes.
#ifndef ETPACK_TEST_FILES_H_
#define ETPACK_TEST_FILES_H_

#include <sys/mount.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>
#include "catch.h"

namespace etpack::testing {

// The project's copy of the reference artifacts (test/golden/README.md).
// meson sets ETPACK_GOLDEN_DIR for every test; run tests through meson.
inline std::string GoldenDir() {
  const char* dir = std::getenv("ETPACK_GOLDEN_DIR");
  REQUIRE(dir != nullptr);
  return dir;
}
inline std::string Golden(const std::string& name) { return GoldenDir() + "/" + name; }
// The golden programs made from an input (CASE.input.json beside CASE.pte),
// by case name.
inline const std::vector<std::string>& GoldenPrograms() {
  static const std::vector<std::string> cases = {
      "pte_all_kinds",  "pte_constants",        "pte_constants_align64",
      "pte_delegates",  "pte_delegates_inline", "pte_external",
      "pte_fat",        "pte_multi_method",     "pte_mutable",
      "pte_named_data", "pte_no_segments"};
  return cases;
}

// A fresh directory under $TMPDIR (or /tmp), removed at scope exit.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/etpack-test-XXXXXX";
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }
  // Names of the entries in the directory.
  std::set<std::string> List() const {
    std::set<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(path_)) {
      names.insert(e.path().filename().string());
    }
    return names;
  }

 private:
  std::string path_;
};

// The folder `from` mounted again at the empty folder `at` (mount --bind):
// two paths to one folder that realpath cannot tell apart from two folders.
// Unmounted at scope exit (declare it after the TempDirs it joins). Needs
// CAP_SYS_ADMIN (CI runs as root): where the mount fails, mounted() is
// false and why() says why, for the test to skip with it.
class BindMount {
 public:
  BindMount(const std::string& from, const std::string& at) : at_(at) {
    if (::mount(from.c_str(), at.c_str(), nullptr, MS_BIND, nullptr) == 0) {
      mounted_ = true;
    } else {
      why_ = "mount --bind " + from + " " + at + ": " + std::strerror(errno) +
             " (needs root or CAP_SYS_ADMIN)";
    }
  }
  ~BindMount() {
    if (mounted_) ::umount2(at_.c_str(), MNT_DETACH);
  }
  BindMount(const BindMount&) = delete;
  BindMount& operator=(const BindMount&) = delete;

  bool mounted() const { return mounted_; }
  const std::string& why() const { return why_; }

 private:
  std::string at_;
  bool mounted_ = false;
  std::string why_;
};

// n pseudo-random bytes, the same for the same seed.
inline bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

inline std::vector<uint8_t> PatternBytes(size_t n, uint32_t seed = 1) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed * 2654435761u + 12345u;
  for (auto& b : v) {
    x = x * 1103515245u + 12345u;
    b = static_cast<uint8_t>(x >> 16);
  }
  return v;
}

inline void WriteFile(const std::string& path, const void* data, size_t size) {
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  REQUIRE(f.good());
}
inline void WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  WriteFile(path, bytes.data(), bytes.size());
}
inline void WriteFile(const std::string& path, const std::string& bytes) {
  WriteFile(path, bytes.data(), bytes.size());
}

// A v1.0 .npy file: the header dict literal `dict`, padded as numpy pads
// it, then `data`.
inline std::vector<uint8_t> Npy(const std::string& dict, const std::vector<uint8_t>& data) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string file = "\x93NUMPY";
  file += '\x01';
  file += '\x00';
  file += static_cast<char>(header.size() & 0xFF);
  file += static_cast<char>(header.size() >> 8);
  file += header;
  std::vector<uint8_t> out(file.begin(), file.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// A .safetensors file holding one F32 tensor "w" of `count` pattern
// values (shape [count]).
inline std::string F32Safetensors(uint64_t count, uint32_t seed = 1) {
  const std::string header = R"({"w":{"dtype":"F32","shape":[)" + std::to_string(count) +
                             R"(],"data_offsets":[0,)" + std::to_string(4 * count) + "]}}";
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  bytes += header;
  const std::vector<uint8_t> data = PatternBytes(4 * count, seed);
  bytes.append(data.begin(), data.end());
  return bytes;
}

inline std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE(f.good());
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

}  // namespace etpack::testing

#endif  // ETPACK_TEST_FILES_H_
