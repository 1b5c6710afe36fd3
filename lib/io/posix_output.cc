// The POSIX output: a temporary file, reserved in full, filled through an
// mmap window (or copy_file_range / pwrite), put in place by Publish().
//
// The temporary file is unnamed (O_TMPFILE) until Publish() links it: under
// the destination's own name when that is free, else under a hidden name
// that is then renamed over the destination. A process killed mid-write (a
// CI timeout, the OOM killer) thus leaves nothing behind, where a named
// temporary would stay as gigabytes of hidden garbage. Linking goes through
// /proc/self/fd, so without /proc, or on a file system without O_TMPFILE,
// the temporary is named from the start.
//
// Memory stays bounded however large the file. The output is cut into a
// fixed grid of window_bytes cells; the mapped window is always one cell.
// Writes only move forward, so everything below the end of the last write
// (the frontier) is final: when the frontier leaves a cell, that cell's
// write-back is started, and once more than writeback_windows cells are in
// flight the output waits for the oldest and drops it from the page cache.
// Write-back therefore costs a few system calls per cell, however many
// items the cell holds.

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "core/range_text.h"
#include "etpack/output.h"
#include "io/checked_output.h"
#include "io/destination.h"
#include "io/posix_calls.h"
#include "io/posix_output.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace etpack {
namespace {

// File items at least this large (or a window, if that is smaller) go to
// copy_file_range. Below it one pread into the window that is already mapped
// costs the same single system call and keeps the bytes where the next items
// land; above it the kernel copy saves mapping and faulting the output, and
// on file systems that share extents (XFS, btrfs) it need not copy at all.
constexpr uint64_t kKernelCopyMin = uint64_t{1} << 20;

// Keeps window arithmetic (cell index * window) far from overflow.
constexpr uint64_t kMaxWindow = uint64_t{1} << 40;

// ".<name>.etpack-XXXXXX": what the temporary name adds to the output name.
// The longer of the two kinds of temporary name decides how much of the
// output name fits.
constexpr size_t kTempExtra = 1 + sizeof(".etpack-linked-XXXXXX") - 1;
// A finished output that replaces a file is linked under a hidden name
// ".<name>.etpack-linked-XXXXXX" and renamed onto the file a few system
// calls later. A process killed between the two leaves that name behind;
// the next output to the same destination removes it once its inode change
// time (set by the link) is this old, which no live publish can be.
constexpr time_t kOrphanAgeSeconds = 60;

// Removes orphaned ".<name>.etpack-linked-XXXXXX" files of this user from
// `dir`: only that pattern, only regular files, only ones linked long ago.
void RemoveOrphanedLinks(const std::string& dir, const std::string& linked_prefix, time_t now) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() != linked_prefix.size() + 6 ||
        name.compare(0, linked_prefix.size(), linked_prefix) != 0) {
      continue;
    }
    struct stat st;
    if (::fstatat(::dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) continue;
    if (now - st.st_ctime < kOrphanAgeSeconds) continue;
    (void)::unlinkat(::dirfd(d), name.c_str(), 0);
  }
  ::closedir(d);
}

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
  const std::string text = ProcSelfStatus("Umask");
  if (!text.empty()) return static_cast<mode_t>(std::strtoul(text.c_str(), nullptr, 8));
  mode_t mask = ::umask(022);
  ::umask(mask);
  return mask;
}

// The name through which an unnamed (O_TMPFILE) file can be linked.
std::string ProcFdPath(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

class PosixOutput final : public CheckedOutput {
 public:
  // `given` is the destination as the caller named it, `target` the file it
  // replaces. `temp` is the temporary file's name, or empty while it is
  // unnamed; `temp_prefix` is what Link() names an unnamed one (plus 6
  // characters).
  PosixOutput(const std::string& given, Destination target, std::string temp_prefix,
              std::string temp, int fd, const OutputOptions& options, PosixCalls* calls)
      : CheckedOutput(given),
        path_(target.path),
        key_(target.key),
        dir_(target.dir),
        real_dir_(target.real_dir),
        existing_(target.exists),
        dev_(target.dev),
        ino_(target.ino),
        temp_prefix_(std::move(temp_prefix)),
        temp_(std::move(temp)),
        fd_(fd),
        options_(options),
        calls_(calls),
        use_mmap_(options.mmap),
        kernel_copy_(options.copy_file_range),
        clone_(options.share_extents) {
    const uint64_t page = PageSize();
    const uint64_t want = std::min(std::max<uint64_t>(options.window_bytes, page), kMaxWindow);
    // Whole pages, so cells never share a page.
    window_bytes_ = (want + page - 1) / page * page;
    max_inflight_ = static_cast<uint64_t>(std::max(options.writeback_windows, 0));
    kernel_copy_min_ = std::min(kKernelCopyMin, window_bytes_);
  }

  // Removes whatever is not in place: the temporary file and its name.
  ~PosixOutput() override {
    Unmap();
    if (fd_ >= 0) ::close(fd_);
    if (!in_place() && !temp_.empty()) ::unlink(temp_.c_str());
  }

 private:
  const std::string& target() const override { return key_; }
  uint64_t bytes_shared() const override { return shared_; }

  bool Replaces(int fd) const override {
    struct stat st;
    return existing_ && ::fstat(fd, &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_;
  }
  // Publish() finds which folder this is (device and inode) once it has
  // opened it, so two paths to one folder share a lock.
  std::string lock_directory() const override { return real_dir_; }

  Status ReplaceOnly(int fd) override {
    if (!Replaces(fd)) return Replaced();
    replace_only_ = true;
    return Status::OK();
  }

  // What ReplaceOnly() promised, checked under the directory lock.
  Status CheckReplaceOnly() const {
    struct stat st;
    if (!replace_only_) return Status::OK();
    if (::lstat(path_.c_str(), &st) != 0 || st.st_dev != dev_ || st.st_ino != ino_) {
      return Replaced();
    }
    return Status::OK();
  }

  Status Replaced() const {
    return Status(Code::kIoError,
                  path_ +
                      ": another writer replaced or removed the file since it was read; "
                      "nothing was written (run again on the file as it is now)");
  }

  Status DoReserve(uint64_t size) override {
    if (size > static_cast<uint64_t>(INT64_MAX)) {
      return OutOfRange(path_ + ": cannot reserve " + std::to_string(size) +
                        " bytes, more than a file can hold");
    }
    // Growing the file past RLIMIT_FSIZE raises SIGXFSZ, which kills the
    // process (leaving the temporary file) before ftruncate could say EFBIG.
    struct rlimit limit;
    if (::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
        size > static_cast<uint64_t>(limit.rlim_cur)) {
      return OutOfRange(path_ + ": cannot reserve " + std::to_string(size) +
                        " bytes: exceeds the file size limit (ulimit -f) of " +
                        std::to_string(static_cast<uint64_t>(limit.rlim_cur)) + " bytes");
    }
    if (calls_->Ftruncate(fd_, static_cast<off_t>(size)) != 0) {
      return ReserveError(size, "ftruncate", errno);
    }
    if (size > 0) {
      int rc;
      do {
        rc = calls_->Fallocate(fd_, 0, 0, static_cast<off_t>(size));
      } while (rc != 0 && errno == EINTR);
      if (rc != 0) {
        // Without reserved blocks a full disk would surface as SIGBUS on a
        // mapped page; pwrite reports it as an error instead.
        if (errno == EOPNOTSUPP || errno == ENOSYS) {
          use_mmap_ = false;
        } else {
          return ReserveError(size, "fallocate", errno);
        }
      }
    }
    size_ = size;
    cells_ = size == 0 ? 0 : (size - 1) / window_bytes_ + 1;
    return Status::OK();
  }

  // FICLONE shares every extent of the source file with the temporary
  // file, which must still be empty. Writes after it go through pwrite: a
  // mapped window populates (and so unshares) up to kPopulateAhead beyond
  // each write, where pwrite unshares only the blocks it changes.
  Result<bool> DoReserveClone(const Source& source) override {
    const FileRange* range = source.file_range();
    struct stat st;
    if (range == nullptr || range->offset != 0 || ::fstat(range->fd, &st) != 0 ||
        !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) != range->length) {
      return false;
    }
    if (::ioctl(fd_, FICLONE, range->fd) != 0) {
      const int err = errno;
      // Not supported here (EOPNOTSUPP, EINVAL, ENOTTY), another file
      // system (EXDEV), or a source another writer holds (ETXTBSY): copy.
      if (err == EOPNOTSUPP || err == EINVAL || err == ENOTTY || err == EXDEV || err == ETXTBSY ||
          err == EPERM || err == ENOSYS) {
        return false;
      }
      return IoError(path_ + ": cannot clone " + range->path + " into " + TempText(), err);
    }
    size_ = range->length;
    cells_ = size_ == 0 ? 0 : (size_ - 1) / window_bytes_ + 1;
    use_mmap_ = false;
    cloned_file_ = true;
    return true;
  }

  // Before a range of a clone is overwritten, its whole blocks are punched
  // out, so the write fills fresh blocks instead of copying each shared
  // block on write first (XFS: a copy-on-write fork allocation per write
  // and a remap per extent at write-back). Best effort: where punching
  // fails the write still replaces the bytes.
  void Unshare(uint64_t offset, uint64_t n) {
    const uint64_t b = Block();
    const uint64_t from = (offset + b - 1) / b * b;
    const uint64_t to = (offset + n) / b * b;
    if (to > from) {
      (void)::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(from),
                        static_cast<off_t>(to - from));
    }
  }

  // A file source whose bytes sit at the same offset modulo the file
  // system's block as their place in the output shares its whole blocks
  // with the source (FICLONERANGE), which costs neither reading nor disk;
  // the partial blocks at either end are copied. Every other write is
  // copied: in the kernel (copy_file_range) when large, else through the
  // window.
  Status DoWrite(uint64_t offset, const Source& source) override {
    const uint64_t n = source.size();
    if (cloned_file_) Unshare(offset, n);
    uint64_t done = 0;
    const FileRange* range = source.file_range();
    if (range != nullptr && range->length == n && clone_) {
      const Span body = ClonableBody(offset, *range);
      if (body.size > 0) {
        ETPACK_RETURN_IF_ERROR(CopyPart(offset, source, 0, body.start));
        ETPACK_ASSIGN_OR_RETURN(const uint64_t shared, Share(offset, source, *range, body));
        done = body.start + shared;
      }
    }
    ETPACK_RETURN_IF_ERROR(CopyPart(offset, source, done, n - done));
    return AdvanceFrontier(offset + n);
  }

  // What sharing extents aligns to: the file system's block, at least a page.
  uint64_t Block() {
    if (block_ == 0) {
      struct statfs st;
      block_ = calls_->Fstatfs(fd_, &st) == 0 && st.f_bsize > 0
                   ? std::max(static_cast<uint64_t>(st.f_bsize), PageSize())
                   : PageSize();
    }
    return block_;
  }

  // Copies source bytes [from, from + n) to offset + from.
  Status CopyPart(uint64_t offset, const Source& source, uint64_t from, uint64_t n) {
    const FileRange* range = source.file_range();
    uint64_t done = 0;
    if (kernel_copy_ && n >= kernel_copy_min_ && range != nullptr &&
        range->length == source.size()) {
      ETPACK_ASSIGN_OR_RETURN(done, CopyInKernel(offset, source, *range, from, n));
    }
    while (done < n) {
      // CopyMapped stops early when the mapping turns out unusable and the
      // output switches to pwrite for good.
      const uint64_t at = from + done;
      Result<uint64_t> r = use_mmap_ ? CopyMapped(offset + at, source, at, n - done)
                                     : CopyBuffered(offset + at, source, at, n - done);
      if (!r.ok()) return r.status();
      done += *r;
    }
    return Status::OK();
  }

  // Every write is done, so write-behind has nothing left to track past
  // `size`; the window is dropped first so no mapped page lies beyond it.
  Status DoTruncate(uint64_t size) override {
    Unmap();
    if (calls_->Ftruncate(fd_, static_cast<off_t>(size)) != 0) {
      return IoError(
          path_ + ": cannot truncate " + TempText() + " to " + std::to_string(size) + " bytes",
          errno);
    }
    size_ = size;
    cells_ = size == 0 ? 0 : (size - 1) / window_bytes_ + 1;
    started_ = std::min(started_, cells_);
    retired_ = std::min(retired_, cells_);
    return Status::OK();
  }

  Status DoSync() override {
    Unmap();
    FlushSourceCache();
    if (options_.sync) {
      if (calls_->Fdatasync(fd_) != 0) {
        return IoError(path_ + ": cannot flush " + TempText() + " to disk", errno);
      }
      // All clean now: drop what write-behind has not evicted yet.
      (void)::posix_fadvise(fd_, 0, 0, POSIX_FADV_DONTNEED);
    }
    return Status::OK();
  }

  // A free destination is taken directly, so the new file never has any
  // other name; linkat (unlike rename) fails rather than replace a file.
  Status DoLink(bool* placed_free) override {
    ETPACK_RETURN_IF_ERROR(CheckReplaceOnly());
    const std::string from = temp_.empty() ? ProcFdPath(fd_) : temp_;
    if (calls_->Linkat(from.c_str(), path_.c_str()) == 0) {
      if (!temp_.empty()) ::unlink(temp_.c_str());
      temp_.clear();
      Status closed = Close();
      // Failing, the step must leave nothing in place.
      if (!closed.ok()) ::unlink(path_.c_str());
      *placed_free = closed.ok();
      return closed;
    }
    if (errno != EEXIST) {
      return IoError(path_ + ": cannot link " + TempText() + " into place", errno);
    }
    *placed_free = false;
    if (temp_.empty()) ETPACK_RETURN_IF_ERROR(NameTemporary());
    return Status::OK();
  }

  Status DoRename() override {
    ETPACK_RETURN_IF_ERROR(Close());
    if (calls_->Rename(temp_.c_str(), path_.c_str()) != 0) {
      return IoError(path_ + ": cannot rename " + temp_ + " into place", errno);
    }
    temp_.clear();
    return Status::OK();
  }

  void DoUnplace() override { ::unlink(path_.c_str()); }

  Status DoSyncDirectory() override {
    if (!options_.sync) return Status::OK();
    // The one failure that leaves the new file in place (see output.h).
    const std::string what = path_ + " was written and renamed into place, but its directory " +
                             dir_ + " could not be synced, so the rename may not survive a crash";
    const int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return IoError(what, errno);
    const int rc = calls_->FsyncDirectory(dfd);
    const int err = errno;
    ::close(dfd);
    if (rc != 0 && err != EINVAL) return IoError(what, err);
    return Status::OK();
  }

  Status Close() {
    const int fd = fd_;
    fd_ = -1;
    if (fd >= 0 && ::close(fd) != 0) return IoError(path_ + ": cannot close " + TempText(), errno);
    return Status::OK();
  }

  Status ReserveError(uint64_t size, const char* call, int err) const {
    Status s = IoError(
        path_ + ": cannot reserve " + std::to_string(size) + " bytes for the output (" + call + ")",
        err);
    if (err == EFBIG) {
      return Status(s.code(), s.message() + " (larger than this file system allows)");
    }
    return s;
  }

  Status WriteError(const std::string& call, uint64_t offset, uint64_t n, int err) const {
    return IoError(
        path_ + ": " + call + " of " + RangeText(offset, n) + " into " + TempText() + " failed",
        err);
  }

  uint64_t CellEnd(uint64_t pos) const {
    return std::min(size_, (pos / window_bytes_ + 1) * window_bytes_);
  }

  // Kernel-side copy of source bytes [from, from + n) to offset + from.
  // Returns how many leading bytes it copied; fewer than n when the kernel
  // cannot do it, in which case the caller copies the rest through memory
  // (and pread reports a truncated source properly).
  Result<uint64_t> CopyInKernel(uint64_t offset, const Source& source, const FileRange& range,
                                uint64_t from, uint64_t n) {
    uint64_t done = 0;
    while (done < n) {
      loff_t in = static_cast<loff_t>(range.offset + from + done);
      loff_t out = static_cast<loff_t>(offset + from + done);
      // Up to the end of the cell, so write-behind keeps pace.
      const uint64_t at = offset + from + done;
      const size_t want = static_cast<size_t>(std::min(n - done, CellEnd(at) - at));
      const ssize_t got = calls_->CopyFileRange(range.fd, &in, fd_, &out, want);
      if (got < 0) {
        const int err = errno;
        if (err == EINTR) continue;
        if (err == EXDEV || err == EINVAL || err == ENOSYS || err == EOPNOTSUPP) {
          kernel_copy_ = false;  // the answer will not change for this output
          break;
        }
        return WriteError("copy_file_range from " + source.Describe(), at, n - done, err);
      }
      if (got == 0) {
        // Some file systems answer 0 rather than an error for "cannot";
        // a source that really shrank is reported by the pread fallback.
        if (done == 0) kernel_copy_ = false;
        break;
      }
      DropSourceCache(source, from + done, static_cast<uint64_t>(got));
      done += static_cast<uint64_t>(got);
      ETPACK_RETURN_IF_ERROR(AdvanceFrontier(offset + from + done));
    }
    return done;
  }

  // Source bytes [start, start + size) of a write.
  struct Span {
    uint64_t start = 0;
    uint64_t size = 0;
    bool padded = false;  // the last block reaches past the source's bytes
  };

  // The part of a write of `range` at `offset` that can share extents:
  // whole blocks of the output that are whole blocks of the source. The
  // last block may reach past the source's bytes when what follows them
  // there, up to the block's end, is zero (the padding a block-aligned
  // layout puts after each item, or the end of the source file), since the
  // output holds zeros there too until a later write puts its own bytes
  // over them. Empty when the offsets differ modulo the block.
  Span ClonableBody(uint64_t offset, const FileRange& range) {
    const uint64_t b = Block();
    if (range.offset % b != offset % b) return {};
    const uint64_t head = (b - offset % b) % b;
    if (range.length <= head) return {};
    const uint64_t size = (range.length - head) / b * b;
    const uint64_t tail = range.length - head - size;
    const uint64_t end = offset + head + size + b;  // the tail's block's end
    if (tail > 0 && end <= size_ && ZerosAfter(range, b - tail)) return {head, size + b, true};
    return {head, size, false};
  }

  // Whether the `n` bytes of the source file right after `range` are zero
  // (bytes past the end of the file count as zero).
  bool ZerosAfter(const FileRange& range, uint64_t n) {
    uint8_t buf[65536];
    if (n > sizeof buf) return false;
    ssize_t got;
    do {
      got = ::pread(range.fd, buf, static_cast<size_t>(n),
                    static_cast<off_t>(range.offset + range.length));
    } while (got < 0 && errno == EINTR);
    if (got < 0) return false;
    for (ssize_t i = 0; i < got; ++i) {
      if (buf[i] != 0) return false;
    }
    return true;
  }

  // Shares the extents of source bytes [body.start, +body.size) with the
  // output at offset + body.start, cell by cell so write-behind keeps pace.
  // Returns how many leading bytes it shared (at most the source's); a
  // refusal is quiet and leaves the rest to be copied. A file system that
  // cannot share at all (ext4, tmpfs: EOPNOTSUPP) is not asked again.
  Result<uint64_t> Share(uint64_t offset, const Source& source, const FileRange& range,
                         const Span& body) {
    const uint64_t start = offset + body.start;
    // The window must not hold pages of the range (the kernel drops them,
    // and nothing is written below the frontier again anyway).
    if (window_ != nullptr && window_start_ < start + body.size &&
        start < window_start_ + window_len_) {
      Unmap();
    }
    uint64_t done = 0;
    // A padded last block goes alone: where the kernel refuses it (a block
    // straddling the source's end), only it is copied.
    const uint64_t whole = body.padded ? body.size - block_ : body.size;
    while (done < body.size) {
      const uint64_t at = start + done;
      const uint64_t left = done < whole ? whole - done : body.size - done;
      const uint64_t want = std::min(left, std::max(CellEnd(at), at + block_) - at);
      if (calls_->CloneRange(range.fd, range.offset + body.start + done, fd_, at, want) != 0) {
        const int err = errno;
        if (err == EINTR) continue;
        if (err == EOPNOTSUPP || err == ENOTTY || err == ENOSYS || err == EPERM) clone_ = false;
        break;
      }
      done += want;
      ETPACK_RETURN_IF_ERROR(AdvanceFrontier(std::min(at + want, offset + source.size())));
    }
    const uint64_t shared = std::min(done, source.size() - body.start);
    shared_ += shared;
    if (done > 0) cloned_ = true;
    return shared;
  }

  // Copies source bytes [src_pos, src_pos + n) to file offset `pos` through
  // the mapped window. Returns the bytes copied: all of them, unless the
  // window cannot be populated and the output fell back to pwrite.
  Result<uint64_t> CopyMapped(uint64_t pos, const Source& source, uint64_t src_pos, uint64_t n) {
    const uint8_t* bytes = source.contiguous();
    uint64_t done = 0;
    while (done < n) {
      if (window_ == nullptr || pos < window_start_ || pos >= window_start_ + window_len_) {
        Unmap();
        ETPACK_RETURN_IF_ERROR(MapWindow(pos));
      }
      const uint64_t chunk = std::min(n - done, window_start_ + window_len_ - pos);
      ETPACK_RETURN_IF_ERROR(Populate(pos, chunk));
      if (!use_mmap_) break;
      uint8_t* dst = window_ + (pos - window_start_);
      if (bytes != nullptr) {
        std::memcpy(dst, bytes + src_pos, static_cast<size_t>(chunk));
      } else {
        Status s = source.ReadAt(src_pos, dst, static_cast<size_t>(chunk));
        if (!s.ok()) return s.WithContext(path_);
        DropSourceCache(source, src_pos, chunk);
      }
      pos += chunk;
      src_pos += chunk;
      done += chunk;
      ETPACK_RETURN_IF_ERROR(AdvanceFrontier(pos));
    }
    return done;
  }

  // The same through pwrite, for file systems that cannot reserve space or
  // kernels that cannot populate a mapping.
  Result<uint64_t> CopyBuffered(uint64_t pos, const Source& source, uint64_t src_pos, uint64_t n) {
    const uint8_t* bytes = source.contiguous();
    if (bytes == nullptr && buffer_.empty()) {
      try {
        buffer_.resize(static_cast<size_t>(window_bytes_));
      } catch (const std::bad_alloc&) {
        return OutOfRange(path_ + ": cannot allocate a " + std::to_string(window_bytes_) +
                          "-byte write buffer");
      }
    }
    for (uint64_t left = n; left > 0;) {
      const uint64_t chunk = std::min(left, CellEnd(pos) - pos);
      const uint8_t* from = bytes ? bytes + src_pos : buffer_.data();
      if (bytes == nullptr) {
        Status s = source.ReadAt(src_pos, buffer_.data(), static_cast<size_t>(chunk));
        if (!s.ok()) return s.WithContext(path_);
        DropSourceCache(source, src_pos, chunk);
      }
      for (uint64_t put = 0; put < chunk;) {
        const ssize_t got = calls_->Pwrite(fd_, from + put, static_cast<size_t>(chunk - put),
                                           static_cast<off_t>(pos + put));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
          return WriteError("pwrite", pos + put, chunk - put, got < 0 ? errno : ENOSPC);
        }
        put += static_cast<uint64_t>(got);
      }
      pos += chunk;
      src_pos += chunk;
      left -= chunk;
      ETPACK_RETURN_IF_ERROR(AdvanceFrontier(pos));
    }
    return n;
  }

  // Maps the cell that holds `pos`.
  Status MapWindow(uint64_t pos) {
    const uint64_t start = pos / window_bytes_ * window_bytes_;
    const uint64_t len = CellEnd(pos) - start;
    void* p = calls_->Mmap(static_cast<size_t>(len), fd_, static_cast<off_t>(start));
    if (p == MAP_FAILED) return WriteError("mmap", start, len, errno);
    window_ = static_cast<uint8_t*>(p);
    window_start_ = start;
    window_len_ = len;
    populated_end_ = start;
    return Status::OK();
  }

  // Faults the pages in before the copy: one call instead of a page fault
  // per page, and a failure to back them becomes an error, not SIGBUS.
  // Reaches up to kPopulateAhead past the copy so a run of small items costs
  // one call, not one each; pages it touches in padding are written back as
  // the zeros they hold. Where the kernel cannot populate (EINVAL: older
  // than 5.14), the output switches to pwrite rather than risk SIGBUS.
  Status Populate(uint64_t pos, uint64_t n) {
    constexpr uint64_t kPopulateAhead = uint64_t{256} << 10;
    constexpr int kMaxRetries = 1000;
    if (pos + n <= populated_end_) return Status::OK();
    const uint64_t page = PageSize();
    const uint64_t from = std::max(populated_end_, pos / page * page);
    // Once blocks are being shared, pages ahead may be shared next: faulting
    // them in would only have them written back before the kernel drops them.
    const uint64_t ahead = cloned_ ? 0 : kPopulateAhead;
    const uint64_t to = std::min(window_start_ + window_len_,
                                 std::max((pos + n + page - 1) / page * page, from + ahead));
    for (int attempt = 0;; ++attempt) {
      if (calls_->Madvise(window_ + (from - window_start_), static_cast<size_t>(to - from),
                          MADV_POPULATE_WRITE) == 0) {
        populated_end_ = to;
        return Status::OK();
      }
      const int err = errno;
      if ((err == EINTR || err == EAGAIN) && attempt < kMaxRetries) continue;
      if (err == EINVAL) {
        use_mmap_ = false;
        Unmap();
        return Status::OK();
      }
      if (err == EFAULT) {
        return Status(Code::kIoError, path_ + ": could not back the mapped output " +
                                          RangeText(from, to - from) + " of " + TempText() +
                                          " (disk full or I/O error)");
      }
      return WriteError("madvise(MADV_POPULATE_WRITE)", from, to - from, err);
    }
  }

  void Unmap() {
    if (window_ != nullptr) ::munmap(window_, static_cast<size_t>(window_len_));
    window_ = nullptr;
  }

  // Write-behind. Every byte below `frontier` is final (written, or padding
  // that stays zero), so each cell wholly below it is done: unmap it if it
  // is the window, start its write-back, and once more than max_inflight_
  // cells are in flight wait for the oldest and drop it from the page cache.
  Status AdvanceFrontier(uint64_t frontier) {
    if (window_ != nullptr && window_start_ + window_len_ <= frontier) Unmap();
    const uint64_t complete = frontier >= size_ ? cells_ : frontier / window_bytes_;
    if (complete > started_) {
      const uint64_t start = started_ * window_bytes_;
      ETPACK_RETURN_IF_ERROR(SyncRange(start, std::min(size_, complete * window_bytes_) - start,
                                       SYNC_FILE_RANGE_WRITE));
      started_ = complete;
    }
    while (started_ - retired_ > max_inflight_) {
      const uint64_t start = retired_ * window_bytes_;
      const uint64_t len = std::min(size_, start + window_bytes_) - start;
      ETPACK_RETURN_IF_ERROR(SyncRange(
          start, len,
          SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER));
      (void)::posix_fadvise(fd_, static_cast<off_t>(start), static_cast<off_t>(len),
                            POSIX_FADV_DONTNEED);
      ++retired_;
    }
    return Status::OK();
  }

  // A write-back error reported here is consumed: fdatasync will not see it
  // again. So every error counts, except the ones that only say the call
  // cannot be made on this file (then fdatasync still checks everything).
  Status SyncRange(uint64_t start, uint64_t len, unsigned flags) {
    while (calls_->SyncFileRange(fd_, static_cast<off_t>(start), static_cast<off_t>(len), flags) !=
           0) {
      const int err = errno;
      if (err == EINTR) continue;
      if (err == EINVAL || err == ESPIPE || err == ENOSYS) return Status::OK();
      return WriteError("write-back", start, len, err);
    }
    return Status::OK();
  }

  // Source bytes already copied are not needed again; keeping them would let
  // the page cache grow with the input size. Reads that follow on in one
  // file (tensors in file order) are dropped together, once per
  // kDropBatch, instead of one system call per item. A descriptor number
  // reused before the flush only costs another file some cached pages.
  void DropSourceCache(const Source& source, uint64_t src_pos, uint64_t n) {
    constexpr uint64_t kDropBatch = uint64_t{2} << 20;
    const FileRange* r = source.file_range();
    if (r == nullptr || n == 0) return;
    const uint64_t start = r->offset + src_pos;
    if (r->fd != drop_fd_ || start < drop_start_ || start > drop_end_ + kDropBatch) {
      FlushSourceCache();
      drop_fd_ = r->fd;
      drop_start_ = start;
    }
    drop_end_ = std::max(drop_end_, start + n);
    if (drop_end_ - drop_start_ >= kDropBatch) FlushSourceCache();
  }

  // The start is rounded down because the kernel only drops folios that lie
  // wholly inside the range, and a large folio straddling the previous
  // batch's end would otherwise stay cached for good.
  void FlushSourceCache() {
    constexpr uint64_t kLargestFolio = uint64_t{2} << 20;
    if (drop_fd_ < 0) return;
    const uint64_t start = drop_start_ / kLargestFolio * kLargestFolio;
    (void)::posix_fadvise(drop_fd_, static_cast<off_t>(start),
                          static_cast<off_t>(drop_end_ - start), POSIX_FADV_DONTNEED);
    drop_fd_ = -1;
    drop_start_ = drop_end_ = 0;
  }

  // Links the unnamed temporary file under a fresh hidden name, from which
  // rename() can replace the destination atomically (linkat cannot). The
  // suffix is random, like mkostemp's, so the name cannot be guessed ahead.
  Status NameTemporary() {
    static const char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    const std::string proc = ProcFdPath(fd_);
    for (int attempt = 0; attempt < 100; ++attempt) {
      uint8_t random[6];
      if (::getrandom(random, sizeof random, 0) != static_cast<ssize_t>(sizeof random)) {
        return IoError(path_ + ": cannot draw a random name for the temporary file", errno);
      }
      std::string name = temp_prefix_;
      for (uint8_t r : random) name += kChars[r % (sizeof kChars - 1)];
      if (calls_->Linkat(proc.c_str(), name.c_str()) == 0) {
        temp_ = std::move(name);
        return Status::OK();
      }
      if (errno != EEXIST) break;
    }
    return IoError(path_ + ": cannot give the finished temporary file a name in " + dir_, errno);
  }

  std::string TempText() const {
    return temp_.empty() ? "the unnamed temporary file in " + dir_ : temp_;
  }

  const std::string path_;
  const std::string key_;  // Destination::key: which file this is
  const std::string dir_;
  const std::string real_dir_;
  const bool existing_;  // the file the destination held when the output was made
  const dev_t dev_;
  const ino_t ino_;
  bool replace_only_ = false;  // see ReplaceOnly()
  const std::string temp_prefix_;
  std::string temp_;  // empty while unnamed, cleared once removed
  int fd_;
  const OutputOptions options_;
  PosixCalls* const calls_;
  uint64_t window_bytes_;     // the cell size: whole pages
  uint64_t max_inflight_;     // cells whose write-back may be pending
  uint64_t kernel_copy_min_;  // smallest file item handed to copy_file_range

  bool use_mmap_;
  bool kernel_copy_;          // cleared for good by the first "not supported"
  bool clone_;                // the same for sharing extents
  bool cloned_ = false;       // a range was shared (FICLONERANGE)
  bool cloned_file_ = false;  // made by ReserveClone: the whole source file shared
  uint64_t block_ = 0;        // see Block()
  uint64_t shared_ = 0;       // bytes written by sharing the source's extents
  uint64_t size_ = 0;
  uint64_t cells_ = 0;    // cells in the file; the last may be short
  uint64_t started_ = 0;  // cells [0, started_) have write-back started
  uint64_t retired_ = 0;  // cells [0, retired_) are written and evicted

  uint8_t* window_ = nullptr;  // maps the cell [window_start_, +window_len_)
  uint64_t window_start_ = 0;
  uint64_t window_len_ = 0;
  uint64_t populated_end_ = 0;  // the window is populated up to here

  int drop_fd_ = -1;         // source pages [drop_start_, drop_end_) of drop_fd_ are
  uint64_t drop_start_ = 0;  // copied and not yet dropped from the cache
  uint64_t drop_end_ = 0;
  std::vector<uint8_t> buffer_;  // pwrite path only
};

// Gives the new file `fd` what the file it replaces has and cp keeps: its
// owner and group (output.h says why a replacement that cannot keep them is
// refused), then its mode (after the chown, which clears set-ID bits).
Status TakeOver(int fd, const Destination& target, mode_t mode) {
  if (target.exists) {
    struct stat now;
    if (::fstat(fd, &now) != 0)
      return IoError("cannot examine the new file for " + target.path, errno);
    if ((now.st_uid != target.uid || now.st_gid != target.gid) &&
        ::fchown(fd, target.uid, target.gid) != 0) {
      return IoError(target.path + ": cannot replace the existing file of user " +
                         std::to_string(target.uid) + ", group " + std::to_string(target.gid) +
                         ": its replacement would belong to user " + std::to_string(now.st_uid) +
                         ", group " + std::to_string(now.st_gid) +
                         " (only root may give a file away); remove it first to write a file "
                         "of your own",
                     errno);
    }
  }
  if (::fchmod(fd, mode) != 0) {
    return IoError("cannot set the mode of the new file for " + target.path, errno);
  }
  return Status::OK();
}

class PosixOutputFs final : public OutputFs {
 public:
  PosixOutputFs(const OutputOptions& options, PosixCalls* calls)
      : options_(options), calls_(calls) {}

  Result<std::unique_ptr<OutputFile>> Create(const std::string& destination) override {
    ETPACK_ASSIGN_OR_RETURN(Destination target, ResolveDestination(destination));
    const std::string prefix = target.path.substr(0, target.path.size() - target.name.size());
    // Only a prefix of a long name goes into the temporary name, which must
    // fit NAME_MAX too.
    const std::string stem = "." + target.name.substr(0, NAME_MAX - kTempExtra);
    const std::string temp_prefix = prefix + stem + ".etpack-";
    RemoveOrphanedLinks(target.dir, stem + ".etpack-linked-", calls_->Now());
    // A replaced file keeps its mode, as cp keeps it; a new one gets 0666
    // less the umask, as for any new file.
    const mode_t mode = target.exists ? (target.mode & 07777) : (0666 & ~CurrentUmask());
    const int unnamed = calls_->OpenTmpfile(target.dir.c_str(), O_RDWR | O_CLOEXEC, 0666);
    if (unnamed >= 0) {
      if (::access(ProcFdPath(unnamed).c_str(), F_OK) == 0) {
        Status owned = TakeOver(unnamed, target, mode);
        if (!owned.ok()) {
          ::close(unnamed);
          return owned;
        }
        return std::unique_ptr<OutputFile>(
            std::make_unique<PosixOutput>(destination, target, temp_prefix + "linked-",
                                          std::string(), unnamed, options_, calls_));
      }
      ::close(unnamed);  // could not be linked by Publish()
    }
    // Any failure of O_TMPFILE (unsupported, or the directory is missing,
    // which mkostemp then reports) falls back to a named temporary file.
    std::string temp = temp_prefix + "XXXXXX";
    std::vector<char> buf(temp.begin(), temp.end());
    buf.push_back('\0');
    const int fd = ::mkostemp(buf.data(), O_CLOEXEC);
    if (fd < 0) {
      return IoError("cannot create a temporary file in " + target.dir + " for " + destination,
                     errno);
    }
    temp.assign(buf.data());
    Status owned = TakeOver(fd, target, mode);
    if (!owned.ok()) {
      ::close(fd);
      ::unlink(temp.c_str());
      return owned;
    }
    return std::unique_ptr<OutputFile>(std::make_unique<PosixOutput>(
        destination, target, temp_prefix, std::move(temp), fd, options_, calls_));
  }

 private:
  const OutputOptions options_;
  PosixCalls* const calls_;
};

}  // namespace

std::unique_ptr<OutputFs> NewPosixOutputFs(const OutputOptions& options, PosixCalls* calls) {
  return std::make_unique<PosixOutputFs>(options, calls);
}

std::unique_ptr<OutputFs> NewPosixOutputFs(const OutputOptions& options) {
  return NewPosixOutputFs(options, DefaultPosixCalls());
}

}  // namespace etpack
