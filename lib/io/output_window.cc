// The mapped window and write-behind of a POSIX output (see output_window.h).

#include "io/output_window.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <string>

#include "core/os_file.h"
#include "core/range_text.h"

namespace etpack {
namespace {

// Keeps window arithmetic (cell index * window) far from overflow.
constexpr uint64_t kMaxWindow = uint64_t{1} << 40;

}  // namespace

uint64_t PageSize() {
  static const uint64_t page = [] {
    long p = ::sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<uint64_t>(p) : uint64_t{4096};
  }();
  return page;
}

OutputWindow::OutputWindow(const PosixTempFile& file, const OutputOptions& options,
                           PosixCalls* calls)
    : file_(file), calls_(calls), use_mmap_(options.mmap) {
  const uint64_t page = PageSize();
  const uint64_t want = std::min(std::max<uint64_t>(options.window_bytes, page), kMaxWindow);
  // Whole pages, so cells never share a page.
  window_bytes_ = (want + page - 1) / page * page;
  max_inflight_ = static_cast<uint64_t>(std::max(options.writeback_windows, 0));
}

void OutputWindow::Resize(uint64_t size) {
  size_ = size;
  cells_ = size == 0 ? 0 : (size - 1) / window_bytes_ + 1;
  started_ = std::min(started_, cells_);
  retired_ = std::min(retired_, cells_);
}

Result<uint64_t> OutputWindow::Copy(uint64_t pos, const Source& source, uint64_t src_pos,
                                    uint64_t n) {
  return use_mmap_ ? CopyMapped(pos, source, src_pos, n) : CopyBuffered(pos, source, src_pos, n);
}

// Copies source bytes [src_pos, src_pos + n) to file offset `pos` through
// the mapped window. Returns the bytes copied: all of them, unless the
// window cannot be populated and the output fell back to pwrite.
Result<uint64_t> OutputWindow::CopyMapped(uint64_t pos, const Source& source, uint64_t src_pos,
                                          uint64_t n) {
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
      if (!s.ok()) return s.WithContext(file_.path());
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
Result<uint64_t> OutputWindow::CopyBuffered(uint64_t pos, const Source& source, uint64_t src_pos,
                                            uint64_t n) {
  const uint8_t* bytes = source.contiguous();
  if (bytes == nullptr && buffer_.empty()) {
    try {
      buffer_.resize(static_cast<size_t>(window_bytes_));
    } catch (const std::bad_alloc&) {
      return OutOfRange(file_.path() + ": cannot allocate a " + std::to_string(window_bytes_) +
                        "-byte write buffer");
    }
  }
  for (uint64_t left = n; left > 0;) {
    const uint64_t chunk = std::min(left, CellEnd(pos) - pos);
    const uint8_t* from = bytes ? bytes + src_pos : buffer_.data();
    if (bytes == nullptr) {
      Status s = source.ReadAt(src_pos, buffer_.data(), static_cast<size_t>(chunk));
      if (!s.ok()) return s.WithContext(file_.path());
      DropSourceCache(source, src_pos, chunk);
    }
    for (uint64_t put = 0; put < chunk;) {
      const ssize_t got = calls_->Pwrite(file_.fd(), from + put, static_cast<size_t>(chunk - put),
                                         static_cast<off_t>(pos + put));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        return file_.WriteError("pwrite", pos + put, chunk - put, got < 0 ? errno : ENOSPC);
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
Status OutputWindow::MapWindow(uint64_t pos) {
  const uint64_t start = pos / window_bytes_ * window_bytes_;
  const uint64_t len = CellEnd(pos) - start;
  void* p = calls_->Mmap(static_cast<size_t>(len), file_.fd(), static_cast<off_t>(start));
  if (p == MAP_FAILED) return file_.WriteError("mmap", start, len, errno);
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
Status OutputWindow::Populate(uint64_t pos, uint64_t n) {
  constexpr uint64_t kPopulateAhead = uint64_t{256} << 10;
  constexpr int kMaxRetries = 1000;
  if (pos + n <= populated_end_) return Status::OK();
  const uint64_t page = PageSize();
  const uint64_t from = std::max(populated_end_, pos / page * page);
  // Once blocks are being shared, pages ahead may be shared next: faulting
  // them in would only have them written back before the kernel drops them.
  const uint64_t ahead = populate_ahead_ ? kPopulateAhead : 0;
  const uint64_t to = std::min(window_start_ + window_len_,
                               std::max((pos + n + page - 1) / page * page, from + ahead));
  for (int attempt = 0;; ++attempt) {
    if (calls_->PopulateWrite(window_ + (from - window_start_), static_cast<size_t>(to - from)) ==
        0) {
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
      return Status(Code::kIoError, file_.path() + ": could not back the mapped output " +
                                        RangeText(from, to - from) + " of " + file_.Text() +
                                        " (disk full or I/O error)");
    }
    return file_.WriteError("madvise(MADV_POPULATE_WRITE)", from, to - from, err);
  }
}

void OutputWindow::Unmap() {
  if (window_ != nullptr) ::munmap(window_, static_cast<size_t>(window_len_));
  window_ = nullptr;
}

void OutputWindow::UnmapIfOverlaps(uint64_t start, uint64_t n) {
  if (window_ != nullptr && window_start_ < start + n && start < window_start_ + window_len_) {
    Unmap();
  }
}

// Write-behind. Every byte below `frontier` is final (written, or padding
// that stays zero), so each cell wholly below it is done: unmap it if it
// is the window, start its write-back, and once more than max_inflight_
// cells are in flight wait for the oldest and drop it from the page cache.
Status OutputWindow::AdvanceFrontier(uint64_t frontier) {
  if (window_ != nullptr && window_start_ + window_len_ <= frontier) Unmap();
  const uint64_t complete = frontier >= size_ ? cells_ : frontier / window_bytes_;
  if (complete > started_) {
    const uint64_t start = started_ * window_bytes_;
    ETPACK_RETURN_IF_ERROR(
        SyncRange(start, std::min(size_, complete * window_bytes_) - start, Writeback::kStart));
    started_ = complete;
  }
  while (started_ - retired_ > max_inflight_) {
    const uint64_t start = retired_ * window_bytes_;
    const uint64_t len = std::min(size_, start + window_bytes_) - start;
    ETPACK_RETURN_IF_ERROR(SyncRange(start, len, Writeback::kWait));
    DropCachedPages(file_.fd(), start, len);
    ++retired_;
  }
  return Status::OK();
}

// A write-back error reported here is consumed: fdatasync will not see it
// again. So every error counts, except the ones that only say the call
// cannot be made on this file (then fdatasync still checks everything).
Status OutputWindow::SyncRange(uint64_t start, uint64_t len, Writeback how) {
  while (calls_->SyncFileRange(file_.fd(), static_cast<off_t>(start), static_cast<off_t>(len),
                               how) != 0) {
    const int err = errno;
    if (err == EINTR) continue;
    if (err == EINVAL || err == ESPIPE || err == ENOSYS) return Status::OK();
    return file_.WriteError("write-back", start, len, err);
  }
  return Status::OK();
}

// Source bytes already copied are not needed again; keeping them would let
// the page cache grow with the input size. Reads that follow on in one
// file (tensors in file order) are dropped together, once per
// kDropBatch, instead of one system call per item. A descriptor number
// reused before the flush only costs another file some cached pages.
void OutputWindow::DropSourceCache(const Source& source, uint64_t src_pos, uint64_t n) {
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
void OutputWindow::FlushSourceCache() {
  constexpr uint64_t kLargestFolio = uint64_t{2} << 20;
  if (drop_fd_ < 0) return;
  const uint64_t start = drop_start_ / kLargestFolio * kLargestFolio;
  DropCachedPages(drop_fd_, start, drop_end_ - start);
  drop_fd_ = -1;
  drop_start_ = drop_end_ = 0;
}

}  // namespace etpack
