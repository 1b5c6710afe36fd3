#include "io/mapped_file.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cassert>
#include <cerrno>
#include <string>

namespace etpack {
namespace {

class Mapping {
 public:
  Mapping(void* addr, size_t length) : addr_(addr), length_(length) {}
  ~Mapping() { ::munmap(addr_, length_); }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

 private:
  void* addr_;
  size_t length_;
};

}  // namespace

Result<std::shared_ptr<const void>> MapFileHead(const Source& file, uint64_t length,
                                                const uint8_t** data) {
  alignas(16) static const uint8_t kEmpty[16] = {};
  const FileRange* range = file.file_range();
  assert(range != nullptr && length <= range->length);
  if (length == 0) {
    *data = kEmpty;
    return std::shared_ptr<const void>();
  }
  const long page_size = ::sysconf(_SC_PAGESIZE);
  const uint64_t page = page_size > 0 ? static_cast<uint64_t>(page_size) : 4096;
  const uint64_t start = range->offset / page * page;
  const uint64_t skip = range->offset - start;
  if (length > SIZE_MAX - skip) {
    return OutOfRange(file.Describe() + ": cannot map " + std::to_string(length) + " bytes");
  }
  void* addr = ::mmap(nullptr, static_cast<size_t>(skip + length), PROT_READ, MAP_PRIVATE,
                      range->fd, static_cast<off_t>(start));
  if (addr == MAP_FAILED) {
    const int err = errno;
    Status s = IoError(file.Describe() + ": cannot map its first " + std::to_string(length) +
                           " bytes (the headers and flatbuffer)",
                       err);
    if (err != ENOMEM) return s;
    // Out of address space: the head does not fit this process.
    return OutOfRange(s.message() + "; is the address-space limit (ulimit -v) too low?");
  }
  *data = static_cast<const uint8_t*>(addr) + skip;
  return std::shared_ptr<const void>(
      std::make_shared<Mapping>(addr, static_cast<size_t>(skip + length)));
}

}  // namespace etpack
