#include "etpack/path_text.h"

#include <filesystem>

namespace etpack {

namespace fs = std::filesystem;

std::string PathFileName(const std::string& path) { return fs::path(path).filename().string(); }

std::string PathStem(const std::string& path) { return fs::path(path).stem().string(); }

std::string PathFolder(const std::string& path) { return fs::path(path).parent_path().string(); }

std::string JoinPath(const std::string& dir, const std::string& name) {
  return (fs::path(dir) / name).string();
}

bool SamePathText(const std::string& a, const std::string& b) {
  return fs::path(a).lexically_normal() == fs::path(b).lexically_normal();
}

}  // namespace etpack
