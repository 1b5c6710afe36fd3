// The POSIX file sink: temporary file, reserved in full, filled through
// mmap windows (or copy_file_range), renamed into place by Finish().
//
// Memory stays bounded however large the file: a window is unmapped as soon
// as the writer moves past it, its write-back is started at once, and after
// `writeback_windows` more windows the writer waits for it and drops it from
// the page cache.

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "etpack/sink.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace etpack {
namespace {

uint64_t PageSize() {
  static const uint64_t page = [] {
    long p = ::sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<uint64_t>(p) : uint64_t{4096};
  }();
  return page;
}

// Reads the umask from /proc because umask() can only be read by setting
// it, which races with other threads creating files.
mode_t CurrentUmask() {
  if (FILE* f = std::fopen("/proc/self/status", "re")) {
    char line[256];
    unsigned mask = 0;
    bool found = false;
    while (std::fgets(line, sizeof line, f)) {
      if (std::sscanf(line, "Umask: %o", &mask) == 1) {
        found = true;
        break;
      }
    }
    std::fclose(f);
    if (found) return static_cast<mode_t>(mask);
  }
  mode_t mask = ::umask(022);
  ::umask(mask);
  return mask;
}

std::string Range(uint64_t offset, uint64_t length) {
  return "[" + std::to_string(offset) + ", +" + std::to_string(length) + ")";
}

class FileSink final : public Sink {
 public:
  FileSink(std::string path, std::string dir, std::string temp, int fd,
           const FileSinkOptions& options)
      : path_(std::move(path)),
        dir_(std::move(dir)),
        temp_(std::move(temp)),
        fd_(fd),
        options_(options) {
    const uint64_t page = PageSize();
    const uint64_t want = std::max<uint64_t>(options.window_bytes, page);
    // Whole pages, so consecutive windows never share a page.
    window_bytes_ = want > UINT64_MAX - page ? UINT64_MAX / page * page
                                             : (want + page - 1) / page * page;
    max_inflight_ = static_cast<size_t>(std::max(options.writeback_windows, 0));
  }

  ~FileSink() override {
    if (!done_) Abandon();
  }

  using Sink::Write;

  Status Reserve(uint64_t size) override {
    if (!status_.ok()) return status_;
    if (reserved_ || done_) {
      return Fail(InvalidArgument(path_ + ": Reserve called twice"));
    }
    if (size > static_cast<uint64_t>(INT64_MAX)) {
      return Fail(OutOfRange(path_ + ": cannot reserve " + std::to_string(size) +
                             " bytes, more than a file can hold"));
    }
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
      return Fail(ReserveError(size, "ftruncate", errno));
    }
    if (size > 0) {
      int rc;
      do {
        rc = ::fallocate(fd_, 0, 0, static_cast<off_t>(size));
      } while (rc != 0 && errno == EINTR);
      if (rc != 0) {
        // Without reserved blocks a full disk would surface as SIGBUS on a
        // mapped page; pwrite reports it as an error instead.
        if (errno == EOPNOTSUPP) {
          use_mmap_ = false;
        } else {
          return Fail(ReserveError(size, "fallocate", errno));
        }
      }
    }
    size_ = size;
    reserved_ = true;
    return Status::OK();
  }

  Status Write(uint64_t offset, const Source& source) override {
    if (!status_.ok()) return status_;
    if (!reserved_ || done_) {
      return Fail(InvalidArgument(path_ + ": Write called " +
                                  (done_ ? "after Finish" : "before Reserve")));
    }
    const uint64_t n = source.size();
    if (offset < next_offset_) {
      return Fail(InvalidArgument(
          path_ + ": write of " + source.Describe() + " at offset " +
          std::to_string(offset) +
          " starts before the end of the previous write (" +
          std::to_string(next_offset_) + "); writes must go in increasing order"));
    }
    const bool inside = offset <= size_ && n <= size_ - offset;
    assert(inside && "write runs past the reserved size");
    if (!inside) {
      return Fail(OutOfRange(path_ + ": write of " + source.Describe() +
                             " at offset " + std::to_string(offset) +
                             " runs past the reserved size (" +
                             std::to_string(size_) + " bytes)"));
    }
    uint64_t done = 0;
    const FileRange* range = source.file_range();
    if (n > 0 && options_.copy_file_range && range != nullptr) {
      assert(range->length == n);
      Result<uint64_t> copied = CopyInKernel(offset, source, *range);
      if (!copied.ok()) return Fail(copied.status());
      done = *copied;
    }
    if (done < n) {
      Status s = use_mmap_ ? CopyMapped(offset + done, source, done, n - done)
                           : CopyBuffered(offset + done, source, done, n - done);
      if (!s.ok()) return Fail(s);
    }
    next_offset_ = offset + n;
    return Status::OK();
  }

  Status Finish() override {
    if (done_) {
      return status_.ok() ? InvalidArgument(path_ + ": Finish called after Finish or Abandon")
                          : status_;
    }
    if (status_.ok()) (void)Fail(Commit());
    if (!status_.ok()) {
      Abandon();
      return status_;
    }
    done_ = true;
    return Status::OK();
  }

  void Abandon() override {
    done_ = true;
    Unmap();
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (!renamed_ && !temp_.empty()) ::unlink(temp_.c_str());
    temp_.clear();
  }

  uint64_t bytes_written() const override { return written_; }

 private:
  Status Fail(Status s) {
    if (status_.ok()) status_ = s;
    return s;
  }

  Status ReserveError(uint64_t size, const char* call, int err) const {
    std::string what = path_ + ": cannot reserve " + std::to_string(size) +
                       " bytes for the output (" + call + ")";
    Status s = IoError(std::move(what), err);
    if (err == EFBIG) {
      return Status(s.code(), s.message() +
                                  " (over the file size limit; see ulimit -f)");
    }
    return s;
  }

  Status WriteError(const std::string& call, uint64_t offset, uint64_t n,
                    int err) const {
    return IoError(path_ + ": " + call + " of " + Range(offset, n) + " into " +
                       temp_ + " failed",
                   err);
  }

  // Kernel-side copy of a file source. Returns how many leading bytes it
  // copied; fewer than the whole range when the file systems cannot do it,
  // in which case the caller copies the rest through memory.
  Result<uint64_t> CopyInKernel(uint64_t offset, const Source& source,
                                const FileRange& range) {
    ETPACK_RETURN_IF_ERROR(RetireWindow());
    const uint64_t n = range.length;
    uint64_t done = 0;
    uint64_t chunk_start = 0;  // start of the part not yet handed to write-behind
    auto flush = [&]() -> Status {
      const uint64_t len = done - chunk_start;
      if (len == 0) return Status::OK();
      DropSourceCache(source, chunk_start, len);
      Status s = WroteRange(offset + chunk_start, len);
      chunk_start = done;
      return s;
    };
    while (done < n) {
      loff_t in = static_cast<loff_t>(range.offset + done);
      loff_t out = static_cast<loff_t>(offset + done);
      const size_t want = static_cast<size_t>(
          std::min<uint64_t>(n - done, window_bytes_ - (done - chunk_start)));
      ssize_t got = ::copy_file_range(range.fd, &in, fd_, &out, want, 0);
      if (got < 0) {
        const int err = errno;
        if (err == EINTR) continue;
        if (err == EXDEV || err == EINVAL || err == ENOSYS || err == EOPNOTSUPP) {
          break;
        }
        return WriteError("copy_file_range from " + source.Describe(), offset + done,
                          n - done, err);
      }
      if (got == 0) {
        return IoError(source.Describe() + ": file ended at offset " +
                           std::to_string(range.offset + done) +
                           " while copying into " + path_ +
                           " (was it truncated after opening?)",
                       EIO);
      }
      done += static_cast<uint64_t>(got);
      written_ += static_cast<uint64_t>(got);
      if (done - chunk_start >= window_bytes_) ETPACK_RETURN_IF_ERROR(flush());
    }
    ETPACK_RETURN_IF_ERROR(flush());
    return done;
  }

  // Copies source bytes [src_pos, src_pos + n) to file offset `pos` through
  // mapped windows of the output.
  Status CopyMapped(uint64_t pos, const Source& source, uint64_t src_pos,
                    uint64_t n) {
    const uint8_t* bytes = source.contiguous();
    while (n > 0) {
      if (window_ == nullptr || pos >= window_start_ + window_len_) {
        ETPACK_RETURN_IF_ERROR(RetireWindow());
        ETPACK_RETURN_IF_ERROR(MapWindow(pos));
      }
      assert(pos >= window_start_);
      const uint64_t chunk = std::min(n, window_start_ + window_len_ - pos);
      assert(pos + chunk <= size_);
      uint8_t* dst = window_ + (pos - window_start_);
      ETPACK_RETURN_IF_ERROR(Populate(pos, chunk));
      if (bytes != nullptr) {
        std::memcpy(dst, bytes + src_pos, static_cast<size_t>(chunk));
      } else {
        Status s = source.ReadAt(src_pos, dst, static_cast<size_t>(chunk));
        if (!s.ok()) return s.WithContext(path_);
        DropSourceCache(source, src_pos, chunk);
      }
      pos += chunk;
      src_pos += chunk;
      n -= chunk;
      written_ += chunk;
    }
    return Status::OK();
  }

  // The same through pwrite, for file systems that cannot reserve space.
  Status CopyBuffered(uint64_t pos, const Source& source, uint64_t src_pos,
                      uint64_t n) {
    const uint8_t* bytes = source.contiguous();
    if (bytes == nullptr && buffer_.empty()) {
      try {
        buffer_.resize(static_cast<size_t>(window_bytes_));
      } catch (const std::bad_alloc&) {
        return OutOfRange(path_ + ": cannot allocate a " +
                          std::to_string(window_bytes_) + "-byte write buffer");
      }
    }
    while (n > 0) {
      const uint64_t chunk = std::min(n, window_bytes_);
      const uint8_t* from = bytes ? bytes + src_pos : buffer_.data();
      if (bytes == nullptr) {
        Status s = source.ReadAt(src_pos, buffer_.data(), static_cast<size_t>(chunk));
        if (!s.ok()) return s.WithContext(path_);
        DropSourceCache(source, src_pos, chunk);
      }
      for (uint64_t put = 0; put < chunk;) {
        ssize_t got = ::pwrite(fd_, from + put, static_cast<size_t>(chunk - put),
                               static_cast<off_t>(pos + put));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
          return WriteError("pwrite", pos + put, chunk - put, got < 0 ? errno : ENOSPC);
        }
        put += static_cast<uint64_t>(got);
      }
      ETPACK_RETURN_IF_ERROR(WroteRange(pos, chunk));
      pos += chunk;
      src_pos += chunk;
      n -= chunk;
      written_ += chunk;
    }
    return Status::OK();
  }

  Status MapWindow(uint64_t pos) {
    const uint64_t start = pos / PageSize() * PageSize();
    const uint64_t len = std::min(window_bytes_, size_ - start);
    void* p = ::mmap(nullptr, static_cast<size_t>(len), PROT_READ | PROT_WRITE,
                     MAP_SHARED, fd_, static_cast<off_t>(start));
    if (p == MAP_FAILED) return WriteError("mmap", start, len, errno);
    window_ = static_cast<uint8_t*>(p);
    window_start_ = start;
    window_len_ = len;
    return Status::OK();
  }

  // Faults the pages in before the copy: one call instead of a page fault
  // per page, and a failure to back them becomes an error, not SIGBUS.
  Status Populate(uint64_t pos, uint64_t n) {
    if (!populate_) return Status::OK();
    const uint64_t page = PageSize();
    const uint64_t from = (pos - window_start_) / page * page;
    const uint64_t to =
        std::min(window_len_, (pos - window_start_ + n + page - 1) / page * page);
    if (::madvise(window_ + from, static_cast<size_t>(to - from),
                  MADV_POPULATE_WRITE) != 0) {
      const int err = errno;
      if (err == EINVAL) {
        populate_ = false;  // kernel older than 5.14
      } else if (err != EINTR && err != EAGAIN) {
        return WriteError("madvise(MADV_POPULATE_WRITE)", window_start_ + from,
                          to - from, err);
      }
    }
    return Status::OK();
  }

  void Unmap() {
    if (window_ != nullptr) ::munmap(window_, static_cast<size_t>(window_len_));
    window_ = nullptr;
  }

  Status RetireWindow() {
    if (window_ == nullptr) return Status::OK();
    Unmap();
    return WroteRange(window_start_, window_len_);
  }

  // Write-behind: start write-back of a finished range now; once more than
  // max_inflight_ ranges are pending, wait for the oldest and evict it.
  Status WroteRange(uint64_t start, uint64_t len) {
    if (len == 0) return Status::OK();
    if (::sync_file_range(fd_, static_cast<off_t>(start), static_cast<off_t>(len),
                          SYNC_FILE_RANGE_WRITE) != 0 &&
        IsWriteFailure(errno)) {
      return WriteError("write-back", start, len, errno);
    }
    inflight_.emplace_back(start, len);
    while (inflight_.size() > max_inflight_) {
      const auto [s, l] = inflight_.front();
      inflight_.pop_front();
      if (::sync_file_range(fd_, static_cast<off_t>(s), static_cast<off_t>(l),
                            SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                                SYNC_FILE_RANGE_WAIT_AFTER) != 0 &&
          IsWriteFailure(errno)) {
        return WriteError("write-back", s, l, errno);
      }
      (void)::posix_fadvise(fd_, static_cast<off_t>(s), static_cast<off_t>(l),
                            POSIX_FADV_DONTNEED);
    }
    return Status::OK();
  }

  // sync_file_range is advisory here (fdatasync gives durability), so only
  // errors that mean the data did not get written count.
  static bool IsWriteFailure(int err) {
    return err == EIO || err == ENOSPC || err == EDQUOT;
  }

  // Source bytes already copied are not needed again; keeping them would let
  // the page cache grow with the input size.
  // The start is rounded down because the kernel only drops folios that lie
  // wholly inside the range, and a large folio straddling the previous chunk's
  // end would otherwise stay cached for good.
  static void DropSourceCache(const Source& source, uint64_t src_pos, uint64_t n) {
    constexpr uint64_t kLargestFolio = uint64_t{2} << 20;
    if (const FileRange* r = source.file_range()) {
      const uint64_t end = r->offset + src_pos + n;
      const uint64_t start = (r->offset + src_pos) / kLargestFolio * kLargestFolio;
      (void)::posix_fadvise(r->fd, static_cast<off_t>(start),
                            static_cast<off_t>(end - start), POSIX_FADV_DONTNEED);
    }
  }

  Status Commit() {
    ETPACK_RETURN_IF_ERROR(RetireWindow());
    if (options_.sync) {
      if (::fdatasync(fd_) != 0) {
        return IoError(path_ + ": cannot flush " + temp_ + " to disk", errno);
      }
      // All clean now: drop what write-behind has not evicted yet.
      (void)::posix_fadvise(fd_, 0, 0, POSIX_FADV_DONTNEED);
    }
    inflight_.clear();
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return IoError(path_ + ": cannot close " + temp_, errno);
    if (::rename(temp_.c_str(), path_.c_str()) != 0) {
      return IoError(path_ + ": cannot rename " + temp_ + " into place", errno);
    }
    renamed_ = true;
    if (options_.sync) {
      int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (dfd < 0) {
        return IoError(path_ + " is in place, but its directory " + dir_ +
                           " could not be opened to sync it",
                       errno);
      }
      const int rc = ::fsync(dfd);
      const int err = errno;
      ::close(dfd);
      if (rc != 0 && err != EINVAL) {
        return IoError(path_ + " is in place, but its directory " + dir_ +
                           " could not be synced",
                       err);
      }
    }
    return Status::OK();
  }

  const std::string path_;
  const std::string dir_;
  std::string temp_;  // cleared once removed
  int fd_;
  const FileSinkOptions options_;
  uint64_t window_bytes_;
  size_t max_inflight_;

  bool reserved_ = false;
  bool done_ = false;     // Finish or Abandon ran
  bool renamed_ = false;  // the temporary file is now `path_`
  bool use_mmap_ = true;
  bool populate_ = true;
  uint64_t size_ = 0;
  uint64_t next_offset_ = 0;
  uint64_t written_ = 0;

  uint8_t* window_ = nullptr;
  uint64_t window_start_ = 0;
  uint64_t window_len_ = 0;
  std::deque<std::pair<uint64_t, uint64_t>> inflight_;  // (offset, length)
  std::vector<uint8_t> buffer_;                         // pwrite path only
  Status status_;
};

}  // namespace

Result<std::unique_ptr<Sink>> OpenFileSink(const std::string& path,
                                           const FileSinkOptions& options) {
  const size_t slash = path.rfind('/');
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.empty() || name == "." || name == "..") {
    return InvalidArgument("output path '" + path + "' does not name a file");
  }
  const std::string prefix =
      slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return InvalidArgument("output path " + path + " is a directory");
  }
  std::string temp = prefix + "." + name + ".etpack-XXXXXX";
  std::vector<char> buf(temp.begin(), temp.end());
  buf.push_back('\0');
  const int fd = ::mkostemp(buf.data(), O_CLOEXEC);
  if (fd < 0) {
    return IoError("cannot create a temporary file in " + dir + " for " + path,
                   errno);
  }
  temp.assign(buf.data());
  if (::fchmod(fd, 0666 & ~CurrentUmask()) != 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(temp.c_str());
    return IoError("cannot set the mode of " + temp, err);
  }
  return std::unique_ptr<Sink>(
      std::make_unique<FileSink>(path, dir, std::move(temp), fd, options));
}

}  // namespace etpack
