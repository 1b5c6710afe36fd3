#include "etpack/source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <utility>

#include "core/json_document.h"
#include "core/range_text.h"

namespace etpack {
namespace {

// Every ReadAt checks its range even though callers promise to stay inside:
// a bad plan must become an error, not a read of someone else's memory.
Status CheckRead(const Source& s, uint64_t offset, size_t n) {
  if (offset > s.size() || n > s.size() - offset) {
    return OutOfRange(s.Describe() + ": read " + RangeText(offset, n) +
                      " runs past the end of the source (" + std::to_string(s.size()) + " bytes)");
  }
  return Status::OK();
}

class MemorySourceImpl final : public Source {
 public:
  MemorySourceImpl(const void* data, uint64_t size)
      : data_(static_cast<const uint8_t*>(data)), size_(size) {}
  explicit MemorySourceImpl(std::vector<uint8_t> bytes)
      : owned_(std::move(bytes)), data_(owned_.data()), size_(owned_.size()) {}
  // Borrowed bytes whose owner `keep` holds alive (a mapping, or the source
  // a slice was cut from).
  MemorySourceImpl(std::shared_ptr<const void> keep, const void* data, uint64_t size)
      : keep_(std::move(keep)), data_(static_cast<const uint8_t*>(data)), size_(size) {}

  uint64_t size() const override { return size_; }
  Status ReadAt(uint64_t offset, void* dst, size_t n) const override {
    ETPACK_RETURN_IF_ERROR(CheckRead(*this, offset, n));
    if (n != 0) std::memcpy(dst, data_ + offset, n);
    return Status::OK();
  }
  const uint8_t* contiguous() const override { return data_; }
  std::string Describe() const override { return "memory (" + std::to_string(size_) + " bytes)"; }

 private:
  std::vector<uint8_t> owned_;
  std::shared_ptr<const void> keep_;
  const uint8_t* data_;
  uint64_t size_;
};

// One open descriptor per file, shared by every source that reads it, so a
// manifest naming thousands of items in a few files needs a few descriptors
// rather than one per item. The cache holds weak references: the descriptor
// closes when the last source reading the file goes away.
struct FileId {
  dev_t dev;
  ino_t ino;
  bool operator<(const FileId& o) const { return dev != o.dev ? dev < o.dev : ino < o.ino; }
};

class OwnedFd;

struct FdCache {
  std::mutex mu;
  std::map<FileId, std::weak_ptr<const OwnedFd>> fds;
};

FdCache& Fds() {
  static FdCache* cache = new FdCache;  // never destroyed: sources may outlive main()
  return *cache;
}

class OwnedFd {
 public:
  OwnedFd(int fd, FileId id) : fd_(fd), id_(id) {}
  ~OwnedFd() {
    {
      // The entry may already belong to a newer descriptor for the same file
      // (opened after this one expired): only an expired entry is ours.
      FdCache& cache = Fds();
      std::lock_guard<std::mutex> lock(cache.mu);
      auto it = cache.fds.find(id_);
      if (it != cache.fds.end() && it->second.expired()) cache.fds.erase(it);
    }
    ::close(fd_);
  }
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
  FileId id_;
};

std::shared_ptr<const OwnedFd> CachedFd(FileId id) {
  FdCache& cache = Fds();
  std::lock_guard<std::mutex> lock(cache.mu);
  auto it = cache.fds.find(id);
  return it == cache.fds.end() ? nullptr : it->second.lock();
}

// Publishes a freshly opened descriptor, or hands back the one another
// thread published for the same file in the meantime.
std::shared_ptr<const OwnedFd> ShareFd(int fd, FileId id) {
  FdCache& cache = Fds();
  std::unique_lock<std::mutex> lock(cache.mu);
  std::weak_ptr<const OwnedFd>& slot = cache.fds[id];
  if (std::shared_ptr<const OwnedFd> existing = slot.lock()) {
    lock.unlock();
    ::close(fd);
    return existing;
  }
  auto owned = std::make_shared<const OwnedFd>(fd, id);
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

class FileSourceImpl final : public Source {
 public:
  FileSourceImpl(std::shared_ptr<const OwnedFd> fd, std::string path, uint64_t offset,
                 uint64_t length)
      : fd_(std::move(fd)) {
    range_.path = std::move(path);
    range_.fd = fd_->fd();
    range_.offset = offset;
    range_.length = length;
  }

  uint64_t size() const override { return range_.length; }

  Status ReadAt(uint64_t offset, void* dst, size_t n) const override {
    ETPACK_RETURN_IF_ERROR(CheckRead(*this, offset, n));
    auto* out = static_cast<uint8_t*>(dst);
    uint64_t pos = range_.offset + offset;
    while (n > 0) {
      ssize_t got = ::pread(range_.fd, out, n, static_cast<off_t>(pos));
      if (got < 0) {
        if (errno == EINTR) continue;
        return IoError("read " + Describe() + " at file offset " + std::to_string(pos), errno);
      }
      if (got == 0) {
        return IoError(Describe() + ": file ended at offset " + std::to_string(pos) +
                           " while reading (was it truncated after opening?)",
                       EIO);
      }
      out += got;
      pos += static_cast<uint64_t>(got);
      n -= static_cast<size_t>(got);
    }
    return Status::OK();
  }

  const FileRange* file_range() const override { return &range_; }

  std::string Describe() const override {
    return "file " + range_.path + " " + RangeText(range_.offset, range_.length);
  }

  const std::shared_ptr<const OwnedFd>& fd() const { return fd_; }
  const std::string& path() const { return range_.path; }

 private:
  std::shared_ptr<const OwnedFd> fd_;
  FileRange range_;
};

class GeneratorSourceImpl final : public Source {
 public:
  GeneratorSourceImpl(std::string name, uint64_t size, FillFn fill)
      : name_(std::move(name)), size_(size), fill_(std::move(fill)) {}

  uint64_t size() const override { return size_; }
  Status ReadAt(uint64_t offset, void* dst, size_t n) const override {
    ETPACK_RETURN_IF_ERROR(CheckRead(*this, offset, n));
    if (n == 0) return Status::OK();
    if (!fill_) return InvalidArgument(Describe() + ": no fill function");
    return fill_(offset, static_cast<uint8_t*>(dst), n)
        .WithContext(Describe() + " " + RangeText(offset, n));
  }
  std::string Describe() const override {
    return "generator '" + name_ + "' (" + std::to_string(size_) + " bytes)";
  }

 private:
  std::string name_;
  uint64_t size_;
  FillFn fill_;
};

// Also stands for a slice that does not fit its base: such a slice keeps
// its promised size (planning goes on) and fails every read.
class SliceSourceImpl final : public Source {
 public:
  SliceSourceImpl(SourcePtr base, uint64_t offset, uint64_t length)
      : base_(std::move(base)),
        offset_(offset),
        length_(length),
        fits_(offset <= base_->size() && length <= base_->size() - offset) {}

  uint64_t size() const override { return length_; }
  Status ReadAt(uint64_t offset, void* dst, size_t n) const override {
    if (!fits_) {
      return OutOfRange(Describe() + ": the slice runs past the end of its base (" +
                        std::to_string(base_->size()) + " bytes)");
    }
    ETPACK_RETURN_IF_ERROR(CheckRead(*this, offset, n));
    return base_->ReadAt(offset_ + offset, dst, n);
  }
  std::string Describe() const override {
    return base_->Describe() + " slice " + RangeText(offset_, length_);
  }

 private:
  SourcePtr base_;
  uint64_t offset_;
  uint64_t length_;
  bool fits_;
};

}  // namespace

SourcePtr MemorySource(const void* data, uint64_t size) {
  return std::make_shared<MemorySourceImpl>(data, size);
}

SourcePtr MemorySource(const void* data, uint64_t size, std::shared_ptr<const void> keep_alive) {
  return std::make_shared<MemorySourceImpl>(std::move(keep_alive), data, size);
}

SourcePtr OwnedSource(std::vector<uint8_t> bytes) {
  return std::make_shared<MemorySourceImpl>(std::move(bytes));
}

Status CheckPathText(const std::string& path, const std::string& what) {
  if (path.find('\0') == std::string::npos) return Status::OK();
  return InvalidArgument(what + " " + QuotedText(path) +
                         " contains a NUL byte (the system would read it as " +
                         QuotedText(path.c_str()) + ")");
}

namespace {

// FileSource with an optional length (none: to the end of the file).
Result<SourcePtr> OpenFileRange(const std::string& path, uint64_t offset,
                                std::optional<uint64_t> length) {
  ETPACK_RETURN_IF_ERROR(CheckPathText(path, "path"));
  const std::string what =
      !length ? "[" + std::to_string(offset) + ", end)" : RangeText(offset, *length);
  auto open_error = [&](int err) -> Status {
    Status s = IoError("cannot open " + path + " to read " + what, err);
    return err == ENOENT ? NotFound(s.message()) : s;
  };
  // stat first: opening a FIFO for reading would block until a writer came.
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return open_error(errno);
  if (!S_ISREG(st.st_mode)) {
    return NotRegular(path, st.st_mode);
  }
  std::shared_ptr<const OwnedFd> owned = CachedFd({st.st_dev, st.st_ino});
  if (owned == nullptr) {
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
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
      const int err = errno;
      ::close(fd);
      return IoError("cannot set up " + path + " for reading", err);
    }
    owned = ShareFd(fd, {st.st_dev, st.st_ino});
  }
  // The size now, even when the descriptor is shared: the file may have grown.
  if (::fstat(owned->fd(), &st) != 0) return IoError("cannot stat " + path, errno);
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  if (offset > file_size || (length && *length > file_size - offset)) {
    return OutOfRange(path + ": range " + what + " runs past the end of the file (" +
                      std::to_string(file_size) + " bytes)");
  }
  const uint64_t n = length ? *length : file_size - offset;
  // Advisory only: a failure costs read-ahead, not correctness.
  (void)::posix_fadvise(owned->fd(), static_cast<off_t>(offset), static_cast<off_t>(n),
                        POSIX_FADV_SEQUENTIAL);
  return SourcePtr(std::make_shared<FileSourceImpl>(std::move(owned), path, offset, n));
}

}  // namespace

Result<SourcePtr> FileSource(const std::string& path, uint64_t offset) {
  return OpenFileRange(path, offset, std::nullopt);
}

Result<SourcePtr> FileSource(const std::string& path, uint64_t offset, uint64_t length) {
  return OpenFileRange(path, offset, length);
}

SourcePtr GeneratorSource(std::string name, uint64_t size, FillFn fill) {
  return std::make_shared<GeneratorSourceImpl>(std::move(name), size, std::move(fill));
}

SourcePtr SliceSource(SourcePtr base, uint64_t offset, uint64_t length) {
  assert(base != nullptr);
  if (offset > base->size() || length > base->size() - offset) {
    return std::make_shared<SliceSourceImpl>(std::move(base), offset, length);
  }
  if (offset == 0 && length == base->size()) return base;
  // Slices of files and memory stay files and memory, so the output file keeps its
  // fast paths (copy_file_range, direct memcpy) and messages keep the path.
  if (auto* file = dynamic_cast<const FileSourceImpl*>(base.get())) {
    return std::make_shared<FileSourceImpl>(file->fd(), file->path(),
                                            file->file_range()->offset + offset, length);
  }
  if (const uint8_t* bytes = base->contiguous()) {
    return std::make_shared<MemorySourceImpl>(base, bytes + offset, length);
  }
  return std::make_shared<SliceSourceImpl>(std::move(base), offset, length);
}

Result<std::vector<uint8_t>> ReadAll(const Source& source, uint64_t max_bytes) {
  const uint64_t size = source.size();
  if (size > max_bytes || size > SIZE_MAX) {
    return OutOfRange(source.Describe() + ": " + std::to_string(size) + " bytes is more than the " +
                      std::to_string(max_bytes) + "-byte limit for reading into memory");
  }
  std::vector<uint8_t> out;
  try {
    out.resize(static_cast<size_t>(size));
  } catch (const std::bad_alloc&) {
    return OutOfRange(source.Describe() + ": cannot allocate " + std::to_string(size) + " bytes");
  }
  ETPACK_RETURN_IF_ERROR(source.ReadAt(0, out.data(), out.size()));
  return out;
}

Result<bool> SameBytes(const Source& a, const Source& b) {
  if (a.size() != b.size()) return false;
  constexpr size_t kChunk = size_t{1} << 20;
  const uint64_t size = a.size();
  const uint8_t* pa = a.contiguous();
  const uint8_t* pb = b.contiguous();
  std::vector<uint8_t> buf_a, buf_b;
  try {
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(size, kChunk));
    if (pa == nullptr) buf_a.resize(chunk);
    if (pb == nullptr) buf_b.resize(chunk);
  } catch (const std::bad_alloc&) {
    return OutOfRange("cannot allocate buffers to compare " + a.Describe() + " with " +
                      b.Describe());
  }
  for (uint64_t pos = 0; pos < size;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(size - pos, kChunk));
    const uint8_t* x = pa ? pa + pos : buf_a.data();
    const uint8_t* y = pb ? pb + pos : buf_b.data();
    if (!pa) ETPACK_RETURN_IF_ERROR(a.ReadAt(pos, buf_a.data(), n));
    if (!pb) ETPACK_RETURN_IF_ERROR(b.ReadAt(pos, buf_b.data(), n));
    if (std::memcmp(x, y, n) != 0) return false;
    pos += n;
  }
  return true;
}

uint32_t SourceIndex::Add(const SourcePtr& source) {
  const auto [it, fresh] = position_.emplace(source.get(), static_cast<uint32_t>(list_->size()));
  if (fresh) list_->push_back(source);
  return it->second;
}

}  // namespace etpack
