// core/os_file.h (internal) — the file calls whose spelling differs by OS
// and that sit below io/posix_calls.h: cache advice (advisory, so they
// return nothing) and the stat field of the modification time.
// os_file_linux.cc and os_file_darwin.cc implement it; meson picks one.

#ifndef ETPACK_CORE_OS_FILE_H_
#define ETPACK_CORE_OS_FILE_H_

#include <sys/stat.h>

#include <cstdint>
#include <ctime>

namespace etpack {

// [offset, +n) of `fd` will be read once, in order: read ahead.
void AdviseSequential(int fd, uint64_t offset, uint64_t n);
// [offset, +n) of `fd` (n = 0: to the end) will not be read again: drop
// its clean cached pages. A no-op where the OS cannot drop a range.
void DropCachedPages(int fd, uint64_t offset, uint64_t n);
// st_mtim (Linux) / st_mtimespec (macOS).
timespec ModifiedTime(const struct stat& st);

}  // namespace etpack

#endif  // ETPACK_CORE_OS_FILE_H_
