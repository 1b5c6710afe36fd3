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
// that was not finished abandons it. Errors are sticky: after the first
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

  // REQUIRES: called once, before any Write.
  virtual Status Reserve(uint64_t size) = 0;

  // Copies all of `source` to [offset, offset + source.size()).
  // REQUIRES: that range lies inside the reserved size and starts at or
  // after the end of the previous write.
  virtual Status Write(uint64_t offset, const Source& source) = 0;

  // Convenience for small in-memory pieces (headers).
  Status Write(uint64_t offset, const void* data, uint64_t size);

  // Makes the output durable and visible under its final name.
  virtual Status Finish() = 0;

  // Discards everything; the destination is left as it was.
  virtual void Abandon() = 0;

  // Bytes written so far (for progress reports).
  virtual uint64_t bytes_written() const = 0;
};

// Tuning of the POSIX file sink. The defaults are measured choices
// (bench/RESULTS.md); most callers leave them alone.
struct FileSinkOptions {
  // Bytes of the output mapped at a time. Peak resident memory of the
  // writer is about window_bytes * (1 + writeback_windows).
  uint64_t window_bytes = uint64_t{16} << 20;
  // Finished windows whose write-back may still be in flight before the
  // writer waits for the oldest and drops it from the page cache.
  int writeback_windows = 2;
  // Try copy_file_range for file sources before copying through memory.
  bool copy_file_range = true;
  // Flush data to stable storage before the rename.
  bool sync = true;
};

// Writes to a temporary file next to `path` ("<dir>/.<name>.etpack-XXXXXX"),
// renamed to `path` by Finish(). The directory must exist.
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
