// The POSIX file system's update lock (OutputFs::LockForUpdate): an
// exclusive flock(2) on the file being updated, held from before it is
// read until its replacement is published (or the update fails). The lock
// is on its own open of the file, never on a descriptor the InputFs shares
// (DefaultInputFs keeps one per file): flock(2) belongs to an open file, so
// two updates in one process sharing it would not exclude each other.

#include <fcntl.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "io/file_lock.h"

namespace etpack {
namespace {

class PosixUpdateLock final : public UpdateLock {
 public:
  PosixUpdateLock(int fd, bool locked) : fd_(fd), locked_(locked) {}
  ~PosixUpdateLock() override {
    if (fd_ >= 0) ::close(fd_);
  }

  bool Covers(const InputFile& file) const override { return !locked_ || file.SameFileAs(fd_); }

 private:
  const int fd_;
  const bool locked_;
};

}  // namespace

Result<std::unique_ptr<UpdateLock>> LockFileForUpdate(const std::string& path,
                                                      const CancelFn& cancel) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::unique_ptr<UpdateLock>(std::make_unique<PosixUpdateLock>(-1, false));
  switch (LockExclusive(fd, cancel)) {
    case LockResult::kLocked: break;
    case LockResult::kUnsupported:
      return std::unique_ptr<UpdateLock>(std::make_unique<PosixUpdateLock>(fd, false));
    case LockResult::kCancelled:
      ::close(fd);
      return Status(Code::kIoError, path +
                                        ": update cancelled by the caller while waiting for "
                                        "another update of the file to finish");
  }
  return std::unique_ptr<UpdateLock>(std::make_unique<PosixUpdateLock>(fd, true));
}

}  // namespace etpack
