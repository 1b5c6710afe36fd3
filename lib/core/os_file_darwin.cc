// os_file_darwin.cc — core/os_file.h on macOS, which has no posix_fadvise.

#include <fcntl.h>

#include "core/os_file.h"

namespace etpack {

// F_RDAHEAD is per file, not per range: the nearest macOS has.
void AdviseSequential(int fd, uint64_t, uint64_t) { (void)::fcntl(fd, F_RDAHEAD, 1); }
// No call drops a range of clean pages (F_NOCACHE only changes later I/O
// of the descriptor): the page cache keeps them until memory is needed.
void DropCachedPages(int, uint64_t, uint64_t) {}
timespec ModifiedTime(const struct stat& st) { return st.st_mtimespec; }

}  // namespace etpack
