// etpack/sink.h — the output file, as narrow as the writer needs it.
//
// The writer knows the final size before it writes a byte, so a sink is
// used in one fixed order:
//
//   Reserve(size)         claim the whole file (a full disk fails here)
//   Write(offset, ...)    any number of times, at increasing offsets
//   Finish()  or  Abandon()
//
// Exactly one of Finish() and Abandon() must be called; destroying a sink
// that was not finished abandons it. Every sink checks this order and
// reports a call out of order (or a write outside the reserved size) as an
// error rather than trusting the caller. Errors are sticky: after the first
// failure every later call returns that failure and Finish() reports it.
//
// Every byte that is reserved but never written reads as zero: the writer
// relies on this for padding and does not write it.
//
// Implementations: the POSIX file sink (temporary file + mmap windows with
// write-behind + rename), an in-memory sink and a fault-injecting wrapper
// for tests.

#ifndef ETPACK_SINK_H_
#define ETPACK_SINK_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "etpack/source.h"
#include "etpack/status.h"

namespace etpack {

class Sink {
 public:
  virtual ~Sink() = default;

  // Called once, before any Write. The file sink fails with kOutOfRange,
  // before it creates anything that large, when `size` exceeds the
  // process's file size limit (RLIMIT_FSIZE, `ulimit -f`).
  virtual Status Reserve(uint64_t size) = 0;

  // Copies all of `source` to [offset, offset + source.size()).
  // The range must lie inside the reserved size (else kOutOfRange) and start
  // at or after the end of the previous write (else kInvalidArgument).
  virtual Status Write(uint64_t offset, const Source& source) = 0;

  // Convenience for small in-memory pieces (headers).
  Status Write(uint64_t offset, const void* data, uint64_t size);

  // Makes the output durable and visible under its final name. Fails with
  // kInvalidArgument when Reserve() was never called. On failure the output
  // is discarded and the destination left as it was, with one exception:
  // when the file sink syncs (FileSinkOptions::sync) and the new file was
  // already renamed into place, a failure to sync its directory is reported
  // as an error whose message says the file was written and renamed into
  // place but its directory could not be synced; the new file stays, but
  // the rename may not survive a crash.
  virtual Status Finish() = 0;

  // Discards everything; the destination is left as it was.
  virtual void Abandon() = 0;

  // Bytes written so far (for progress reports).
  virtual uint64_t bytes_written() const = 0;
};

// Tuning of the POSIX file sink. The defaults are measured choices
// (docs/performance.md, bench/RESULTS.md); most callers leave them alone.
struct FileSinkOptions {
  // The output is cut into a grid of cells of this many bytes (rounded up
  // to whole pages); one cell is mapped at a time. Peak resident memory of
  // the writer is about window_bytes * (1 + writeback_windows).
  uint64_t window_bytes = uint64_t{16} << 20;
  // Write-back of a cell starts once every write has moved past it; this
  // many finished cells may have write-back in flight before the writer
  // waits for the oldest and drops it from the page cache.
  int writeback_windows = 2;
  // Hand file sources of at least 1 MiB (or window_bytes, if smaller) to
  // copy_file_range; smaller ones are read into the mapped window. The first
  // "not supported" answer turns it off for the rest of the sink's life.
  bool copy_file_range = true;
  // Fill the output through the mapped window (true), or through pwrite
  // from a window-sized buffer (false). pwrite is the fallback for file
  // systems that cannot reserve space; it is selectable so the benchmarks
  // can compare the two paths on one machine (bench/RESULTS.md).
  bool mmap = true;
  // Flush data to stable storage before the rename.
  bool sync = true;
};

// Writes to a temporary file next to `path`, renamed to `path` by Finish().
// Where the file system allows (O_TMPFILE, /proc mounted) the temporary has
// no name until Finish(), so a process killed mid-write leaves nothing
// behind; elsewhere it is "<dir>/.<name>.etpack-XXXXXX" from the start
// (<name> shortened as needed to fit NAME_MAX). The directory must exist; a
// file name longer than NAME_MAX is refused with kInvalidArgument.
Result<std::unique_ptr<Sink>> OpenFileSink(const std::string& path,
                                           const FileSinkOptions& options = {});

// Writes to memory. `out` receives the bytes at Finish(); it must outlive
// the sink.
std::unique_ptr<Sink> NewMemorySink(std::vector<uint8_t>* out);

// Test double: forwards to `inner` until `fail_after_bytes` bytes have been
// written in total, then fails that write and every later call with
// kIoError("injected fault").
std::unique_ptr<Sink> NewFaultInjectingSink(std::unique_ptr<Sink> inner,
                                            uint64_t fail_after_bytes);

}  // namespace etpack

#endif  // ETPACK_SINK_H_
