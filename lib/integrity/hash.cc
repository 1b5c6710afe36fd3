#include "integrity/hash.h"

#include <xxhash.h>

#include <algorithm>
#include <new>

#include "integrity/sha256.h"

namespace etpack {
namespace {

// XXH3 in its 64- or 128-bit form: one state type, two sets of calls.
class Xxh3 final : public RunningHash {
 public:
  Xxh3(XXH3_state_t* state, bool wide) : state_(state), wide_(wide) {}
  ~Xxh3() override { XXH3_freeState(state_); }
  void Update(const uint8_t* data, size_t n) override {
    (void)(wide_ ? XXH3_128bits_update(state_, data, n) : XXH3_64bits_update(state_, data, n));
  }
  std::vector<uint8_t> Finish() override {
    if (wide_) {
      XXH128_canonical_t c;
      XXH128_canonicalFromHash(&c, XXH3_128bits_digest(state_));
      return std::vector<uint8_t>(c.digest, c.digest + sizeof c.digest);
    }
    XXH64_canonical_t c;
    XXH64_canonicalFromHash(&c, XXH3_64bits_digest(state_));
    return std::vector<uint8_t>(c.digest, c.digest + sizeof c.digest);
  }

 private:
  XXH3_state_t* state_;
  const bool wide_;
};

class Sha256Hash final : public RunningHash {
 public:
  void Update(const uint8_t* data, size_t n) override { sha_.Update(data, n); }
  std::vector<uint8_t> Finish() override {
    const auto digest = sha_.Finish();
    return std::vector<uint8_t>(digest.begin(), digest.end());
  }

 private:
  Sha256 sha_;
};

}  // namespace

void RunningHash::UpdateZeros(uint64_t n) {
  static const uint8_t kZeros[4096] = {};
  while (n > 0) {
    const size_t k = static_cast<size_t>(std::min<uint64_t>(n, sizeof kZeros));
    Update(kZeros, k);
    n -= k;
  }
}

Result<std::unique_ptr<RunningHash>> NewRunningHash(HashKind kind) {
  if (kind == HashKind::kXxh3_64 || kind == HashKind::kXxh3_128) {
    const bool wide = kind == HashKind::kXxh3_128;
    XXH3_state_t* state = XXH3_createState();
    if (state == nullptr ||
        (wide ? XXH3_128bits_reset(state) : XXH3_64bits_reset(state)) != XXH_OK) {
      XXH3_freeState(state);
      return OutOfRange("cannot allocate an XXH3 state");
    }
    return std::unique_ptr<RunningHash>(new Xxh3(state, wide));
  }
  return std::unique_ptr<RunningHash>(new Sha256Hash());
}

uint64_t Xxh3Value(const std::vector<uint8_t>& digest) {
  XXH64_canonical_t c;
  std::copy(digest.begin(), digest.begin() + sizeof c.digest, c.digest);
  return XXH64_hashFromCanonical(&c);
}

std::string HexDigest(const std::vector<uint8_t>& bytes) {
  static const char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    s += kHex[b >> 4];
    s += kHex[b & 15];
  }
  return s;
}

Result<std::vector<uint8_t>> HashSource(const Source& source, HashKind kind) {
  constexpr size_t kChunk = size_t{1} << 20;
  ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<RunningHash> h, NewRunningHash(kind));
  const uint64_t size = source.size();
  if (const uint8_t* p = source.contiguous()) {
    for (uint64_t pos = 0; pos < size; pos += kChunk) {
      h->Update(p + pos, static_cast<size_t>(std::min<uint64_t>(kChunk, size - pos)));
    }
    return h->Finish();
  }
  std::vector<uint8_t> buf;
  try {
    buf.resize(static_cast<size_t>(std::min<uint64_t>(size, kChunk)));
  } catch (const std::bad_alloc&) {
    return OutOfRange("cannot allocate a buffer to hash " + source.Describe());
  }
  for (uint64_t pos = 0; pos < size;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(size - pos, kChunk));
    ETPACK_RETURN_IF_ERROR(source.ReadAt(pos, buf.data(), n));
    h->Update(buf.data(), n);
    pos += n;
  }
  return h->Finish();
}

}  // namespace etpack
