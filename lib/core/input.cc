// The POSIX input file system and the forwarding wrappers (etpack/input.h).

#include "etpack/input.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "core/extent_map.h"
#include "core/os_file.h"
#include "core/same_file.h"

namespace etpack {
namespace {

// One open descriptor per file, shared by every source that reads it, so a
// manifest naming thousands of items in a few files needs a few descriptors
// rather than one per item. The cache holds weak references: the descriptor
// closes when the last source reading the file goes away.
struct FileId {
  dev_t dev;
  ino_t ino;
  bool operator<(const FileId& o) const { return dev != o.dev ? dev < o.dev : ino < o.ino; }
};

class PosixInputFile;

struct FdCache {
  std::mutex mu;
  std::map<FileId, std::weak_ptr<const PosixInputFile>> files;
};

FdCache& Fds() {
  static FdCache* cache = new FdCache;  // never destroyed: sources may outlive main()
  return *cache;
}

class PosixInputFile final : public InputFile {
 public:
  PosixInputFile(int fd, FileId id, const struct stat& opened)
      : fd_(fd), id_(id), opened_(opened) {}
  ~PosixInputFile() override {
    {
      // The entry may already belong to a newer descriptor for the same file
      // (opened after this one expired): only an expired entry is ours.
      FdCache& cache = Fds();
      std::lock_guard<std::mutex> lock(cache.mu);
      auto it = cache.files.find(id_);
      if (it != cache.files.end() && it->second.expired()) cache.files.erase(it);
    }
    ::close(fd_);
  }

  int fd() const override { return fd_; }

  Result<uint64_t> Size() const override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return IoError("fstat", errno);
    return static_cast<uint64_t>(st.st_size);
  }

  Result<size_t> Read(uint64_t offset, void* dst, size_t n) const override {
    for (;;) {
      const ssize_t got = ::pread(fd_, dst, n, static_cast<off_t>(offset));
      if (got >= 0) return static_cast<size_t>(got);
      if (errno != EINTR) return IoError("pread", errno);
    }
  }

  PhysicalExtents Extents(uint64_t offset, uint64_t n) const override {
    return ExtentsOf(fd_, offset, n);
  }

  Status CheckUnchanged() const override {
    struct stat now;
    if (::fstat(fd_, &now) != 0) return IoError("fstat", errno);
    if (now.st_size != opened_.st_size) {
      return Status(Code::kIoError, "its size changed from " + std::to_string(opened_.st_size) +
                                        " to " + std::to_string(now.st_size) +
                                        " bytes while it was read");
    }
    const timespec was = ModifiedTime(opened_);
    const timespec is = ModifiedTime(now);
    if (is.tv_sec != was.tv_sec || is.tv_nsec != was.tv_nsec) {
      return Status(Code::kIoError, "it was written to while it was read");
    }
    return Status::OK();
  }

 private:
  int fd_;
  FileId id_;
  struct stat opened_;  // when opened: what CheckUnchanged compares with
};

std::shared_ptr<const PosixInputFile> CachedFile(FileId id) {
  FdCache& cache = Fds();
  std::lock_guard<std::mutex> lock(cache.mu);
  auto it = cache.files.find(id);
  return it == cache.files.end() ? nullptr : it->second.lock();
}

// Publishes a freshly opened descriptor, or hands back the file another
// thread published for the same file in the meantime.
std::shared_ptr<const PosixInputFile> ShareFd(int fd, FileId id, const struct stat& opened) {
  FdCache& cache = Fds();
  std::unique_lock<std::mutex> lock(cache.mu);
  std::weak_ptr<const PosixInputFile>& slot = cache.files[id];
  if (std::shared_ptr<const PosixInputFile> existing = slot.lock()) {
    lock.unlock();
    ::close(fd);
    return existing;
  }
  auto owned = std::make_shared<const PosixInputFile>(fd, id, opened);
  slot = owned;
  return owned;
}

// Every reader opens its files here, so this is where a FIFO, a device or
// a directory is refused for all of them (a FIFO would block the open, or
// the first read, until some writer came).
Status NotRegular(const std::string& path, mode_t mode) {
  const char* kind = S_ISDIR(mode)    ? "a directory"
                     : S_ISFIFO(mode) ? "a FIFO"
                     : S_ISSOCK(mode) ? "a socket"
                     : S_ISCHR(mode)  ? "a character device"
                     : S_ISBLK(mode)  ? "a block device"
                                      : "a special file";
  return InvalidArgument(path + ": is " + kind +
                         ", not a regular file; etpack reads only regular files");
}

class PosixInputFs final : public InputFs {
 public:
  Result<std::shared_ptr<const InputFile>> Open(const std::string& path) override {
    auto open_error = [&](int err) -> Status {
      Status s = IoError("cannot open " + path + " for reading", err);
      return err == ENOENT ? NotFound(s.message()) : s;
    };
    // stat first: opening a FIFO for reading would block until a writer came.
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return open_error(errno);
    if (!S_ISREG(st.st_mode)) return NotRegular(path, st.st_mode);
    if (auto cached = CachedFile({st.st_dev, st.st_ino})) {
      return std::shared_ptr<const InputFile>(std::move(cached));
    }
    // O_NONBLOCK because the path may have been replaced by a FIFO since
    // the stat; it means nothing for a regular file and is cleared anyway.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return open_error(errno);
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      return IoError("cannot stat " + path, err);
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      return NotRegular(path, st.st_mode);
    }
    if (st.st_size == 0) {
      // Files of /proc and /sys (and some FUSE files) say 0 bytes and have
      // content. Every reader goes by the size, so such a file would read
      // as empty without a word: one byte read tells.
      char byte;
      ssize_t got;
      do {
        got = ::pread(fd, &byte, 1, 0);
      } while (got < 0 && errno == EINTR);
      if (got != 0) {
        const int err = errno;
        ::close(fd);
        if (got < 0) return IoError("cannot read " + path, err);
        return InvalidArgument(path +
                               ": its size is given as 0 bytes but it has content (a file of "
                               "/proc or /sys?); etpack reads a file as far as its size says: "
                               "copy it to a regular file first");
      }
    }
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
      const int err = errno;
      ::close(fd);
      return IoError("cannot set up " + path + " for reading", err);
    }
    return std::shared_ptr<const InputFile>(ShareFd(fd, {st.st_dev, st.st_ino}, st));
  }
};

}  // namespace

PhysicalExtents InputFile::Extents(uint64_t, uint64_t) const { return {}; }
Status InputFile::CheckUnchanged() const { return Status::OK(); }
bool InputFile::SameFileAs(int other_fd) const { return SameFile(fd(), other_fd); }
uint64_t InputFile::Links() const {
  struct stat st;
  return ::fstat(fd(), &st) == 0 ? static_cast<uint64_t>(st.st_nlink) : 0;
}

InputFileWrapper::InputFileWrapper(std::shared_ptr<const InputFile> target)
    : target_(std::move(target)) {}

int InputFileWrapper::fd() const { return target_->fd(); }
Result<uint64_t> InputFileWrapper::Size() const { return target_->Size(); }
Result<size_t> InputFileWrapper::Read(uint64_t offset, void* dst, size_t n) const {
  return target_->Read(offset, dst, n);
}

Status InputFileWrapper::CheckUnchanged() const { return target_->CheckUnchanged(); }

Result<std::shared_ptr<const InputFile>> InputFsWrapper::Open(const std::string& path) {
  return target_->Open(path);
}

InputFs* DefaultInputFs() {
  static InputFs* const fs = new PosixInputFs();
  return fs;
}

}  // namespace etpack
