// output_window.h (internal to io) — how a POSIX output copies bytes into
// its file with bounded memory: through one mapped window (or pwrite from
// a window-sized buffer), with write-behind.
//
// The file is cut into a fixed grid of cells of window_bytes; the mapped
// window is always one cell. Writes only move forward, so everything below
// the end of the last write (the frontier) is final: when the frontier
// leaves a cell, that cell's write-back is started, and once more than
// writeback_windows cells are in flight the window waits for the oldest and
// drops it from the page cache. Write-back therefore costs a few system
// calls per cell, however many items the cell holds. Source pages already
// copied are dropped from the page cache too.

#ifndef ETPACK_IO_OUTPUT_WINDOW_H_
#define ETPACK_IO_OUTPUT_WINDOW_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "etpack/output.h"
#include "etpack/source.h"
#include "etpack/status.h"
#include "io/posix_calls.h"
#include "io/posix_temp_file.h"

namespace etpack {

// The system's page size in bytes.
uint64_t PageSize();

class OutputWindow {
 public:
  // Copies into `file` (named in errors) as `options` says (window_bytes,
  // writeback_windows, mmap). REQUIRES: `file` and `calls` outlive it.
  OutputWindow(const PosixTempFile& file, const OutputOptions& options, PosixCalls* calls);
  ~OutputWindow() { Unmap(); }
  OutputWindow(const OutputWindow&) = delete;
  OutputWindow& operator=(const OutputWindow&) = delete;

  // The file is now `size` bytes (reserved, cloned or truncated); cells past
  // it are forgotten.
  void Resize(uint64_t size);
  uint64_t size() const { return size_; }
  uint64_t window_bytes() const { return window_bytes_; }

  // Copies through pwrite from now on: for a file that cannot reserve
  // space (a full disk would be SIGBUS on a mapped page) or whose blocks
  // are shared with another file (a mapping would unshare ahead of writes).
  void StopMapping() { use_mmap_ = false; }
  // Populates only the pages a copy touches, once blocks are being shared:
  // pages ahead may be shared next.
  void StopPopulatingAhead() { populate_ahead_ = false; }

  // Copies source bytes [src_pos, src_pos + n) to file offset `pos`. Returns
  // the bytes copied: all of them, unless the mapped window turned out
  // unusable and the window switched to pwrite (call again for the rest).
  Result<uint64_t> Copy(uint64_t pos, const Source& source, uint64_t src_pos, uint64_t n);

  // Every byte below `frontier` is final: starts write-back of the cells
  // wholly below it and retires the oldest beyond writeback_windows.
  Status AdvanceFrontier(uint64_t frontier);

  // Where the cell that holds `pos` ends (at most size()).
  uint64_t CellEnd(uint64_t pos) const {
    return std::min(size_, (pos / window_bytes_ + 1) * window_bytes_);
  }

  void Unmap();
  // Unmaps the window when it holds a page of [start, start + n).
  void UnmapIfOverlaps(uint64_t start, uint64_t n);

  // Source bytes [src_pos, +n) of `source` are copied and not needed again
  // (batched; FlushSourceCache drops what is pending).
  void DropSourceCache(const Source& source, uint64_t src_pos, uint64_t n);
  void FlushSourceCache();

 private:
  Result<uint64_t> CopyMapped(uint64_t pos, const Source& source, uint64_t src_pos, uint64_t n);
  Result<uint64_t> CopyBuffered(uint64_t pos, const Source& source, uint64_t src_pos, uint64_t n);
  Status MapWindow(uint64_t pos);
  Status Populate(uint64_t pos, uint64_t n);
  Status SyncRange(uint64_t start, uint64_t len, Writeback how);

  const PosixTempFile& file_;
  PosixCalls* const calls_;
  uint64_t window_bytes_;  // the cell size: whole pages
  uint64_t max_inflight_;  // cells whose write-back may be pending

  bool use_mmap_;
  bool populate_ahead_ = true;
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

}  // namespace etpack

#endif  // ETPACK_IO_OUTPUT_WINDOW_H_
