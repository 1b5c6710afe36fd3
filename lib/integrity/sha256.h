// sha256.h (internal) — SHA-256 (FIPS 180-4) over a stream of bytes, for
// content addressing (`--digest sha256`, hash.h).
//
// Own code rather than OpenSSL's libcrypto: a wheel or static binary for
// another OS, architecture or glibc would need libcrypto built for it too,
// for one hash that takes a page of code. Speed comes from the CPU's own
// instructions where it has them, chosen once per process at run time:
// the SHA extensions on x86-64 (sha256_x86.cc), the SHA2 instructions on
// AArch64 (sha256_arm.cc); elsewhere the portable rounds below run (a few
// hundred MB/s).

#ifndef ETPACK_INTEGRITY_SHA256_H_
#define ETPACK_INTEGRITY_SHA256_H_

#include <array>
#include <cstddef>
#include <cstdint>

namespace etpack {

class Sha256 {
 public:
  static constexpr size_t kDigestBytes = 32;

  Sha256();
  void Update(const uint8_t* data, size_t n);
  // The digest, big-endian as FIPS 180-4 writes it. Call once, last.
  std::array<uint8_t, kDigestBytes> Finish();

  // The name of the block function this process uses ("x86 SHA
  // extensions", "ARMv8 SHA2" or "portable"), for benchmarks and tests.
  static const char* Implementation();

 private:
  uint32_t state_[8];
  uint8_t block_[64];
  size_t pending_ = 0;  // bytes in block_
  uint64_t total_ = 0;  // bytes fed so far
};

namespace sha256_internal {

// Runs the compression function over `blocks` 64-byte blocks at `data`.
using BlockFunction = void (*)(uint32_t state[8], const uint8_t* data, size_t blocks);

// The 64 round constants (FIPS 180-4, 4.2.2).
extern const uint32_t kRoundConstants[64];

void PortableBlocks(uint32_t state[8], const uint8_t* data, size_t blocks);

// The accelerated block function if this CPU has the instructions, else
// null. Each is defined for its architecture only; elsewhere both are null.
BlockFunction X86Blocks();
BlockFunction ArmBlocks();

}  // namespace sha256_internal
}  // namespace etpack

#endif  // ETPACK_INTEGRITY_SHA256_H_
