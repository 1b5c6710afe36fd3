#include "integrity/table.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdio>

#include "core/byte_order.h"

namespace etpack {
namespace {

constexpr char kMagic[4] = {'E', 'P', 'I', 'T'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kHashXxh3 = 1;
constexpr uint64_t kHeaderBytes = 16;
constexpr uint64_t kEntryBytes = 24;

}  // namespace

uint64_t IntegrityTableSize(uint64_t entries) { return kHeaderBytes + kEntryBytes * entries; }

std::vector<uint8_t> EncodeIntegrityTable(const std::vector<IntegrityEntry>& entries) {
  std::vector<uint8_t> out(IntegrityTableSize(entries.size()));
  std::copy(kMagic, kMagic + 4, out.begin());
  StoreLE32(out.data() + 4, kVersion);
  StoreLE32(out.data() + 8, kHashXxh3);
  StoreLE32(out.data() + 12, static_cast<uint32_t>(entries.size()));
  uint8_t* p = out.data() + kHeaderBytes;
  for (const IntegrityEntry& e : entries) {
    StoreLE64(p, e.offset);
    StoreLE64(p + 8, e.size);
    StoreLE64(p + 16, e.xxh3);
    p += kEntryBytes;
  }
  return out;
}

Result<std::vector<IntegrityEntry>> DecodeIntegrityTable(const std::vector<uint8_t>& bytes) {
  if (bytes.size() < kHeaderBytes || !std::equal(kMagic, kMagic + 4, bytes.begin())) {
    return Corrupt("integrity table: no \"EPIT\" magic in its " + std::to_string(bytes.size()) +
                   " bytes");
  }
  const uint32_t version = LoadLE32(bytes.data() + 4);
  const uint32_t hash = LoadLE32(bytes.data() + 8);
  const uint32_t count = LoadLE32(bytes.data() + 12);
  if (version != kVersion) {
    return Corrupt("integrity table: version = " + std::to_string(version) + ", expected " +
                   std::to_string(kVersion));
  }
  if (hash != kHashXxh3) {
    return Corrupt("integrity table: hash = " + std::to_string(hash) + ", expected 1 (XXH3-64)");
  }
  if (bytes.size() != IntegrityTableSize(count)) {
    return Corrupt("integrity table: " + std::to_string(bytes.size()) +
                   " bytes for count = " + std::to_string(count) + " (expected " +
                   std::to_string(IntegrityTableSize(count)) + ")");
  }
  std::vector<IntegrityEntry> entries(count);
  const uint8_t* p = bytes.data() + kHeaderBytes;
  for (IntegrityEntry& e : entries) {
    e = {LoadLE64(p), LoadLE64(p + 8), LoadLE64(p + 16)};
    p += kEntryBytes;
  }
  return entries;
}

std::string IntegrityKey(std::string_view format, const std::vector<std::string_view>& keys) {
  // Each string with its terminating NUL, so ("ab", "c") and ("a", "bc")
  // differ.
  std::string all(format);
  all += '\0';
  for (std::string_view k : keys) {
    all += k;
    all += '\0';
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(XXH3_64bits(all.data(), all.size())));
  return std::string(kIntegrityKeyPrefix) + hex;
}

bool IsIntegrityKey(std::string_view key) {
  return key.substr(0, kIntegrityKeyPrefix.size()) == kIntegrityKeyPrefix;
}

Status CheckNotIntegrityKey(std::string_view key, const std::string& what) {
  if (!IsIntegrityKey(key)) return Status::OK();
  return InvalidArgument(what + ": keys starting with \"" + std::string(kIntegrityKeyPrefix) +
                         "\" are reserved for the integrity table (docs/integrity.md)");
}

SourcePtr IntegrityTablePlaceholder(uint64_t entries) {
  return GeneratorSource("integrity table", IntegrityTableSize(entries),
                         [](uint64_t, uint8_t*, size_t) {
                           return InvalidArgument(
                               "the integrity table is computed by the writer "
                               "(WriteArtifactFile) and cannot be read from a plan otherwise");
                         });
}

}  // namespace etpack
