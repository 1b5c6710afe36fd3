#include "catch.h"

#include "test_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "etpack/output.h"
#include "etpack/source.h"
#include "etpack/writer.h"

namespace etpack {
namespace {

using testing::Contains;
using testing::PatternBytes;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

namespace fs = std::filesystem;

// Counts calls and write ranges without keeping any bytes.
class CountingOutput : public OutputFile {
 public:
  using OutputFile::Write;
  const std::string& destination() const override { return name; }
  Status Reserve(uint64_t size) override {
    reserved = size;
    ++reserve_calls;
    return Status::OK();
  }
  Status Write(uint64_t offset, const Source& source) override {
    writes.emplace_back(offset, source.size());
    written += source.size();
    return Status::OK();
  }
  uint64_t bytes_written() const override { return written; }
  Status Sync() override { return Status::OK(); }

  std::string name = "counting";
  uint64_t reserved = 0;
  int reserve_calls = 0;
  uint64_t written = 0;
  std::vector<std::pair<uint64_t, uint64_t>> writes;

 protected:
  Status Link() override { return Status::OK(); }
  Status Rename() override { return Status::OK(); }
  void Unplace() override {}
  Status SyncDirectory() override { return Status::OK(); }
  bool replaced_existing() const override { return false; }
};

SourcePtr Bytes(size_t n, uint32_t seed = 1) { return OwnedSource(PatternBytes(n, seed)); }

TEST_CASE("WriteArtifact rejects malformed plans before touching the output") {
  ArtifactPlan plan;
  plan.head = PatternBytes(16);
  plan.file_size = 256;
  plan.placements.push_back({32, 16, Bytes(16)});
  plan.placements.push_back({64, 32, Bytes(64)});
  plan.placements.push_back({128, 64, Bytes(128)});
  {
    CountingOutput ok;
    REQUIRE(WriteArtifact(plan, ok).ok());
  }

  std::string needle;
  SECTION("head larger than the file") {
    plan.file_size = 8;
    plan.placements.clear();
    needle = "file_size = 8";
  }
  SECTION("placement inside the head") {
    plan.placements[0].offset = 8;
    needle = "placements[0].offset = 8";
  }
  SECTION("placements out of order") {
    std::swap(plan.placements[0], plan.placements[1]);
    needle = "placements[1].offset = 32";
  }
  SECTION("placements overlap") {
    plan.placements[2].offset = 100;  // [1] ends at 128
    needle = "placements[2].offset = 100";
  }
  SECTION("placement past the end of the file") {
    plan.file_size = 255;
    needle = "placements[2]";
  }
  SECTION("offset plus size overflows") {
    plan.placements[2].offset = ~uint64_t{0} - 64;
    needle = "placements[2]";
  }
  SECTION("null source") {
    plan.placements[1].source = nullptr;
    needle = "placements[1].source";
  }
  SECTION("zero alignment") {
    plan.placements[1].alignment = 0;
    needle = "placements[1].alignment = 0 is not a power of two";
  }
  SECTION("alignment not a power of two") {
    plan.placements[1].alignment = 24;
    plan.placements[1].offset = 72;  // a multiple of 24, still refused
    needle = "placements[1].alignment = 24 is not a power of two";
  }
  SECTION("offset breaks the promised alignment") {
    plan.placements[2].offset = 160;  // aligned to 32, not 64
    needle = "placements[2].offset = 160 is not a multiple of its alignment 64";
  }
  CountingOutput output;
  Status s = WriteArtifact(plan, output);
  CAPTURE(s.message());
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(Contains(s.message(), needle));
  CHECK(output.reserve_calls == 0);
  CHECK(output.writes.empty());
}

// A plan drawing on memory, owned, file, file-slice and generator sources,
// with padding between items, and the bytes it must produce.
struct Fixture {
  TempDir dir;
  std::vector<uint8_t> file_bytes = PatternBytes(10000, 21);
  std::vector<uint8_t> mem_bytes = PatternBytes(5000, 22);
  ArtifactPlan plan;
  std::vector<uint8_t> expected;

  Fixture() {
    const std::string data = dir.File("weights.bin");
    WriteFile(data, file_bytes);
    plan.head = PatternBytes(300, 20);
    plan.file_size = 40960;
    expected.assign(plan.file_size, 0);
    std::memcpy(expected.data(), plan.head.data(), plan.head.size());
    auto add = [&](uint64_t offset, uint64_t alignment, SourcePtr s) {
      REQUIRE(ReadAll(*s).ok());
      const std::vector<uint8_t> content = *ReadAll(*s);
      std::memcpy(expected.data() + offset, content.data(), content.size());
      plan.placements.push_back({offset, alignment, std::move(s)});
    };
    add(512, 16, MemorySource(mem_bytes.data(), mem_bytes.size()));
    auto whole = FileSource(data);
    REQUIRE(whole.ok());
    add(5632, 512, *whole);
    auto part = FileSource(data, 1234, 4321);
    REQUIRE(part.ok());
    add(15872, 16, *part);
    add(20224, 32, SliceSource(*whole, 7, 3000));
    add(24576, 4096, GeneratorSource("gen", 7777, [](uint64_t o, uint8_t* d, size_t n) {
          for (size_t i = 0; i < n; ++i) d[i] = static_cast<uint8_t>((o + i) * 7);
          return Status::OK();
        }));
    add(32768, 1, Bytes(1, 23));
    add(32769, 1, Bytes(7000, 24));  // adjacent to the previous item
  }
};

TEST_CASE("a mixed plan round-trips through memory") {
  Fixture f;
  MemoryOutputFs fs;
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  WriteOptions options;
  options.progress = [&](uint64_t done, uint64_t total) { calls.emplace_back(done, total); };
  REQUIRE(WriteArtifactFiles(fs, {{"m.pte", &f.plan}}, options).ok());
  CHECK(fs.files().at("m.pte") == f.expected);
  const uint64_t payload = 300 + 5000 + 10000 + 4321 + 3000 + 7777 + 1 + 7000;
  REQUIRE(!calls.empty());
  CHECK(calls.back() == std::make_pair(payload, payload));
}

TEST_CASE("a mixed plan round-trips through a file") {
  Fixture f;
  WriteOptions opts;
  opts.output.window_bytes = GENERATE(uint64_t{1}, uint64_t{16} << 20);
  opts.output.copy_file_range = GENERATE(true, false);
  opts.output.sync = false;
  const std::string out = f.dir.File("model.pte");
  REQUIRE(WriteArtifactFile(out, f.plan, opts).ok());
  CHECK(ReadFile(out) == f.expected);
  CHECK(f.dir.List() == std::set<std::string>{"model.pte", "weights.bin"});
}

TEST_CASE("WriteArtifactAt writes a plan into an open file at an offset") {
  Fixture f;
  const std::string out = f.dir.File("cord.bin");
  SECTION("over existing bytes: the padding is zero again, the rest is kept") {
    WriteFile(out, std::vector<uint8_t>(100 + f.plan.file_size + 10, 0xff));
    const int fd = ::open(out.c_str(), O_RDWR | O_CLOEXEC);
    REQUIRE(fd >= 0);
    const Status s = WriteArtifactAt(f.plan, fd, 100, out);
    ::close(fd);
    INFO(s.ToString());
    REQUIRE(s.ok());
    std::vector<uint8_t> expected(100, 0xff);
    expected.insert(expected.end(), f.expected.begin(), f.expected.end());
    expected.insert(expected.end(), 10, 0xff);
    CHECK(ReadFile(out) == expected);
  }
  SECTION("past the end: the file grows") {
    WriteFile(out, std::vector<uint8_t>(3, 0xff));
    const int fd = ::open(out.c_str(), O_WRONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    REQUIRE(WriteArtifactAt(f.plan, fd, 7, out).ok());
    ::close(fd);
    std::vector<uint8_t> expected = {0xff, 0xff, 0xff, 0, 0, 0, 0};
    expected.insert(expected.end(), f.expected.begin(), f.expected.end());
    CHECK(ReadFile(out) == expected);
  }
  SECTION("the same WriteOptions as every write: digests, stats, progress, cancel") {
    MemoryOutputFs fs;
    std::vector<ArtifactSha256> want;
    WriteOptions to_memory;
    to_memory.sha256 = &want;
    REQUIRE(WriteArtifactFiles(fs, {{"m", &f.plan}}, to_memory).ok());
    std::vector<ArtifactSha256> got;
    WriteStats stats;
    uint64_t last = 0;
    WriteOptions options;
    options.sha256 = &got;
    options.stats = &stats;
    options.progress = [&](uint64_t done, uint64_t) { last = done; };
    const int fd = ::open(out.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    const Status s = WriteArtifactAt(f.plan, fd, 0, out, options);
    INFO(s.ToString());
    REQUIRE(s.ok());
    REQUIRE(got.size() == 1);
    REQUIRE(want.size() == 1);
    CHECK(got[0].head == want[0].head);
    CHECK(got[0].segments == want[0].segments);
    CHECK(stats.bytes == last);
    CHECK(last > 0);
    CHECK(ReadFile(out) == f.expected);
    options.cancel = [] { return true; };
    const Status cancelled = WriteArtifactAt(f.plan, fd, 0, out, options);
    ::close(fd);
    CHECK(cancelled.code() == Code::kIoError);
    CHECK(Contains(cancelled.message(), "write cancelled by the caller"));
  }
  SECTION("append mode and read-only descriptors are refused before writing") {
    WriteFile(out, std::vector<uint8_t>(3, 0xff));
    for (int flags : {O_WRONLY | O_APPEND, O_RDONLY}) {
      const int fd = ::open(out.c_str(), flags | O_CLOEXEC);
      REQUIRE(fd >= 0);
      const Status s = WriteArtifactAt(f.plan, fd, 0, out);
      ::close(fd);
      CHECK(s.code() == Code::kInvalidArgument);
      CHECK(Contains(s.message(), out));
      CHECK(ReadFile(out) == std::vector<uint8_t>(3, 0xff));
    }
  }
  SECTION("a file the plan reads is refused, through any name and in any mode") {
    // Another name for weights.bin, which the plan reads.
    const std::string data = f.dir.File("weights.bin");
    const std::string link = f.dir.File("other-name.bin");
    REQUIRE(::link(data.c_str(), link.c_str()) == 0);
    const int fd = ::open(link.c_str(), O_RDWR | O_CLOEXEC);
    REQUIRE(fd >= 0);
    const Status s = WriteArtifactAt(f.plan, fd, 0, link);
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK(Contains(s.message(), data + ": is the same file as the output " + link));
    ::close(fd);
    CHECK(ReadFile(data) == f.file_bytes);
    for (int flags : {O_WRONLY | O_APPEND, O_RDONLY, O_RDWR}) {
      const int other = ::open(link.c_str(), flags | O_CLOEXEC);
      REQUIRE(other >= 0);
      CHECK(CheckNotReadBy(f.plan, other, link).code() == Code::kInvalidArgument);
      ::close(other);
    }
    const int unrelated = ::open(out.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    REQUIRE(unrelated >= 0);
    CHECK(CheckNotReadBy(f.plan, unrelated, out).ok());
    ::close(unrelated);
  }
  SECTION("a malformed plan is refused before writing") {
    ArtifactPlan bad = f.plan;
    bad.file_size = 10;
    WriteFile(out, std::vector<uint8_t>(3, 0xff));
    const int fd = ::open(out.c_str(), O_RDWR | O_CLOEXEC);
    REQUIRE(fd >= 0);
    CHECK(WriteArtifactAt(bad, fd, 0, out).code() == Code::kInvalidArgument);
    ::close(fd);
    CHECK(ReadFile(out) == std::vector<uint8_t>(3, 0xff));
  }
}

TEST_CASE("WriteArtifactFile leaves the destination untouched on failure") {
  Fixture f;
  const std::string out = f.dir.File("model.pte");
  const std::vector<uint8_t> old = PatternBytes(123, 30);
  WriteFile(out, old);

  std::string needle;
  SECTION("malformed plan") {
    f.plan.placements[3].offset = 100;
    needle = "placements[3].offset = 100";
  }
  SECTION("a source fails midway") {
    f.plan.placements.push_back(
        {39800, 8, GeneratorSource("broken", 500, [](uint64_t, uint8_t*, size_t) {
           return Corrupt("checksum mismatch");
         })});
    needle = "checksum mismatch";
  }
  Status s = WriteArtifactFile(out, f.plan);
  REQUIRE(!s.ok());
  CHECK(Contains(s.message(), needle));
  CHECK(Contains(s.message(), out));
  CHECK(ReadFile(out) == old);
  CHECK(f.dir.List() == std::set<std::string>{"model.pte", "weights.bin"});
}

// A 64-byte head and one placement of `size` bytes at 4096 that are never
// read (the outputs these tests write to only count).
ArtifactPlan HugeUnreadPlan(uint64_t size) {
  ArtifactPlan plan;
  plan.head = PatternBytes(64);
  plan.file_size = 4096 + size;
  plan.placements.push_back(
      {4096, 4096, GeneratorSource("huge", size, [](uint64_t, uint8_t*, size_t) {
         return Corrupt("unexpected read");
       })});
  return plan;
}

TEST_CASE("large placements are written in slices with progress between") {
  const uint64_t size = uint64_t{200} << 20;
  const ArtifactPlan plan = HugeUnreadPlan(size);
  CountingOutput output;
  std::vector<uint64_t> done;
  WriteOptions options;
  options.progress = [&](uint64_t d, uint64_t total) {
    CHECK(total == 64 + size);
    done.push_back(d);
  };
  REQUIRE(WriteArtifact(plan, output, options).ok());
  CHECK(output.reserved == plan.file_size);
  CHECK(output.written == 64 + size);
  REQUIRE(output.writes.size() == 5);  // head + 64 + 64 + 64 + 8 MiB
  CHECK(output.writes[0] == std::make_pair(uint64_t{0}, uint64_t{64}));
  CHECK(output.writes[1] == std::make_pair(uint64_t{4096}, uint64_t{64} << 20));
  CHECK(output.writes[4] == std::make_pair(4096 + (uint64_t{192} << 20), uint64_t{8} << 20));
  REQUIRE(done.size() >= 4);
  for (size_t i = 1; i < done.size(); ++i) {
    CHECK(done[i] >= done[i - 1]);
    CHECK(done[i] - done[i - 1] <= (uint64_t{64} << 20) + 64);
  }
  CHECK(done.back() == 64 + size);
}

TEST_CASE("a cancelled write stops at the next check and publishes nothing") {
  const uint64_t size = uint64_t{200} << 20;
  const ArtifactPlan plan = HugeUnreadPlan(size);
  CountingOutput output;
  int asked = 0;
  const int stop_at = GENERATE(1, 3);  // after the head; after two slices
  WriteOptions options;
  options.cancel = [&] { return ++asked == stop_at; };
  Status s = WriteArtifact(plan, output, options);
  CAPTURE(s.message());
  CHECK(s.code() == Code::kIoError);
  CHECK(Contains(s.message(), "counting: write cancelled by the caller after "));
  CHECK(asked == stop_at);
  CHECK(output.writes.size() == static_cast<size_t>(stop_at));  // nothing after the check
}

TEST_CASE("cancelling a unit of files leaves every destination as it was") {
  TempDir dir;
  const std::string ptd = dir.File("x.ptd"), pte = dir.File("x.pte");
  const std::vector<uint8_t> old = PatternBytes(77, 4);
  WriteFile(pte, old);
  const ArtifactPlan a = WholeSourcePlan(Bytes(5000, 1));
  const ArtifactPlan b = WholeSourcePlan(Bytes(3000, 2));
  // Asked after each file's one placement, then once before publishing:
  // cancelling at the last check still publishes nothing.
  const int stop_at = GENERATE(1, 2, 3);
  int asked = 0;
  std::vector<uint64_t> done;
  WriteOptions options;
  options.progress = [&](uint64_t d, uint64_t) { done.push_back(d); };
  options.cancel = [&] { return ++asked == stop_at; };
  Status s = WriteArtifactFiles({{ptd, &a}, {pte, &b}}, options);
  CAPTURE(s.message());
  CHECK(s.code() == Code::kIoError);
  CHECK(Contains(s.message(), "write cancelled by the caller"));
  CHECK(asked == stop_at);
  if (stop_at == 3) {
    CHECK(Contains(s.message(), ptd + ", " + pte + ": write cancelled"));
    CHECK(done == std::vector<uint64_t>{8000});  // the last report came first
  }
  CHECK(dir.List() == std::set<std::string>{"x.pte"});
  CHECK(ReadFile(pte) == old);
  // Not cancelled, the same unit is written.
  WriteOptions go_on;
  go_on.cancel = [] { return false; };
  REQUIRE(WriteArtifactFiles({{ptd, &a}, {pte, &b}}, go_on).ok());
  CHECK(ReadFile(pte) == PatternBytes(3000, 2));
}

// A plan over a base: the bytes no placement covers are the base's. On a
// file system that cannot clone (tmpfs, ext4: the CI's /tmp) they are
// copied, and counted as written; a memory output never clones.
TEST_CASE("a plan with a base keeps the base's bytes where nothing is placed") {
  TempDir dir;
  const std::string path = dir.File("base.bin");
  const std::vector<uint8_t> old = PatternBytes(10000, 7);
  WriteFile(path, old);
  Result<SourcePtr> base = FileSource(path);
  REQUIRE(base.ok());
  ArtifactPlan plan;
  plan.head = {1, 2, 3};
  plan.file_size = old.size();
  plan.base = *base;
  plan.placements.push_back({4000, 1, Bytes(100, 8)});
  std::vector<uint8_t> want = old;
  want[0] = 1, want[1] = 2, want[2] = 3;
  const std::vector<uint8_t> patch = PatternBytes(100, 8);
  std::copy(patch.begin(), patch.end(), want.begin() + 4000);

  MemoryOutputFs memory;
  WriteStats stats;
  std::vector<uint64_t> done;
  WriteOptions options;
  options.stats = &stats;
  options.progress = [&](uint64_t d, uint64_t total) {
    CHECK(total == old.size());
    done.push_back(d);
  };
  REQUIRE(WriteArtifactFiles(memory, {{"out", &plan}}, options).ok());
  CHECK(memory.files().at("out") == want);
  CHECK(stats.bytes == old.size());
  CHECK(stats.bytes_cloned == 0);
  CHECK(done.back() == old.size());

  // Another destination: the base is an input like any other file read.
  const std::string copy = dir.File("copy.bin");
  REQUIRE(WriteArtifactFile(copy, plan).ok());
  CHECK(ReadFile(copy) == want);
  // Its own file, only when the plan says it replaces its base.
  Status s = WriteArtifactFile(path, plan);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(Contains(s.message(), "refusing to overwrite an input"));
  CHECK(ReadFile(path) == old);
  plan.replaces_base = true;
  REQUIRE(WriteArtifactFile(path, plan).ok());
  CHECK(ReadFile(path) == want);
  // Replacing its base, it replaces nothing else.
  s = WriteArtifactFile(copy, plan);
  CHECK(s.code() == Code::kIoError);
  CHECK(Contains(s.message(), "another writer replaced or removed the file"));
}

TEST_CASE("a plan with a base is refused where the base does not fit it") {
  ArtifactPlan plan;
  plan.file_size = 10;
  plan.base = Bytes(9);
  MemoryOutputFs memory;
  Status s = WriteArtifactFiles(memory, {{"out", &plan}});
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(Contains(s.message(), "has 9 bytes, file_size = 10"));
  plan.base = Bytes(10);
  plan.replaces_base = true;  // a base that is no file cannot be replaced
  s = WriteArtifactFiles(memory, {{"out", &plan}});
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(Contains(s.message(), "which is not a file"));
  CHECK(memory.files().empty());
}

// Pieces of a stream whose end is known only once produced.
class Pieces final : public ByteStream {
 public:
  Pieces(std::vector<std::vector<uint8_t>> pieces, uint64_t max)
      : pieces_(std::move(pieces)), max_(max) {}
  std::string Describe() const override { return "pieces"; }
  uint64_t max_size() const override { return max_; }
  uint64_t work() const override { return 10 * pieces_.size(); }
  Result<Piece> Next() override {
    if (next_ == pieces_.size()) return Piece{};
    const std::vector<uint8_t>& p = pieces_[next_++];
    return Piece{MemorySource(p.data(), p.size()), 10};
  }

 private:
  std::vector<std::vector<uint8_t>> pieces_;
  uint64_t max_;
  size_t next_ = 0;
};

TEST_CASE("a plan's tail is written after the rest and the file ends with it") {
  ArtifactPlan plan;
  plan.head = {9, 9};
  plan.file_size = 2 + 100;
  plan.tail = std::make_shared<Pieces>(
      std::vector<std::vector<uint8_t>>{PatternBytes(30, 1), PatternBytes(5, 2)}, 100);
  MemoryOutputFs memory;
  std::vector<std::pair<uint64_t, uint64_t>> reports;
  WriteOptions options;
  options.progress = [&](uint64_t d, uint64_t total) { reports.emplace_back(d, total); };
  REQUIRE(WriteArtifactFiles(memory, {{"out", &plan}}, options).ok());
  std::vector<uint8_t> want = {9, 9};
  for (const auto& p : {PatternBytes(30, 1), PatternBytes(5, 2)}) {
    want.insert(want.end(), p.begin(), p.end());
  }
  CHECK(memory.files().at("out") == want);
  // Progress counts the tail's work, not its bytes.
  REQUIRE(!reports.empty());
  CHECK(reports.back() == std::make_pair(uint64_t{22}, uint64_t{22}));

  // A stream that breaks its promise fails the write; nothing is published.
  ArtifactPlan liar;
  liar.file_size = 10;
  liar.tail = std::make_shared<Pieces>(std::vector<std::vector<uint8_t>>{PatternBytes(11, 1)}, 10);
  Status s = WriteArtifactFiles(memory, {{"liar", &liar}});
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(Contains(s.message(), "pieces produced more than the 10 bytes it promised"));
  CHECK(memory.files().count("liar") == 0);
}

}  // namespace
}  // namespace etpack

namespace etpack {
namespace {

// Overwrites [offset, +n) of `path` in place, keeping its size, once the
// clock has moved on (so the change shows in its times whatever their
// granularity).
void OverwriteInPlace(const std::string& path, uint64_t offset, const std::string& bytes) {
  ::usleep(20000);
  const int fd = ::open(path.c_str(), O_WRONLY);
  REQUIRE(fd >= 0);
  REQUIRE(::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset)) ==
          static_cast<ssize_t>(bytes.size()));
  ::close(fd);
}

TEST_CASE("an input written to between planning and writing: nothing is published") {
  TempDir dir;
  const std::string in = dir.File("in.bin");
  testing::WriteFile(in, PatternBytes(100000, 3));
  const std::string out = dir.File("out.bin");
  {
    Result<SourcePtr> src = FileSource(in);
    REQUIRE(src.ok());
    const ArtifactPlan plan = WholeSourcePlan(*src);
    // The plan was decided from these bytes; the file then changes in place.
    OverwriteInPlace(in, 5000, "changed");
    for (bool copy_file_range : {true, false}) {
      WriteOptions options;
      options.output.copy_file_range = copy_file_range;
      const Status s = WriteArtifactFile(out, plan, options);
      CHECK(s.code() == Code::kIoError);
      CHECK(Contains(s.message(), in + ": it was written to while it was read"));
      CHECK_FALSE(std::filesystem::exists(out));
    }
    CHECK(dir.List() == std::set<std::string>{"in.bin"});
  }
  // Truncated and grown back to its size: the times still tell.
  Result<SourcePtr> again = FileSource(in);
  REQUIRE(again.ok());
  const ArtifactPlan plan = WholeSourcePlan(*again);
  REQUIRE(WriteArtifactFile(out, plan).ok());  // unchanged: written
  ::usleep(20000);
  std::filesystem::resize_file(in, 10);
  std::filesystem::resize_file(in, 100000);
  CHECK(Contains(WriteArtifactFile(dir.File("o2.bin"), plan).message(), "while it was read"));
  CHECK_FALSE(std::filesystem::exists(dir.File("o2.bin")));
}

}  // namespace
}  // namespace etpack
