#include "mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace etpack {

MappedFile::~MappedFile() {
  if (addr_ != nullptr) munmap(addr_, size_);
}

Result<std::shared_ptr<MappedFile>> MapFileReadOnly(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError(path, errno);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return IoError(path, err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument(path + ": not a regular file");
  }
  std::shared_ptr<MappedFile> m(new MappedFile());
  m->size_ = static_cast<uint64_t>(st.st_size);
  static const uint8_t kEmpty[16] = {};
  m->data_ = kEmpty;
  if (m->size_ > 0) {
    void* addr = mmap(nullptr, m->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return IoError(path + ": mmap", err);
    }
    m->addr_ = addr;
    m->data_ = static_cast<const uint8_t*>(addr);
  }
  ::close(fd);  // the mapping stays valid without the descriptor
  return m;
}

}  // namespace etpack
