// core/extent_map.h (internal) — where a byte range of an open file lies
// on its device, from the file system's extent map (FIEMAP): what the
// POSIX InputFile answers Extents() with (etpack/input.h).

#ifndef ETPACK_CORE_EXTENT_MAP_H_
#define ETPACK_CORE_EXTENT_MAP_H_

#include <cstdint>

#include "etpack/input.h"

namespace etpack {

// The physical runs of bytes [offset, offset + n) of the regular file open
// as `fd`, or unknown (empty runs) when the file system is not one whose
// block numbers identify stored bytes across files (only XFS, outside its
// realtime device, and btrfs are trusted), has no extent map,
// when any byte of the range is in a hole, past the end, in a block not yet
// allocated or written, or in data the file system stores transformed
// (inline, compressed, encrypted), or when the map is very fragmented.
// Dirty pages of the range are flushed first (FIEMAP_FLAG_SYNC), so the
// map is of the bytes a read would return. Never fails: unknown instead.
PhysicalExtents ExtentsOf(int fd, uint64_t offset, uint64_t n);

}  // namespace etpack

#endif  // ETPACK_CORE_EXTENT_MAP_H_
