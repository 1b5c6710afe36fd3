// GroupByContent (plan/content_groups.h): the same answer as ContentDedup,
// each byte read at most once, and the physical-extents shortcut.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>
#include "catch.h"

#include "etpack/input.h"
#include "plan/content_dedup.h"
#include "plan/content_groups.h"
#include "test_files.h"
#include "test_programs.h"

using namespace etpack;
using namespace etpack::testing;

namespace {

// `bytes` as a source that adds what is read from it to *read.
SourcePtr Counted(std::vector<uint8_t> bytes, std::shared_ptr<uint64_t> read) {
  auto held = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  return GeneratorSource("counted", held->size(),
                         [held, read](uint64_t offset, uint8_t* dst, size_t n) {
                           *read += n;
                           std::memcpy(dst, held->data() + offset, n);
                           return Status::OK();
                         });
}

// ContentDedup's ids for the same list: the reference answer.
std::vector<size_t> DedupIds(const std::vector<SourcePtr>& sources) {
  ContentDedup d;
  std::vector<size_t> ids;
  for (const SourcePtr& s : sources) {
    Result<size_t> id = d.Add(s);
    REQUIRE(id.ok());
    ids.push_back(*id);
  }
  return ids;
}

}  // namespace

TEST_CASE("GroupByContent: ids as ContentDedup numbers them, each byte read once") {
  constexpr size_t kBig = (9 << 20) + 123;  // more than two read chunks
  std::vector<uint8_t> w = PatternBytes(kBig, 3);
  std::vector<uint8_t> tail = w, middle = w, middle2 = w;
  tail[kBig - 5000] ^= 1;       // differs past the last chunk boundary, not in a sample
  middle[5 << 20] ^= 1;         // differs in the second chunk
  middle2[5 << 20] ^= 1;        // ... exactly as `middle` does
  middle2[(8 << 20) + 7] ^= 2;  // and then once more
  auto read = std::make_shared<uint64_t>(0);
  std::vector<SourcePtr> sources;
  for (const auto* v : {&w, &tail, &w, &middle, &middle2, &w, &middle, &tail}) {
    sources.push_back(Counted(*v, read));
  }
  sources.push_back(sources[0]);         // the same object again
  sources.push_back(Counted({}, read));  // empty items are equal
  sources.push_back(Counted({}, read));
  sources.push_back(Counted(PatternBytes(100, 1), read));  // a lone size: never read
  Result<ContentGroups> g = GroupByContent(sources);
  REQUIRE(g.ok());
  const uint64_t read_to_group = *read;
  CHECK(g->content_of == std::vector<size_t>{0, 1, 0, 2, 3, 0, 2, 1, 0, 4, 4, 5});
  CHECK(g->content_of == DedupIds(sources));
  // 8 distinct big sources of one size: sampled, then read in lockstep; a
  // class of one stops being read. Never more than the bytes once each,
  // plus a re-read of a chunk where two members differ alike from their
  // class's first.
  constexpr uint64_t kSample = 3 * 4096;
  CHECK(g->bytes_compared <= 8 * kBig + 4 * (4 << 20));
  CHECK(read_to_group == 8 * kSample + g->bytes_compared);
  CHECK(g->bytes_by_extents == 0);
}

TEST_CASE("GroupByContent: random families agree with ContentDedup") {
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    const size_t size = 1 + rng() % (5 << 20);
    std::vector<std::vector<uint8_t>> contents;
    for (int c = 0; c < 3; ++c) {
      std::vector<uint8_t> v = contents.empty() ? PatternBytes(size, round) : contents[0];
      if (c > 0) v[rng() % size] ^= static_cast<uint8_t>(1 + c);
      contents.push_back(std::move(v));
    }
    std::vector<SourcePtr> sources;
    for (int i = 0; i < 9; ++i) sources.push_back(Bytes(contents[rng() % contents.size()]));
    Result<ContentGroups> g = GroupByContent(sources);
    REQUIRE(g.ok());
    CHECK(g->content_of == DedupIds(sources));
  }
}

TEST_CASE("GroupByContent: read errors are returned") {
  auto failing = GeneratorSource(
      "failing", 1 << 20, [](uint64_t, uint8_t*, size_t) { return Corrupt("disk on fire"); });
  Result<ContentGroups> g = GroupByContent({Pattern(1 << 20, 1), failing});
  REQUIRE_FALSE(g.ok());
  CHECK(g.status().message().find("disk on fire") != std::string::npos);
}

namespace {

// A file in memory that says its bytes lie at `physical` on device 1 (its
// descriptor: an empty memfd, one per file).
class PlacedFile final : public InputFile {
 public:
  PlacedFile(std::vector<uint8_t> bytes, uint64_t physical, std::shared_ptr<uint64_t> read)
      : bytes_(std::move(bytes)),
        physical_(physical),
        read_(std::move(read)),
        fd_(::memfd_create("placed", MFD_CLOEXEC)) {}
  ~PlacedFile() override { ::close(fd_); }
  int fd() const override { return fd_; }
  Result<uint64_t> Size() const override { return uint64_t{bytes_.size()}; }
  Result<size_t> Read(uint64_t offset, void* dst, size_t n) const override {
    const size_t k = std::min<size_t>(n, bytes_.size() - offset);
    std::memcpy(dst, bytes_.data() + offset, k);
    *read_ += k;
    return k;
  }
  PhysicalExtents Extents(uint64_t offset, uint64_t n) const override {
    PhysicalExtents e;
    e.device = 1;
    e.runs = {{physical_ + offset, n}};
    return e;
  }

 private:
  std::vector<uint8_t> bytes_;
  uint64_t physical_;
  std::shared_ptr<uint64_t> read_;
  int fd_;
};

class PlacedFs final : public InputFs {
 public:
  void Add(const std::string& path, std::shared_ptr<const InputFile> file) { files_[path] = file; }
  Result<std::shared_ptr<const InputFile>> Open(const std::string& path) override {
    return files_.at(path);
  }

 private:
  std::map<std::string, std::shared_ptr<const InputFile>> files_;
};

}  // namespace

TEST_CASE("GroupByContent: one object or one file range named twice is equal unread") {
  TempDir dir;
  WriteFile(dir.File("w.bin"), PatternBytes(8192, 3));
  Result<SourcePtr> a = FileSource(dir.File("w.bin"), 0, 4096);
  Result<SourcePtr> b = FileSource(dir.File("w.bin"), 0, 4096);  // another object
  REQUIRE((a.ok() && b.ok()));
  Result<ContentGroups> g = GroupByContent({*a, *b, *a, *b});
  REQUIRE(g.ok());
  CHECK(g->content_of == std::vector<size_t>{0, 0, 0, 0});
  CHECK(g->bytes_compared == 0);
}

TEST_CASE("GroupByContent: ranges on the same physical blocks are equal unread") {
  constexpr size_t kSize = 3 << 20;
  const std::vector<uint8_t> w = PatternBytes(kSize, 9);
  std::vector<uint8_t> other = w;
  other[kSize / 3] ^= 1;
  auto read = std::make_shared<uint64_t>(0);
  PlacedFs fs;
  fs.Add("a", std::make_shared<PlacedFile>(w, 1 << 30, read));
  fs.Add("b", std::make_shared<PlacedFile>(w, 1 << 30, read));       // a reflink copy of a
  fs.Add("c", std::make_shared<PlacedFile>(w, 2u << 30, read));      // a plain copy of a
  fs.Add("d", std::make_shared<PlacedFile>(other, 3u << 30, read));  // other bytes
  std::vector<SourcePtr> sources;
  for (const char* name : {"a", "b", "c", "d"}) {
    Result<SourcePtr> s = FileSource(fs, name);
    REQUIRE(s.ok());
    sources.push_back(*s);
  }
  Result<ContentGroups> g = GroupByContent(sources);
  REQUIRE(g.ok());
  CHECK(g->content_of == std::vector<size_t>{0, 0, 0, 1});
  CHECK(g->bytes_by_extents == kSize);  // b: by its blocks
  // All four sampled; a, c and d then compared by reading, b never.
  CHECK(g->bytes_compared == 3 * kSize);
  CHECK(*read == 4 * 3 * 4096 + 3 * kSize);
}
