// stream_hash.h (internal) — digests of byte ranges of a file, computed from
// the bytes as the writer streams them, so that no byte is read twice.
//
// The writer reports every byte it puts down in increasing file order:
// Feed(offset, data, n). Bytes it skips (zero padding) count as zeros.
// Ranges may overlap (a .pte's segments inside a .bpte's program segment).

#ifndef ETPACK_LAYOUT_STREAM_HASH_H_
#define ETPACK_LAYOUT_STREAM_HASH_H_

#include <cstdint>
#include <memory>
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

}  // namespace etpack

#endif  // ETPACK_LAYOUT_STREAM_HASH_H_
