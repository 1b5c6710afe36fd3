// SHA-256 blocks with the x86 SHA extensions (sha256.h). The instructions
// keep the working variables in two registers ordered ABEF and CDGH, do two
// rounds per sha256rnds2 and four schedule words per sha256msg1/msg2 pair.
// Compiled for every x86-64 target with the instructions enabled for these
// functions only; X86Blocks() hands them out only when CPUID reports them.

#include "integrity/sha256.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace etpack {
namespace sha256_internal {

#if defined(__x86_64__)
namespace {

#define ETPACK_SHA_TARGET __attribute__((target("sha,sse4.1,ssse3")))

// Message words i = 4g .. 4g+3 from the four before them (FIPS 180-4,
// 6.2.2 step 1): w[g & 3] holds words 4(g-4) .. 4(g-4)+3 on entry.
ETPACK_SHA_TARGET inline __m128i NextWords(const __m128i w[4], int g) {
  const __m128i older = _mm_sha256msg1_epu32(w[g & 3], w[(g + 1) & 3]);
  const __m128i minus7 = _mm_alignr_epi8(w[(g + 3) & 3], w[(g + 2) & 3], 4);
  return _mm_sha256msg2_epu32(_mm_add_epi32(older, minus7), w[(g + 3) & 3]);
}

ETPACK_SHA_TARGET void ShaNiBlocks(uint32_t state[8], const uint8_t* data, size_t blocks) {
  // Big-endian words: reverse the bytes of each 32-bit lane.
  const __m128i swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  const __m128i dcba = _mm_loadu_si128(reinterpret_cast<const __m128i*>(state));
  const __m128i hgfe = _mm_loadu_si128(reinterpret_cast<const __m128i*>(state + 4));
  const __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
  const __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
  __m128i abef = _mm_alignr_epi8(cdab, efgh, 8);
  __m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
  for (; blocks > 0; --blocks, data += 64) {
    const __m128i abef_in = abef;
    const __m128i cdgh_in = cdgh;
    __m128i w[4];
#pragma GCC unroll 16
    for (int g = 0; g < 16; ++g) {
      w[g & 3] = g < 4 ? _mm_shuffle_epi8(
                             _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + 16 * g)), swap)
                       : NextWords(w, g);
      __m128i wk = _mm_add_epi32(
          w[g & 3], _mm_loadu_si128(reinterpret_cast<const __m128i*>(kRoundConstants + 4 * g)));
      // Two rounds make the old A, B, E, F the new C, D, G, H: the two
      // registers trade roles for the second pair and trade back.
      cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
      wk = _mm_shuffle_epi32(wk, 0x0E);
      abef = _mm_sha256rnds2_epu32(abef, cdgh, wk);
    }
    abef = _mm_add_epi32(abef, abef_in);
    cdgh = _mm_add_epi32(cdgh, cdgh_in);
  }
  const __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
  const __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(state), _mm_blend_epi16(feba, dchg, 0xF0));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(state + 4), _mm_alignr_epi8(dchg, feba, 8));
}

bool HasShaExtensions() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  const bool ssse3 = (c & (1u << 9)) != 0, sse41 = (c & (1u << 19)) != 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return ssse3 && sse41 && (b & (1u << 29)) != 0;
}

}  // namespace

BlockFunction X86Blocks() {
  static const bool has = HasShaExtensions();
  return has ? &ShaNiBlocks : nullptr;
}
#else
BlockFunction X86Blocks() { return nullptr; }
#endif

}  // namespace sha256_internal
}  // namespace etpack
