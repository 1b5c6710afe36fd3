// SHA-256: the buffering of a stream into 64-byte blocks, the portable
// compression function, and the choice of block function (sha256.h).

#include "integrity/sha256.h"

#include <cstring>

namespace etpack {
namespace sha256_internal {

// The first 32 bits of the fractional parts of the cube roots of the first
// 64 primes.
const uint32_t kRoundConstants[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

namespace {

inline uint32_t Rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

inline uint32_t LoadBigEndian(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// FIPS 180-4, 6.2.2: the message schedule, then 64 rounds on a copy of the
// state, added back.
void PortableBlock(uint32_t h[8], const uint8_t* block) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i) w[i] = LoadBigEndian(block + 4 * i);
  for (int i = 16; i < 64; ++i) {
    const uint32_t s0 = Rotr(w[i - 15], 7) ^ Rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    const uint32_t s1 = Rotr(w[i - 2], 17) ^ Rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
  for (int i = 0; i < 64; ++i) {
    const uint32_t t1 = k + (Rotr(e, 6) ^ Rotr(e, 11) ^ Rotr(e, 25)) + ((e & f) ^ (~e & g)) +
                        kRoundConstants[i] + w[i];
    const uint32_t t2 = (Rotr(a, 2) ^ Rotr(a, 13) ^ Rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    k = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
  h[5] += f;
  h[6] += g;
  h[7] += k;
}

// Asked once: the CPU does not change under a running process.
BlockFunction Chosen() {
  static const BlockFunction chosen = [] {
    if (BlockFunction f = X86Blocks()) return f;
    if (BlockFunction f = ArmBlocks()) return f;
    return &PortableBlocks;
  }();
  return chosen;
}

}  // namespace

void PortableBlocks(uint32_t state[8], const uint8_t* data, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i) PortableBlock(state, data + 64 * i);
}

}  // namespace sha256_internal

using sha256_internal::Chosen;

Sha256::Sha256() {
  // The first 32 bits of the fractional parts of the square roots of the
  // first 8 primes (FIPS 180-4, 5.3.3).
  static const uint32_t kInitial[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::memcpy(state_, kInitial, sizeof state_);
}

void Sha256::Update(const uint8_t* data, size_t n) {
  // An empty span may come with a null pointer, which memcpy must not see.
  if (n == 0) return;
  total_ += n;
  if (pending_ > 0) {
    const size_t take = n < 64 - pending_ ? n : 64 - pending_;
    std::memcpy(block_ + pending_, data, take);
    pending_ += take;
    data += take;
    n -= take;
    if (pending_ < 64) return;
    Chosen()(state_, block_, 1);
    pending_ = 0;
  }
  if (n >= 64) {
    Chosen()(state_, data, n / 64);
    data += n / 64 * 64;
    n %= 64;
  }
  std::memcpy(block_, data, n);
  pending_ = n;
}

// FIPS 180-4, 5.1.1: a 1 bit, zeros up to 56 mod 64, the length in bits as
// 64 bits big-endian.
std::array<uint8_t, Sha256::kDigestBytes> Sha256::Finish() {
  const uint64_t bits = total_ * 8;
  uint8_t tail[72] = {0x80};
  const size_t pad = (pending_ < 56 ? 56 : 120) - pending_;
  for (int i = 0; i < 8; ++i) tail[pad + i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
  Update(tail, pad + 8);
  std::array<uint8_t, kDigestBytes> out;
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<uint8_t>(state_[i] >> (24 - 8 * j));
  }
  return out;
}

const char* Sha256::Implementation() {
  if (Chosen() == sha256_internal::X86Blocks()) return "x86 SHA extensions";
  if (Chosen() == sha256_internal::ArmBlocks()) return "ARMv8 SHA2";
  return "portable";
}

}  // namespace etpack
