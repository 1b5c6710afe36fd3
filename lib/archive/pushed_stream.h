// pushed_stream.h (internal) — a ByteStream (etpack/plan.h) made from code
// that pushes its bytes (zstd's loops, the ordered jobs that compress or
// decompress frames), so that the writer can pull them as the tail of a
// plan: the producer runs on a thread of its own and hands each piece over
// without copying it.

#ifndef ETPACK_ARCHIVE_PUSHED_STREAM_H_
#define ETPACK_ARCHIVE_PUSHED_STREAM_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "etpack/plan.h"
#include "etpack/status.h"

namespace etpack {

// Hands `n` bytes at `data` to the writer, counting `work` of the stream's
// work, and returns once they are written: the bytes need stay valid only
// until then. An error means the writer stopped (it failed, or was
// cancelled): the producer returns it at once.
using PutFn = std::function<Status(const uint8_t* data, uint64_t n, uint64_t work)>;

// A stream of at most `max_size` bytes and `work` units of work whose
// pieces are what produce(put) puts, in order; its Status ends the stream
// (an error fails the write). produce runs on a thread started by the first
// Next(), and a stream dropped before its end stops it (put then fails) and
// waits for it. std::bad_alloc thrown by produce is kOutOfRange.
std::shared_ptr<ByteStream> PushedStream(std::string name, uint64_t max_size, uint64_t work,
                                         std::function<Status(const PutFn& put)> produce);

}  // namespace etpack

#endif  // ETPACK_ARCHIVE_PUSHED_STREAM_H_
