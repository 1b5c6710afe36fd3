// stream_hash.h (internal) — digests of byte ranges of a file, computed from
// the bytes as the writer streams them, so that no byte is read twice.
//
// The writer reports every byte it puts down in increasing file order:
// Feed(offset, data, n). Bytes it skips (zero padding) count as zeros.
// Ranges may overlap (a .pte's segments inside a .bpte's program segment).

#ifndef ETPACK_WRITER_STREAM_HASH_H_
#define ETPACK_WRITER_STREAM_HASH_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "etpack/status.h"
#include "integrity/hash.h"

namespace etpack {

class StreamHashes {
 public:
  // A range to hash; returns its id for Digest(). Call before the first Feed.
  Result<size_t> Add(uint64_t offset, uint64_t size, HashKind kind);

  // Bytes [offset, offset + n) of the file; data == nullptr means zeros.
  // Everything between the end of the previous Feed and `offset` is zeros.
  // kInvalidArgument (an internal error) when offset goes backwards.
  Status Feed(uint64_t offset, const uint8_t* data, uint64_t n);

  // The digest of range `id`. REQUIRES: Feed has passed its end.
  const std::vector<uint8_t>& Digest(size_t id) const { return ranges_[id].digest; }

 private:
  struct Range {
    uint64_t offset;
    uint64_t end;
    std::unique_ptr<RunningHash> hash;  // null once finished
    std::vector<uint8_t> digest;
  };
  void Span(uint64_t offset, const uint8_t* data, uint64_t n);

  std::vector<Range> ranges_;
  std::vector<size_t> order_;   // ids by offset, made by the first Feed
  size_t next_ = 0;             // order_[next_] is the next range to open
  std::vector<size_t> active_;  // open ranges
  uint64_t pos_ = 0;            // end of what was fed
  bool started_ = false;
};

// Feeds a StreamHashes from a second thread, so that hashing one slice
// overlaps reading the next: a write with hashes then takes as long as the
// copy alone, as long as hashing keeps up with the disk. Where no thread can
// be started it hashes on the caller's thread.
class HashThread {
 public:
  // `hashes` must outlive this object.
  explicit HashThread(StreamHashes& hashes);
  ~HashThread();  // drops what is still queued
  HashThread(const HashThread&) = delete;
  HashThread& operator=(const HashThread&) = delete;

  // Queues StreamHashes::Feed(offset, data, n). REQUIRES: the n bytes at
  // `data` stay valid and unchanged until the next Drain() returns.
  void Feed(uint64_t offset, const uint8_t* data, uint64_t n);

  // Waits until everything queued is hashed; the first Feed error, sticky.
  Status Drain();

 private:
  struct Job {
    uint64_t offset;
    const uint8_t* data;
    uint64_t n;
  };
  void Run();

  StreamHashes& hashes_;
  std::mutex mu_;
  std::condition_variable work_;  // jobs_ grew, or stop_
  std::condition_variable idle_;  // jobs_ emptied and nothing in hand
  std::deque<Job> jobs_;
  bool busy_ = false;
  bool stop_ = false;
  Status status_;
  std::thread thread_;  // not joinable: hashing inline
};

}  // namespace etpack

#endif  // ETPACK_WRITER_STREAM_HASH_H_
