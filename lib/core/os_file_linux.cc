// os_file_linux.cc — core/os_file.h with posix_fadvise.

#include <fcntl.h>

#include "core/os_file.h"

namespace etpack {

void AdviseSequential(int fd, uint64_t offset, uint64_t n) {
  (void)::posix_fadvise(fd, static_cast<off_t>(offset), static_cast<off_t>(n),
                        POSIX_FADV_SEQUENTIAL);
}
void DropCachedPages(int fd, uint64_t offset, uint64_t n) {
  (void)::posix_fadvise(fd, static_cast<off_t>(offset), static_cast<off_t>(n), POSIX_FADV_DONTNEED);
}
timespec ModifiedTime(const struct stat& st) { return st.st_mtim; }

}  // namespace etpack
