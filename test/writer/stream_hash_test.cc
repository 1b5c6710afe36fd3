// StreamHashes and HashThread: digests of overlapping ranges of a stream,
// fed inline or from a second thread, equal one-shot digests of the bytes.

#include "writer/stream_hash.h"

#include "catch.h"

#include <cstdint>
#include <vector>

#include "etpack/source.h"
#include "integrity/hash.h"

namespace etpack {
namespace {

std::vector<uint8_t> Pattern(size_t n) {
  std::vector<uint8_t> v(n);
  uint32_t x = 12345;
  for (uint8_t& b : v) {
    x = x * 1103515245 + 12345;
    b = static_cast<uint8_t>(x >> 24);
  }
  return v;
}

std::vector<uint8_t> OneShot(const std::vector<uint8_t>& file, uint64_t offset, uint64_t size,
                             HashKind kind) {
  auto d = HashSource(*MemorySource(file.data() + offset, size), kind);
  REQUIRE(d.ok());
  return *d;
}

// Ranges that nest, overlap, touch, are empty, or lie in a hole.
const std::vector<std::pair<uint64_t, uint64_t>> kRanges = {
    {0, 100}, {50, 3000}, {4096, 0}, {4096, 70000}, {10000, 5}, {74096, 50000}, {200000, 96}};

}  // namespace

TEST_CASE("digests of overlapping ranges equal one-shot digests, inline and threaded") {
  // The stream: bytes with a zero hole [130000, 150000) that is never fed.
  std::vector<uint8_t> file = Pattern(200096);
  std::fill(file.begin() + 130000, file.begin() + 150000, 0);
  const HashKind kind = GENERATE(HashKind::kXxh3_64, HashKind::kSha256);
  const bool threaded = GENERATE(false, true);
  StreamHashes hashes;
  std::vector<size_t> ids;
  for (auto [offset, size] : kRanges) {
    auto id = hashes.Add(offset, size, kind);
    REQUIRE(id.ok());
    ids.push_back(*id);
  }
  // Slices of odd sizes, so that slices and ranges cut each other.
  auto feed_all = [&](auto&& feed) {
    for (uint64_t pos = 0; pos < 130000;) {
      const uint64_t n = std::min<uint64_t>(777, 130000 - pos);
      feed(pos, file.data() + pos, n);
      pos += n;
    }
    feed(150000, file.data() + 150000, file.size() - 150000);
  };
  if (threaded) {
    HashThread thread(hashes);
    feed_all([&](uint64_t o, const uint8_t* d, uint64_t n) { thread.Feed(o, d, n); });
    REQUIRE(thread.Drain().ok());
  } else {
    feed_all([&](uint64_t o, const uint8_t* d, uint64_t n) { REQUIRE(hashes.Feed(o, d, n).ok()); });
  }
  for (size_t i = 0; i < kRanges.size(); ++i) {
    CAPTURE(i);
    CHECK(hashes.Digest(ids[i]) == OneShot(file, kRanges[i].first, kRanges[i].second, kind));
  }
}

TEST_CASE("a stream that goes backwards is an error, and it sticks on the thread") {
  StreamHashes hashes;
  REQUIRE(hashes.Add(0, 10, HashKind::kXxh3_64).ok());
  const std::vector<uint8_t> bytes(10, 1);
  HashThread thread(hashes);
  thread.Feed(5, bytes.data(), 5);
  thread.Feed(0, bytes.data(), 5);
  Status s = thread.Drain();
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), catch_text::Contains("hashed after bytes up to 10"));
  thread.Feed(10, bytes.data(), 0);
  CHECK(thread.Drain().code() == Code::kInvalidArgument);
}

}  // namespace etpack
