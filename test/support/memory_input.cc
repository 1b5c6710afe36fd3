#include "memory_input.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace etpack {
namespace {

class MemoryInputFile final : public InputFile {
 public:
  MemoryInputFile(std::shared_ptr<const std::vector<uint8_t>> bytes, int fd)
      : bytes_(std::move(bytes)), fd_(fd) {}
  ~MemoryInputFile() override { ::close(fd_); }

  int fd() const override { return fd_; }
  Result<uint64_t> Size() const override { return uint64_t{bytes_->size()}; }
  Result<size_t> Read(uint64_t offset, void* dst, size_t n) const override {
    if (offset >= bytes_->size()) return size_t{0};
    const size_t k = std::min<size_t>(n, bytes_->size() - static_cast<size_t>(offset));
    std::memcpy(dst, bytes_->data() + offset, k);
    return k;
  }

 private:
  std::shared_ptr<const std::vector<uint8_t>> bytes_;
  int fd_;
};

}  // namespace

void MemoryInputFs::Add(const std::string& path, std::vector<uint8_t> bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  files_[path] = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
}

void MemoryInputFs::Add(const std::string& path, const std::string& bytes) {
  Add(path, std::vector<uint8_t>(bytes.begin(), bytes.end()));
}

std::vector<std::string> MemoryInputFs::opened() const {
  std::lock_guard<std::mutex> lock(mu_);
  return opened_;
}

Result<std::shared_ptr<const InputFile>> MemoryInputFs::Open(const std::string& path) {
  std::shared_ptr<const std::vector<uint8_t>> bytes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    opened_.push_back(path);
    auto it = files_.find(path);
    if (it == files_.end()) return NotFound(path + ": no such file in memory");
    bytes = it->second;
  }
  const int fd = ::memfd_create("memory_input", MFD_CLOEXEC);
  if (fd < 0) return IoError("memfd_create for " + path, errno);
  for (size_t done = 0; done < bytes->size();) {
    const ssize_t put = ::write(fd, bytes->data() + done, bytes->size() - done);
    if (put < 0) {
      const int err = errno;
      ::close(fd);
      return IoError("write memfd for " + path, err);
    }
    done += static_cast<size_t>(put);
  }
  return std::shared_ptr<const InputFile>(std::make_shared<MemoryInputFile>(bytes, fd));
}

}  // namespace etpack
