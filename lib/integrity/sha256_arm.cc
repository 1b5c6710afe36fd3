// SHA-256 blocks with the ARMv8 SHA2 instructions (sha256.h): sha256h and
// sha256h2 do four rounds on the ABCD and EFGH halves of the state,
// sha256su0 and sha256su1 four schedule words. Compiled for every AArch64
// target with the instructions enabled for these functions only;
// ArmBlocks() hands them out only when the CPU has them.

#include "integrity/sha256.h"

#if defined(__aarch64__)
#include <arm_neon.h>
#if defined(__linux__)
#include <sys/auxv.h>
#endif
#endif

namespace etpack {
namespace sha256_internal {

#if defined(__aarch64__)
namespace {

#if defined(__clang__)
#define ETPACK_SHA_TARGET __attribute__((target("sha2")))
#else
#define ETPACK_SHA_TARGET __attribute__((target("+sha2")))
#endif

ETPACK_SHA_TARGET void Sha2Blocks(uint32_t state[8], const uint8_t* data, size_t blocks) {
  uint32x4_t abcd = vld1q_u32(state);
  uint32x4_t efgh = vld1q_u32(state + 4);
  for (; blocks > 0; --blocks, data += 64) {
    const uint32x4_t abcd_in = abcd;
    const uint32x4_t efgh_in = efgh;
    uint32x4_t w[4];
#pragma GCC unroll 16
    for (int g = 0; g < 16; ++g) {
      // w[g & 3] holds words 4(g-4) .. 4(g-4)+3 on entry (FIPS 180-4,
      // 6.2.2 step 1); the first four groups are the block's big-endian words.
      w[g & 3] = g < 4 ? vreinterpretq_u32_u8(vrev32q_u8(vld1q_u8(data + 16 * g)))
                       : vsha256su1q_u32(vsha256su0q_u32(w[g & 3], w[(g + 1) & 3]), w[(g + 2) & 3],
                                         w[(g + 3) & 3]);
      const uint32x4_t wk = vaddq_u32(w[g & 3], vld1q_u32(kRoundConstants + 4 * g));
      const uint32x4_t abcd_before = abcd;
      abcd = vsha256hq_u32(abcd, efgh, wk);
      efgh = vsha256h2q_u32(efgh, abcd_before, wk);
    }
    abcd = vaddq_u32(abcd, abcd_in);
    efgh = vaddq_u32(efgh, efgh_in);
  }
  vst1q_u32(state, abcd);
  vst1q_u32(state + 4, efgh);
}

bool HasSha2() {
#if defined(__APPLE__)
  return true;  // every Apple AArch64 CPU has them
#elif defined(__linux__) && defined(HWCAP_SHA2)
  return (getauxval(AT_HWCAP) & HWCAP_SHA2) != 0;
#else
  return false;
#endif
}

}  // namespace

BlockFunction ArmBlocks() {
  static const bool has = HasSha2();
  return has ? &Sha2Blocks : nullptr;
}
#else
BlockFunction ArmBlocks() { return nullptr; }
#endif

}  // namespace sha256_internal
}  // namespace etpack
