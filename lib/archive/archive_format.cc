// The seek table (zstd's seekable format, contrib/seekable_format) and
// etpack's region index, encoded and decoded side by side.

#include "archive/archive_format.h"

#include <cstdio>
#include <cstring>

#include "core/range_text.h"
#include "plan/header_insert.h"

namespace etpack {
namespace {

constexpr uint64_t kSeekEntrySize = 8;  // Compressed_Size, Decompressed_Size
constexpr uint64_t kSeekEntryWithChecksum = 12;
constexpr uint8_t kChecksumFlag = 0x80;
constexpr uint8_t kReservedBits = 0x7c;
// The seekable format's own limit on frames in one archive.
constexpr uint64_t kMaxFrames = 0x8000000;

// Index payload: tag, original size, region count, then the regions. EPX1
// (no region checksums) is no longer read: its ranges cannot be checked.
constexpr char kIndexTag[4] = {'E', 'P', 'X', '2'};
constexpr uint64_t kIndexFixed = 4 + 8 + 4;
// kind, offset, size, XXH3-64 of the bytes, name length
constexpr uint64_t kRegionFixed = 1 + 8 + 8 + 8 + 4;

void PutLE32(std::vector<uint8_t>* out, uint32_t v) {
  uint8_t b[4];
  StoreLE32(b, v);
  out->insert(out->end(), b, b + 4);
}

void PutLE64(std::vector<uint8_t>* out, uint64_t v) {
  uint8_t b[8];
  StoreLE64(b, v);
  out->insert(out->end(), b, b + 8);
}

}  // namespace

const char* RegionKindName(RegionKind kind) {
  switch (kind) {
    case RegionKind::kHead: return "head";
    case RegionKind::kSegment: return "segment";
    case RegionKind::kTensor: return "tensor";
  }
  return "unknown";
}

std::vector<uint8_t> EncodeSeekTable(const std::vector<SeekEntry>& entries) {
  std::vector<uint8_t> out;
  out.reserve(kSkippableHeaderSize + entries.size() * kSeekEntrySize + kSeekFooterSize);
  PutLE32(&out, kSeekTableMagic);
  PutLE32(&out, static_cast<uint32_t>(entries.size() * kSeekEntrySize + kSeekFooterSize));
  for (const SeekEntry& e : entries) {
    PutLE32(&out, e.compressed);
    PutLE32(&out, e.decompressed);
  }
  PutLE32(&out, static_cast<uint32_t>(entries.size()));
  out.push_back(0);  // descriptor: no checksums
  PutLE32(&out, kSeekableMagic);
  return out;
}

Result<std::vector<ArchiveFrame>> DecodeSeekTable(const std::string& name, const Source& file) {
  const uint64_t file_size = file.size();
  auto corrupt = [&](const std::string& what) {
    return Corrupt(name + ": not a complete seekable zstd archive: " + what);
  };
  if (file_size < kSkippableHeaderSize + kSeekFooterSize) {
    return corrupt(std::to_string(file_size) + " bytes is too short for a seek table (" +
                   std::to_string(kSkippableHeaderSize + kSeekFooterSize) + " bytes at least)");
  }
  uint8_t footer[kSeekFooterSize];
  ETPACK_RETURN_IF_ERROR(
      file.ReadAt(file_size - kSeekFooterSize, footer, kSeekFooterSize).WithContext(name));
  const uint32_t magic = LoadLE32(footer + 5);
  if (magic != kSeekableMagic) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08X", magic);
    return corrupt("the last 4 bytes are " + std::string(hex) + ", not the seekable magic " +
                   "0x8F92EAB1 (truncated, or compressed without a seek table)");
  }
  const uint64_t count = LoadLE32(footer);
  const uint8_t descriptor = footer[4];
  if (descriptor & kReservedBits) {
    return corrupt("seek table descriptor " + std::to_string(descriptor) +
                   " has reserved bits set");
  }
  const uint64_t entry_size =
      (descriptor & kChecksumFlag) ? kSeekEntryWithChecksum : kSeekEntrySize;
  const uint64_t table_size = count * entry_size + kSeekFooterSize;
  // Every frame listed takes at least a skippable frame's 8 bytes too, so a
  // corrupt count cannot make the table's allocation outgrow the file.
  if (count > kMaxFrames || table_size + kSkippableHeaderSize + count * 8 > file_size) {
    return corrupt("the seek table lists " + std::to_string(count) + " frames (" +
                   std::to_string(table_size) + " bytes), more than the " +
                   std::to_string(file_size) + "-byte file holds");
  }
  const uint64_t table_start = file_size - table_size - kSkippableHeaderSize;
  std::vector<uint8_t> table(static_cast<size_t>(table_size + kSkippableHeaderSize));
  ETPACK_RETURN_IF_ERROR(file.ReadAt(table_start, table.data(), table.size()).WithContext(name));
  if (LoadLE32(table.data()) != kSeekTableMagic ||
      LoadLE32(table.data() + 4) != static_cast<uint32_t>(table_size)) {
    return corrupt("no skippable frame header (magic 0x184D2A5E, size " +
                   std::to_string(table_size) + ") at offset " + std::to_string(table_start) +
                   " where the seek table of " + std::to_string(count) + " frames must start");
  }
  std::vector<ArchiveFrame> frames(static_cast<size_t>(count));
  uint64_t archive_offset = 0;
  uint64_t offset = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t* e = table.data() + kSkippableHeaderSize + i * entry_size;
    ArchiveFrame& f = frames[static_cast<size_t>(i)];
    f.archive_offset = archive_offset;
    f.archive_size = LoadLE32(e);
    f.offset = offset;
    f.size = LoadLE32(e + 4);
    archive_offset += f.archive_size;
    offset += f.size;
  }
  if (archive_offset != table_start) {
    return corrupt("the seek table's " + std::to_string(count) + " frames add up to " +
                   std::to_string(archive_offset) + " compressed bytes, but the table starts at " +
                   std::to_string(table_start));
  }
  return frames;
}

std::vector<uint8_t> EncodeIndex(uint64_t size, const std::vector<ArchiveRegion>& regions) {
  std::vector<uint8_t> out;
  PutLE32(&out, kIndexMagic);
  PutLE32(&out, 0);  // content size, set below
  for (char c : kIndexTag) out.push_back(static_cast<uint8_t>(c));
  PutLE64(&out, size);
  PutLE32(&out, static_cast<uint32_t>(regions.size()));
  for (const ArchiveRegion& r : regions) {
    out.push_back(static_cast<uint8_t>(r.kind));
    PutLE64(&out, r.offset);
    PutLE64(&out, r.size);
    PutLE64(&out, r.xxh3);
    PutLE32(&out, static_cast<uint32_t>(r.name.size()));
    out.insert(out.end(), r.name.begin(), r.name.end());
  }
  StoreLE32(out.data() + 4, static_cast<uint32_t>(out.size() - kSkippableHeaderSize));
  return out;
}

bool IsIndexFrame(const uint8_t* frame, uint64_t n) {
  return n >= kSkippableHeaderSize + 4 && LoadLE32(frame) == kIndexMagic &&
         std::memcmp(frame + kSkippableHeaderSize, kIndexTag, 4) == 0;
}

Result<std::vector<ArchiveRegion>> DecodeIndex(const uint8_t* frame, uint64_t n, uint64_t size) {
  auto corrupt = [](const std::string& what) {
    return Corrupt("etpack index (last frame): " + what);
  };
  if (!IsIndexFrame(frame, n) || n < kSkippableHeaderSize + kIndexFixed ||
      LoadLE32(frame + 4) != n - kSkippableHeaderSize) {
    return corrupt("header does not match its " + std::to_string(n) + "-byte frame");
  }
  const uint8_t* p = frame + kSkippableHeaderSize + 4;
  const uint8_t* end = frame + n;
  const uint64_t recorded = LoadLE64(p);
  if (recorded != size) {
    return corrupt("records a file of " + std::to_string(recorded) +
                   " bytes, but the frames hold " + std::to_string(size));
  }
  const uint64_t count = LoadLE32(p + 8);
  p += 12;
  if (count > static_cast<uint64_t>(end - p) / kRegionFixed) {
    return corrupt(std::to_string(count) + " regions do not fit in the frame");
  }
  std::vector<ArchiveRegion> regions;
  regions.reserve(static_cast<size_t>(count));
  for (uint64_t i = 0; i < count; ++i) {
    const std::string where = "region " + std::to_string(i);
    if (static_cast<uint64_t>(end - p) < kRegionFixed) return corrupt(where + " is cut off");
    ArchiveRegion r;
    const uint8_t kind = p[0];
    if (kind < static_cast<uint8_t>(RegionKind::kHead) ||
        kind > static_cast<uint8_t>(RegionKind::kTensor)) {
      return corrupt(where + " has unknown kind " + std::to_string(kind));
    }
    r.kind = static_cast<RegionKind>(kind);
    r.offset = LoadLE64(p + 1);
    r.size = LoadLE64(p + 9);
    r.xxh3 = LoadLE64(p + 17);
    const uint64_t name_size = LoadLE32(p + 25);
    p += kRegionFixed;
    if (name_size > static_cast<uint64_t>(end - p)) return corrupt(where + "'s name is cut off");
    r.name.assign(reinterpret_cast<const char*>(p), static_cast<size_t>(name_size));
    p += name_size;
    if (r.offset > size || r.size > size - r.offset) {
      return corrupt(where + " ('" + r.name + "') " + RangeText(r.offset, r.size) +
                     " runs past the end of the " + std::to_string(size) + "-byte file");
    }
    regions.push_back(std::move(r));
  }
  if (p != end) return corrupt(std::to_string(end - p) + " bytes follow the last region");
  return regions;
}

}  // namespace etpack
