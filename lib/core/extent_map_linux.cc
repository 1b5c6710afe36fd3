// FIEMAP, read as conservatively as it can be: any extent whose bytes are
// not plainly "these blocks, as stored" makes the whole range unknown, so a
// caller that takes equal maps for equal bytes is never wrong, only
// sometimes slower (it reads instead).

#include "core/extent_map.h"

#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

namespace etpack {
namespace {

// Extents asked for per call, and in all: a range in more pieces than
// kMaxRuns is read rather than mapped (its map would cost more than it saves).
constexpr uint32_t kBatch = 256;
constexpr size_t kMaxRuns = 1 << 16;

// Flags under which fe_physical is not where the bytes a read returns are
// stored as they are (or not known yet). UNWRITTEN reads as zeros whatever
// the blocks hold.
constexpr uint32_t kNotPlain = FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC |
                               FIEMAP_EXTENT_ENCODED | FIEMAP_EXTENT_DATA_ENCRYPTED |
                               FIEMAP_EXTENT_NOT_ALIGNED | FIEMAP_EXTENT_DATA_INLINE |
                               FIEMAP_EXTENT_DATA_TAIL | FIEMAP_EXTENT_UNWRITTEN;

// Whether equal (device, physical block) means the same stored bytes on the
// file system holding `fd`. Only where blocks are shared between files at
// all (XFS, btrfs) is the shortcut worth anything, and only there is it
// trusted: other file systems answer FIEMAP in ways that make two files'
// maps look alike (SMB reports physical = logical; an overlay may give files
// of two lower file systems one st_dev), and an XFS file on the realtime
// device has block numbers of another device under the same st_dev.
bool BlocksIdentifyBytes(int fd) {
  struct statfs fs;
  if (::fstatfs(fd, &fs) != 0) return false;
  const auto type = static_cast<unsigned long>(fs.f_type);
  if (type == BTRFS_SUPER_MAGIC) return true;
  if (type != XFS_SUPER_MAGIC) return false;
  struct fsxattr attr {};
  return ::ioctl(fd, FS_IOC_FSGETXATTR, &attr) == 0 && (attr.fsx_xflags & FS_XFLAG_REALTIME) == 0;
}

}  // namespace

PhysicalExtents ExtentsOf(int fd, uint64_t offset, uint64_t n) {
  PhysicalExtents out;
  struct stat st;
  if (n == 0 || offset + n < offset || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      !BlocksIdentifyBytes(fd)) {
    return out;
  }
  const size_t bytes = sizeof(struct fiemap) + kBatch * sizeof(struct fiemap_extent);
  std::unique_ptr<struct fiemap, void (*)(void*)> map(
      static_cast<struct fiemap*>(std::calloc(1, bytes)), std::free);
  if (map == nullptr) return out;
  const uint64_t end = offset + n;
  uint64_t at = offset;  // the first byte not mapped yet
  std::vector<std::pair<uint64_t, uint64_t>> runs;
  bool first = true;
  while (at < end) {
    std::fill_n(reinterpret_cast<char*>(map.get()), bytes, 0);
    map->fm_start = at;
    map->fm_length = end - at;
    map->fm_flags = first ? FIEMAP_FLAG_SYNC : 0;
    map->fm_extent_count = kBatch;
    first = false;
    if (::ioctl(fd, FS_IOC_FIEMAP, map.get()) != 0 || map->fm_mapped_extents == 0) return out;
    for (uint32_t i = 0; i < map->fm_mapped_extents && at < end; ++i) {
      const struct fiemap_extent& e = map->fm_extents[i];
      const uint64_t logical = e.fe_logical, length = e.fe_length;
      if ((e.fe_flags & kNotPlain) != 0 || logical > at || logical + length <= at) {
        return out;  // transformed, a hole before it, or not progressing
      }
      const uint64_t len = std::min(logical + length, end) - at;
      const uint64_t physical = e.fe_physical + (at - logical);
      if (!runs.empty() && runs.back().first + runs.back().second == physical) {
        runs.back().second += len;
      } else {
        if (runs.size() == kMaxRuns) return out;
        runs.emplace_back(physical, len);
      }
      at += len;
      if ((e.fe_flags & FIEMAP_EXTENT_LAST) != 0 && at < end) return out;  // past the end
    }
  }
  out.device = static_cast<uint64_t>(st.st_dev);
  out.runs = std::move(runs);
  return out;
}

}  // namespace etpack
