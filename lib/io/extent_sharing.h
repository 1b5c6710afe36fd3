// extent_sharing.h (internal to io) — the ways a POSIX output gets bytes of
// a file source without copying them through memory: sharing the source's
// extents (FICLONE for a whole file, FICLONERANGE for the aligned body of
// an item: XFS with reflink, btrfs) and the kernel's copy
// (copy_file_range). Each is tried where it can apply; the first "not
// supported" answer turns it off for the rest of the output's life, and
// what it leaves is copied through the OutputWindow.

#ifndef ETPACK_IO_EXTENT_SHARING_H_
#define ETPACK_IO_EXTENT_SHARING_H_

#include <cstdint>

#include "etpack/output.h"
#include "etpack/source.h"
#include "etpack/status.h"
#include "io/output_window.h"
#include "io/posix_calls.h"
#include "io/posix_temp_file.h"

namespace etpack {

class ExtentSharing {
 public:
  // Source bytes [start, start + size) of a write.
  struct Span {
    uint64_t start = 0;
    uint64_t size = 0;
    bool padded = false;  // the last block reaches past the source's bytes
  };

  // Shares into `file`, whose bytes `window` copies, as `options` says
  // (share_extents, copy_file_range). REQUIRES: all three outlive it.
  ExtentSharing(const PosixTempFile& file, OutputWindow& window, const OutputOptions& options,
                PosixCalls* calls);

  // WritableOutput::ReserveClone (etpack/output.h) of the still empty file:
  // true once every extent of the whole regular file `source` reads is
  // shared; false, changing nothing, where that cannot be done.
  Result<bool> CloneWhole(const Source& source);

  // Before a write of [offset, offset + n) over a whole-file clone: frees
  // the shared whole blocks so the write fills fresh ones. Nothing without
  // a clone.
  void Unshare(uint64_t offset, uint64_t n);

  // The part of writing `source` at `offset` that can share extents;
  // empty (size 0) where none can.
  Span ShareableBody(uint64_t offset, const Source& source);

  // Shares the extents of `body` (from ShareableBody) with the output.
  // Returns how many leading bytes of it it shared; the rest is the
  // caller's to copy.
  Result<uint64_t> Share(uint64_t offset, const Source& source, const Span& body);

  // Copies source bytes [from, from + n) to offset + from in the kernel
  // where the source is a large enough file range and the kernel can.
  // Returns how many leading bytes it copied (0 when it does not apply).
  Result<uint64_t> CopyInKernel(uint64_t offset, const Source& source, uint64_t from, uint64_t n);

  // Bytes written by sharing the source's extents.
  uint64_t bytes_shared() const { return shared_; }

 private:
  uint64_t Block();
  Span ClonableBody(uint64_t offset, const FileRange& range);
  bool ZerosAfter(const FileRange& range, uint64_t n);

  const PosixTempFile& file_;
  OutputWindow& window_;
  PosixCalls* const calls_;
  uint64_t kernel_copy_min_;  // smallest file item handed to copy_file_range
  bool kernel_copy_;          // cleared for good by the first "not supported"
  bool clone_;                // the same for sharing extents
  bool cloned_file_ = false;  // made by CloneWhole: the whole source file shared
  uint64_t block_ = 0;        // see Block()
  uint64_t shared_ = 0;       // bytes written by sharing the source's extents
};

}  // namespace etpack

#endif  // ETPACK_IO_EXTENT_SHARING_H_
