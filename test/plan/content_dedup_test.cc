// ContentDedup and the named-data store built on it: the dedup rules, what
// is read to apply them, and the errors.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include "catch.h"

#include "plan/content_dedup.h"
#include "plan/named_store.h"
#include "plan/same_source.h"
#include "test_files.h"
#include "test_programs.h"

using namespace etpack;
using namespace etpack::testing;

namespace {

// A source that counts the bytes read from it.
SourcePtr Counted(uint64_t size, uint8_t seed, std::shared_ptr<uint64_t> read) {
  return GeneratorSource("counted " + std::to_string(seed), size,
                         [read, seed](uint64_t offset, uint8_t* dst, size_t n) {
                           *read += n;
                           for (size_t k = 0; k < n; ++k) {
                             dst[k] = static_cast<uint8_t>(seed + (offset + k) * 7);
                           }
                           return Status::OK();
                         });
}

}  // namespace

TEST_CASE("ContentDedup: equal bytes get one id; lone sizes are never read") {
  auto read = std::make_shared<uint64_t>(0);
  ContentDedup d;
  auto a = Counted(3 << 20, 1, read);   // larger than one read chunk
  auto a2 = Counted(3 << 20, 1, read);  // same bytes, another source
  auto b = Counted(3 << 20, 2, read);   // same size, other bytes
  auto lone = Counted(1000, 1, read);   // no other item has its size
  CHECK(*d.Add(lone) == 0);
  CHECK(*d.Add(a) == 1);
  CHECK(*read == 0);  // nothing to compare with yet
  CHECK(*d.Add(b) == 2);
  constexpr uint64_t kSample = 3 * 4096;
  CHECK(*read == 2 * kSample);  // a and b sampled, and told apart by that alone
  CHECK(*d.Add(a2) == 1);
  // a2 sampled; its sample is a's alone, so the two are compared byte by
  // byte, each read once.
  CHECK(*read == 3 * kSample + 2 * (3 << 20));
  CHECK(*d.Add(a) == 1);  // the same object: no read
  CHECK(*read == 3 * kSample + 2 * (3 << 20));
  CHECK(d.contents() == 3);
  CHECK(d.content(1) == a);
  // Empty items are equal without reading; an in-memory copy of a matches.
  CHECK(*d.Add(Bytes({})) == 3);
  CHECK(*d.Add(Bytes({})) == 3);
  REQUIRE(ReadAll(*a).ok());
  CHECK(*d.Add(OwnedSource(*ReadAll(*a))) == 1);
}

TEST_CASE("ContentDedup: bytes between the sampled windows still count") {
  // Equal at the start, middle and end windows, different elsewhere.
  const size_t n = 1 << 20;
  std::vector<uint8_t> x = testing::PatternBytes(n, 5);
  std::vector<uint8_t> y = x;
  y[100000] ^= 1;
  std::vector<uint8_t> z = x;
  z[200000] ^= 1;
  ContentDedup d;
  CHECK(*d.Add(Bytes(x)) == 0);
  CHECK(*d.Add(Bytes(y)) == 1);  // one same-sample candidate: compared
  CHECK(*d.Add(Bytes(z)) == 2);  // two: hashed whole first
  CHECK(*d.Add(Bytes(y)) == 1);
  CHECK(*d.Add(Bytes(x)) == 0);
  CHECK(*d.Add(Bytes(z)) == 2);
  CHECK(d.contents() == 3);
}

TEST_CASE("ContentDedup: one range of one file named twice is one content, unread") {
  testing::TempDir dir;
  testing::WriteFile(dir.File("w.bin"), testing::PatternBytes(4096, 1));
  Result<SourcePtr> a = FileSource(dir.File("w.bin"), 0, 1024);
  Result<SourcePtr> b = FileSource(dir.File("w.bin"), 0, 1024);  // another object
  Result<SourcePtr> c = FileSource(dir.File("w.bin"), 1024, 1024);
  REQUIRE((a.ok() && b.ok() && c.ok()));
  REQUIRE((*a)->file_range() != nullptr);
  ContentDedup d;
  CHECK(*d.Add(*a) == 0);
  CHECK(*d.Add(*b) == 0);
  CHECK(*d.Add(*c) == 1);  // same size, other bytes: hashed and told apart
  CHECK(d.contents() == 2);
}

TEST_CASE("SameSourceIndex: the same object or the same file range is an earlier item") {
  testing::TempDir dir;
  testing::WriteFile(dir.File("w.bin"), testing::PatternBytes(4096, 1));
  Result<SourcePtr> a = FileSource(dir.File("w.bin"), 0, 1024);
  Result<SourcePtr> b = FileSource(dir.File("w.bin"), 0, 1024);  // another object
  Result<SourcePtr> c = FileSource(dir.File("w.bin"), 0, 1023);  // another range
  REQUIRE((a.ok() && b.ok() && c.ok()));
  const SourcePtr m = Pattern(1024, 1);  // no file range
  const SourcePtr n = Pattern(1024, 1);  // equal bytes, another object
  SameSourceIndex index;
  CHECK(!index.FindOrAdd(**a, 0).has_value());
  CHECK(index.FindOrAdd(**a, 1) == std::optional<size_t>(0));
  CHECK(index.FindOrAdd(**b, 2) == std::optional<size_t>(0));
  CHECK(index.FindOrAdd(**b, 3) == std::optional<size_t>(0));
  CHECK(!index.FindOrAdd(**c, 4).has_value());
  CHECK(!index.FindOrAdd(*m, 5).has_value());
  CHECK(index.FindOrAdd(*m, 6) == std::optional<size_t>(5));
  CHECK(!index.FindOrAdd(*n, 7).has_value());  // equal bytes are for reading to find
}

TEST_CASE("ContentDedup: read errors are returned") {
  ContentDedup d;
  auto failing = GeneratorSource(
      "failing", 64, [](uint64_t, uint8_t*, size_t) { return Corrupt("disk on fire"); });
  REQUIRE(d.Add(Pattern(64, 1)).ok());
  auto r = d.Add(failing);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("disk on fire") != std::string::npos);
}

namespace {

// A store whose entries are named by the test's own strings.
struct TestStore {
  explicit TestStore(SharedAlignment rule = SharedAlignment::kFirstKey)
      : store(rule, [this](size_t tag) { return names[tag]; }) {}
  TestStore(const TestStore&) = delete;
  TestStore& operator=(const TestStore&) = delete;
  Result<NamedDataStore::Added> Add(std::string_view key, const SourcePtr& source,
                                    uint64_t alignment, std::string what) {
    names.push_back(std::move(what));
    return store.Add(key, source, alignment, names.size() - 1);
  }
  std::vector<std::string> names;
  NamedDataStore store;
};

}  // namespace

TEST_CASE("NamedDataStore: one entry per key, one buffer per content") {
  TestStore t;
  auto w = Pattern(64, 1);
  auto w_copy = Pattern(64, 1);
  auto bias = Pattern(16, 2);
  auto k0 = t.Add("linear.weight", w, 16, "entries[0] \"NativeBackend\" named_data[0]");
  REQUIRE(k0.ok());
  CHECK(k0->fresh);
  REQUIRE(t.Add("linear.bias", bias, 16, "b").ok());
  // Another key, the same bytes from another source: shares the buffer, and
  // the first key's alignment stays (the reference rule).
  auto k2 = t.Add("mlx/linear.weight", w_copy, 1024, "entries[1] \"MLXBackend\" named_data[0]");
  REQUIRE(k2.ok());
  CHECK(k2->fresh);
  // The same key and bytes again: the same entry.
  auto again = t.Add("linear.weight", w_copy, 16, "again");
  REQUIRE(again.ok());
  CHECK_FALSE(again->fresh);
  CHECK(again->key == 0);
  REQUIRE(t.store.keys().size() == 3);
  CHECK(t.store.keys()[2].buffer == 0);
  REQUIRE(t.store.buffers().size() == 2);
  CHECK(t.store.buffers()[0].alignment == 16);
  auto segs = t.store.Segments();
  REQUIRE(segs.size() == 2);
  CHECK(segs[0].size == 64);
  CHECK(segs[0].alignment == 16);

  // The same key with other bytes names both entries.
  auto clash =
      t.Add("mlx/linear.weight", Pattern(64, 9), 16, "entries[2] \"VulkanBackend\" named_data[4]");
  REQUIRE_FALSE(clash.ok());
  CHECK(clash.status().code() == Code::kInvalidArgument);
  CHECK(clash.status().message() ==
        "entries[2] \"VulkanBackend\" named_data[4]: key \"mlx/linear.weight\" (64 bytes) is "
        "already entries[1] \"MLXBackend\" named_data[0] with different bytes (64 bytes); one key "
        "can hold only one content");
}

TEST_CASE("NamedDataStore: kStrictest gives a shared buffer every key's alignment") {
  TestStore t(SharedAlignment::kStrictest);
  auto w = Pattern(64, 1);
  REQUIRE(t.Add("a", w, 16, "a").ok());
  REQUIRE(t.Add("b", Pattern(64, 1), 1024, "b").ok());
  REQUIRE(t.Add("c", w, 64, "c").ok());
  REQUIRE(t.store.buffers().size() == 1);
  CHECK(t.store.buffers()[0].alignment == 1024);
}

TEST_CASE("NamedDataStore: bad entries name themselves") {
  TestStore t;
  auto null = t.Add("k", nullptr, 1, "named_data[3]");
  REQUIRE_FALSE(null.ok());
  CHECK(null.status().message() == "named_data[3]: the data source is null");
  auto align = t.Add("k", Pattern(4, 1), 0, "named_data[4]");
  REQUIRE_FALSE(align.ok());
  CHECK(align.status().message() == "named_data[4]: alignment = 0 is not a positive alignment");
}

TEST_CASE("NamedDataStore: kStrictest combines alignments that are not powers of two by lcm") {
  TestStore t(SharedAlignment::kStrictest);
  auto w = Pattern(64, 1);
  REQUIRE(t.Add("a", w, 3, "a").ok());
  REQUIRE(t.Add("b", Pattern(64, 1), 8, "b").ok());
  REQUIRE(t.store.buffers().size() == 1);
  CHECK(t.store.buffers()[0].alignment == 24);
  TestStore first;  // the reference's rule: the first key's, even 3
  REQUIRE(first.Add("a", w, 3, "a").ok());
  REQUIRE(first.Add("b", Pattern(64, 1), 8, "b").ok());
  CHECK(first.store.buffers()[0].alignment == 3);
}

TEST_CASE("ContentDedup: many items of one size cost a bounded number of comparisons each") {
  // 5,000 distinct 64-byte items: each is sampled (its whole hash) and
  // looked up among the contents of its size, never compared with each.
  constexpr size_t kItems = 5000;
  ContentDedup d;
  for (size_t i = 0; i < kItems; ++i) {
    std::vector<uint8_t> bytes(64, 0);
    for (size_t k = 0; k < 8; ++k) bytes[k] = static_cast<uint8_t>(i >> (8 * k));
    REQUIRE(*d.Add(OwnedSource(std::move(bytes))) == i);
  }
  CHECK(d.contents() == kItems);
  CHECK(d.digests_compared() <= 2 * kItems);
  // Items equal only in their sampled windows (3 x 4 KiB at start, middle
  // and end of 64 KiB) are told apart by whole hashes, each looked up once.
  ContentDedup windows;
  constexpr size_t kSize = 64 << 10;
  constexpr size_t kSameSample = 300;
  for (size_t i = 0; i < kSameSample; ++i) {
    std::vector<uint8_t> bytes(kSize, 7);
    bytes[10000] = static_cast<uint8_t>(i);
    bytes[10001] = static_cast<uint8_t>(i >> 8);
    REQUIRE(*windows.Add(OwnedSource(std::move(bytes))) == i);
  }
  CHECK(windows.digests_compared() <= 4 * kSameSample);
}
