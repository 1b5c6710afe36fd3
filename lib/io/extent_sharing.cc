// Sharing extents with file sources, and the kernel's copy (see
// extent_sharing.h).

#include "io/extent_sharing.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace etpack {
namespace {

// File items at least this large (or a window, if that is smaller) go to
// copy_file_range. Below it one pread into the window that is already mapped
// costs the same single system call and keeps the bytes where the next items
// land; above it the kernel copy saves mapping and faulting the output, and
// on file systems that share extents (XFS, btrfs) it need not copy at all.
constexpr uint64_t kKernelCopyMin = uint64_t{1} << 20;

}  // namespace

ExtentSharing::ExtentSharing(const PosixTempFile& file, OutputWindow& window,
                             const OutputOptions& options, PosixCalls* calls)
    : file_(file),
      window_(window),
      calls_(calls),
      kernel_copy_min_(std::min(kKernelCopyMin, window.window_bytes())),
      kernel_copy_(options.copy_file_range),
      clone_(options.share_extents) {}

// FICLONE shares every extent of the source file with the temporary
// file, which must still be empty. Writes after it go through pwrite: a
// mapped window populates (and so unshares) up to kPopulateAhead beyond
// each write, where pwrite unshares only the blocks it changes.
Result<bool> ExtentSharing::CloneWhole(const Source& source) {
  const FileRange* range = source.file_range();
  struct stat st;
  if (range == nullptr || range->offset != 0 || ::fstat(range->fd, &st) != 0 ||
      !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) != range->length) {
    return false;
  }
  if (calls_->CloneFile(file_.fd(), range->fd) != 0) {
    const int err = errno;
    // Not supported here (EOPNOTSUPP, EINVAL, ENOTTY), another file
    // system (EXDEV), or a source another writer holds (ETXTBSY): copy.
    if (err == EOPNOTSUPP || err == EINVAL || err == ENOTTY || err == EXDEV || err == ETXTBSY ||
        err == EPERM || err == ENOSYS) {
      return false;
    }
    return IoError(file_.path() + ": cannot clone " + range->path + " into " + file_.Text(), err);
  }
  window_.Resize(range->length);
  window_.StopMapping();
  cloned_file_ = true;
  return true;
}

// Before a range of a clone is overwritten, its whole blocks are punched
// out, so the write fills fresh blocks instead of copying each shared
// block on write first (XFS: a copy-on-write fork allocation per write
// and a remap per extent at write-back). Best effort: where punching
// fails the write still replaces the bytes.
void ExtentSharing::Unshare(uint64_t offset, uint64_t n) {
  if (!cloned_file_) return;
  const uint64_t b = Block();
  const uint64_t from = (offset + b - 1) / b * b;
  const uint64_t to = (offset + n) / b * b;
  if (to > from) {
    (void)calls_->PunchHole(file_.fd(), static_cast<off_t>(from), static_cast<off_t>(to - from));
  }
}

// What sharing extents aligns to: the file system's block, at least a page.
uint64_t ExtentSharing::Block() {
  if (block_ == 0) {
    block_ = std::max(calls_->FsBlockSize(file_.fd()), PageSize());
  }
  return block_;
}

// A file source whose bytes sit at the same offset modulo the file
// system's block as their place in the output shares its whole blocks
// with the source (FICLONERANGE), which costs neither reading nor disk;
// the partial blocks at either end are copied.
ExtentSharing::Span ExtentSharing::ShareableBody(uint64_t offset, const Source& source) {
  const FileRange* range = source.file_range();
  if (range == nullptr || range->length != source.size() || !clone_) return {};
  return ClonableBody(offset, *range);
}

// The part of a write of `range` at `offset` that can share extents:
// whole blocks of the output that are whole blocks of the source. The
// last block may reach past the source's bytes when what follows them
// there, up to the block's end, is zero (the padding a block-aligned
// layout puts after each item, or the end of the source file), since the
// output holds zeros there too until a later write puts its own bytes
// over them. Empty when the offsets differ modulo the block.
ExtentSharing::Span ExtentSharing::ClonableBody(uint64_t offset, const FileRange& range) {
  const uint64_t b = Block();
  if (range.offset % b != offset % b) return {};
  const uint64_t head = (b - offset % b) % b;
  if (range.length <= head) return {};
  const uint64_t size = (range.length - head) / b * b;
  const uint64_t tail = range.length - head - size;
  const uint64_t end = offset + head + size + b;  // the tail's block's end
  if (tail > 0 && end <= window_.size() && ZerosAfter(range, b - tail)) {
    return {head, size + b, true};
  }
  return {head, size, false};
}

// Whether the `n` bytes of the source file right after `range` are zero
// (bytes past the end of the file count as zero).
bool ExtentSharing::ZerosAfter(const FileRange& range, uint64_t n) {
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
Result<uint64_t> ExtentSharing::Share(uint64_t offset, const Source& source, const Span& body) {
  const FileRange& range = *source.file_range();
  const uint64_t start = offset + body.start;
  // The window must not hold pages of the range (the kernel drops them,
  // and nothing is written below the frontier again anyway).
  window_.UnmapIfOverlaps(start, body.size);
  uint64_t done = 0;
  // A padded last block goes alone: where the kernel refuses it (a block
  // straddling the source's end), only it is copied.
  const uint64_t whole = body.padded ? body.size - block_ : body.size;
  while (done < body.size) {
    const uint64_t at = start + done;
    const uint64_t left = done < whole ? whole - done : body.size - done;
    const uint64_t want = std::min(left, std::max(window_.CellEnd(at), at + block_) - at);
    if (calls_->CloneRange(range.fd, range.offset + body.start + done, file_.fd(), at, want) != 0) {
      const int err = errno;
      if (err == EINTR) continue;
      if (err == EOPNOTSUPP || err == ENOTTY || err == ENOSYS || err == EPERM) clone_ = false;
      break;
    }
    done += want;
    ETPACK_RETURN_IF_ERROR(window_.AdvanceFrontier(std::min(at + want, offset + source.size())));
  }
  const uint64_t shared = std::min(done, source.size() - body.start);
  shared_ += shared;
  if (done > 0) window_.StopPopulatingAhead();
  return shared;
}

// Fewer than n bytes when the kernel cannot do it, in which case the caller
// copies the rest through memory (and pread reports a truncated source
// properly).
Result<uint64_t> ExtentSharing::CopyInKernel(uint64_t offset, const Source& source, uint64_t from,
                                             uint64_t n) {
  const FileRange* range = source.file_range();
  if (!kernel_copy_ || n < kernel_copy_min_ || range == nullptr || range->length != source.size()) {
    return 0;
  }
  uint64_t done = 0;
  while (done < n) {
    off_t in = static_cast<off_t>(range->offset + from + done);
    off_t out = static_cast<off_t>(offset + from + done);
    // Up to the end of the cell, so write-behind keeps pace.
    const uint64_t at = offset + from + done;
    const size_t want = static_cast<size_t>(std::min(n - done, window_.CellEnd(at) - at));
    const ssize_t got = calls_->CopyFileRange(range->fd, &in, file_.fd(), &out, want);
    if (got < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      if (err == EXDEV || err == EINVAL || err == ENOSYS || err == EOPNOTSUPP) {
        kernel_copy_ = false;  // the answer will not change for this output
        break;
      }
      return file_.WriteError("copy_file_range from " + source.Describe(), at, n - done, err);
    }
    if (got == 0) {
      // Some file systems answer 0 rather than an error for "cannot";
      // a source that really shrank is reported by the pread fallback.
      if (done == 0) kernel_copy_ = false;
      break;
    }
    window_.DropSourceCache(source, from + done, static_cast<uint64_t>(got));
    done += static_cast<uint64_t>(got);
    ETPACK_RETURN_IF_ERROR(window_.AdvanceFrontier(offset + from + done));
  }
  return done;
}

}  // namespace etpack
