// hash.h (internal) — the digests etpack computes over artifact bytes:
// XXH3-64 for the integrity table (fast, catches corruption, not forgery),
// XXH3-128 for finding identical contents (content_dedup.h) and SHA-256 for
// content addressing (`--digest sha256`).
//
// SHA-256 is own code (sha256.h says why and how it is fast).

#ifndef ETPACK_INTEGRITY_HASH_H_
#define ETPACK_INTEGRITY_HASH_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "etpack/source.h"
#include "etpack/status.h"

namespace etpack {

enum class HashKind { kXxh3_64, kXxh3_128, kSha256 };

// One digest being computed over a stream of bytes.
class RunningHash {
 public:
  virtual ~RunningHash() = default;
  virtual void Update(const uint8_t* data, size_t n) = 0;
  // Feeds n zero bytes (padding inside a hashed range).
  void UpdateZeros(uint64_t n);
  // The digest in its canonical byte order (XXH3: big-endian, as
  // XXH64_canonicalFromHash / XXH128_canonicalFromHash; SHA-256: FIPS
  // 180-4). Call once, last.
  virtual std::vector<uint8_t> Finish() = 0;
};

// kOutOfRange when the state cannot be allocated.
Result<std::unique_ptr<RunningHash>> NewRunningHash(HashKind kind);

// The XXH3-64 value of a canonical digest. REQUIRES: digest.size() == 8.
uint64_t Xxh3Value(const std::vector<uint8_t>& digest);

// Lower-case hex of `bytes`.
std::string HexDigest(const std::vector<uint8_t>& bytes);

// The digest of `source`'s bytes, read in bounded chunks (readers: verify,
// inspect --digest).
Result<std::vector<uint8_t>> HashSource(const Source& source, HashKind kind);

}  // namespace etpack

#endif  // ETPACK_INTEGRITY_HASH_H_
