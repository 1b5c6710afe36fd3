// The publishing marker (see publish_marker.h).

#include "io/publish_marker.h"

#include <limits.h>
#include <stdlib.h>

#include <memory>
#include <string>
#include <vector>

#include "etpack/list_text.h"

namespace etpack {
namespace {

constexpr std::string_view kMagic = "etpack-publishing 1\n";
constexpr std::string_view kSuffix = ".etpack-publishing";
// A marker lists a few destinations; anything much larger is not one.
constexpr uint64_t kMaxMarkerBytes = 1 << 20;

// `path` split into the folder part (with its '/', or empty) and the name.
std::pair<std::string, std::string> Split(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {std::string(), path};
  return {path.substr(0, slash + 1), path.substr(slash + 1)};
}

std::string MarkerBeside(const std::string& path) {
  auto [dir, name] = Split(path);
  return dir + PublishMarkerName(name);
}

// Where a marker of `path` may stand: beside `path`, and beside the file
// its links lead to (the writer puts it there) when that is elsewhere.
std::vector<std::string> MarkerPaths(const std::string& path) {
  std::vector<std::string> paths = {MarkerBeside(path)};
  std::unique_ptr<char, decltype(&::free)> real(::realpath(path.c_str(), nullptr), &::free);
  if (real != nullptr) {
    std::string beside = MarkerBeside(real.get());
    if (beside != paths[0]) paths.push_back(std::move(beside));
  }
  return paths;
}

Result<std::string> ReadMarker(const InputFile& file) {
  ETPACK_ASSIGN_OR_RETURN(uint64_t size, file.Size());
  if (size > kMaxMarkerBytes) return Status(Code::kCorrupt, "too large for a marker");
  std::string bytes(size, '\0');
  ETPACK_ASSIGN_OR_RETURN(size_t got, file.Read(0, bytes.data(), bytes.size()));
  bytes.resize(got);
  return bytes;
}

}  // namespace

std::string PublishMarkerName(const std::string& name) {
  return "." + name.substr(0, NAME_MAX - 1 - kSuffix.size()) + std::string(kSuffix);
}

std::string EncodePublishMarker(const std::vector<std::string>& unit) {
  std::string bytes(kMagic);
  for (const std::string& d : unit) bytes += d + "\n";
  return bytes;
}

Result<std::vector<std::string>> DecodePublishMarker(std::string_view bytes) {
  if (bytes.substr(0, kMagic.size()) != kMagic || bytes.back() != '\n') {  // kMagic ends in '\n'
    return Status(Code::kCorrupt, "not an etpack publishing marker");
  }
  std::vector<std::string> unit;
  for (size_t at = kMagic.size(); at < bytes.size();) {
    const size_t end = bytes.find('\n', at);
    unit.emplace_back(bytes.substr(at, end - at));
    at = end + 1;
  }
  return unit;
}

Status CheckNoPublishMarker(InputFs& in, const std::string& path) {
  for (const std::string& marker : MarkerPaths(path)) {
    Result<std::shared_ptr<const InputFile>> file = in.Open(marker);
    if (!file.ok() && file.status().code() == Code::kNotFound) continue;
    std::string unit = "an unknown unit";
    if (file.ok()) {
      Result<std::string> bytes = ReadMarker(**file);
      Result<std::vector<std::string>> decoded =
          bytes.ok() ? DecodePublishMarker(*bytes) : bytes.status();
      if (decoded.ok()) unit = "its unit (" + ListText(*decoded) + ")";
    }
    return Status(Code::kCorrupt,
                  path + ": " + marker + " says " + unit +
                      " was being put in place when its writer stopped (killed, crashed or the "
                      "power failed), so these files may come from two runs; write the unit again");
  }
  return Status::OK();
}

}  // namespace etpack
