#include "catch.h"

#include "test_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "etpack/source.h"

namespace etpack {
namespace {

using testing::Contains;
using testing::PatternBytes;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

namespace fs = std::filesystem;

std::vector<uint8_t> Read(const Source& s) {
  auto r = ReadAll(s);
  REQUIRE(r.ok());
  return *r;
}

TEST_CASE("MemorySource borrows bytes and reads ranges") {
  const std::vector<uint8_t> data = PatternBytes(100);
  SourcePtr s = MemorySource(data.data(), data.size());
  CHECK(s->size() == 100);
  CHECK(s->contiguous() == data.data());
  CHECK(s->file_range() == nullptr);
  CHECK(s->Describe() == "memory (100 bytes)");

  uint8_t buf[10];
  REQUIRE(s->ReadAt(90, buf, 10).ok());
  CHECK(std::memcmp(buf, data.data() + 90, 10) == 0);

  Status past = s->ReadAt(95, buf, 10);
  CHECK(past.code() == Code::kOutOfRange);
  CHECK(Contains(past.message(), "memory (100 bytes)"));
}

TEST_CASE("MemorySource with an owner keeps the owner alive") {
  auto owner = std::make_shared<std::vector<uint8_t>>(PatternBytes(64));
  const std::vector<uint8_t> expected(owner->begin() + 8, owner->begin() + 24);
  std::weak_ptr<std::vector<uint8_t>> watch = owner;
  SourcePtr s = MemorySource(owner->data() + 8, 16, owner);
  owner.reset();
  CHECK_FALSE(watch.expired());
  CHECK(Read(*s) == expected);
  SourcePtr slice = SliceSource(s, 4, 4);
  s.reset();
  CHECK_FALSE(watch.expired());
  CHECK(Read(*slice) == std::vector<uint8_t>(expected.begin() + 4, expected.begin() + 8));
  slice.reset();
  CHECK(watch.expired());
}

TEST_CASE("OwnedSource keeps its own copy") {
  std::vector<uint8_t> data = PatternBytes(33);
  const std::vector<uint8_t> expected = data;
  SourcePtr s = OwnedSource(std::move(data));
  CHECK(s->size() == 33);
  REQUIRE(s->contiguous() != nullptr);
  CHECK(Read(*s) == expected);
}

TEST_CASE("FileSource reads a range of a file") {
  TempDir dir;
  const std::string path = dir.File("w.bin");
  const std::vector<uint8_t> data = PatternBytes(8192);
  WriteFile(path, data);

  SECTION("whole file") {
    auto r = FileSource(path);
    REQUIRE(r.ok());
    const Source& s = **r;
    CHECK(s.size() == 8192);
    CHECK(s.contiguous() == nullptr);
    CHECK(Read(s) == data);
    REQUIRE(s.file_range() != nullptr);
    CHECK(s.file_range()->fd >= 0);
    CHECK(s.file_range()->offset == 0);
    CHECK(s.file_range()->length == 8192);
  }
  SECTION("explicit range") {
    auto r = FileSource(path, 4096, 100);
    REQUIRE(r.ok());
    const Source& s = **r;
    CHECK(s.size() == 100);
    CHECK(s.Describe() == "file " + path + " [4096, +100)");
    CHECK(Read(s) == std::vector<uint8_t>(data.begin() + 4096, data.begin() + 4196));
    CHECK(s.file_range()->offset == 4096);
    CHECK(s.file_range()->length == 100);
    uint8_t b[3];
    REQUIRE(s.ReadAt(97, b, 3).ok());
    CHECK(std::memcmp(b, data.data() + 4193, 3) == 0);
    CHECK(s.ReadAt(98, b, 3).code() == Code::kOutOfRange);
  }
  SECTION("offset to the end") {
    auto r = FileSource(path, 8000);
    REQUIRE(r.ok());
    CHECK((*r)->size() == 192);
    CHECK(Read(**r) == std::vector<uint8_t>(data.begin() + 8000, data.end()));
  }
  SECTION("empty range at the end") {
    auto r = FileSource(path, 8192);
    REQUIRE(r.ok());
    CHECK((*r)->size() == 0);
  }
}

TEST_CASE("FileSource reports a missing file and a range past the end") {
  TempDir dir;
  const std::string path = dir.File("w.bin");

  auto missing = FileSource(path, 0, 10);
  REQUIRE(!missing.ok());
  CHECK(missing.status().code() == Code::kNotFound);
  CHECK(Contains(missing.status().message(), path));

  WriteFile(path, PatternBytes(1000));
  auto past = FileSource(path, 900, 200);
  REQUIRE(!past.ok());
  CHECK(past.status().code() == Code::kOutOfRange);
  const std::string& m = past.status().message();
  CHECK(Contains(m, path));
  CHECK(Contains(m, "900"));
  CHECK(Contains(m, "200"));
  CHECK(Contains(m, "1000"));

  auto offset_past = FileSource(path, 1001);
  REQUIRE(!offset_past.ok());
  CHECK(offset_past.status().code() == Code::kOutOfRange);
  CHECK(Contains(offset_past.status().message(), "1001"));

  auto overflow = FileSource(path, 10, ~uint64_t{0} - 5);
  CHECK(overflow.status().code() == Code::kOutOfRange);

  auto directory = FileSource(dir.File(""));
  CHECK(!directory.ok());
}

TEST_CASE("FileSource owns its descriptor") {
  TempDir dir;
  const std::string path = dir.File("w.bin");
  const std::vector<uint8_t> data = PatternBytes(300);
  WriteFile(path, data);
  auto r = FileSource(path, 100, 200);
  REQUIRE(r.ok());
  SourcePtr s = *r;
  const int fd = s->file_range()->fd;
  CHECK((::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);

  // Still readable after the name is gone: the source holds the file open.
  REQUIRE(::unlink(path.c_str()) == 0);
  SourcePtr slice = SliceSource(s, 50, 10);
  s.reset();
  r = Status(Code::kNotFound, "dropped");
  CHECK(Read(*slice) == std::vector<uint8_t>(data.begin() + 150, data.begin() + 160));

  slice.reset();
  CHECK(::fcntl(fd, F_GETFD) == -1);
}

TEST_CASE("GeneratorSource calls its fill function") {
  int calls = 0;
  SourcePtr s =
      GeneratorSource("layer.0.weight", 1000, [&](uint64_t offset, uint8_t* dst, size_t n) {
        ++calls;
        for (size_t i = 0; i < n; ++i) {
          dst[i] = static_cast<uint8_t>((offset + i) % 251);
        }
        return Status::OK();
      });
  CHECK(s->size() == 1000);
  CHECK(s->Describe() == "generator 'layer.0.weight' (1000 bytes)");
  CHECK(s->contiguous() == nullptr);
  CHECK(s->file_range() == nullptr);
  uint8_t b[4];
  REQUIRE(s->ReadAt(500, b, 4).ok());
  CHECK(b[0] == 500 % 251);
  CHECK(b[3] == 503 % 251);
  CHECK(calls == 1);

  SourcePtr failing = GeneratorSource(
      "bad", 10, [](uint64_t, uint8_t*, size_t) { return InvalidArgument("no data"); });
  Status st = failing->ReadAt(0, b, 4);
  CHECK(st.code() == Code::kInvalidArgument);
  CHECK(Contains(st.message(), "'bad'"));
  CHECK(Contains(st.message(), "no data"));
}

TEST_CASE("SliceSource keeps the fast paths of its base") {
  TempDir dir;
  const std::string path = dir.File("w.bin");
  const std::vector<uint8_t> data = PatternBytes(5000);
  WriteFile(path, data);

  SECTION("memory") {
    SourcePtr base = OwnedSource(data);
    SourcePtr s = SliceSource(base, 10, 20);
    CHECK(s->size() == 20);
    CHECK(s->contiguous() == base->contiguous() + 10);
    base.reset();  // the slice keeps the bytes alive
    CHECK(Read(*s) == std::vector<uint8_t>(data.begin() + 10, data.begin() + 30));
  }
  SECTION("file") {
    auto base = FileSource(path, 1000, 3000);
    REQUIRE(base.ok());
    SourcePtr s = SliceSource(*base, 96, 100);
    REQUIRE(s->file_range() != nullptr);
    CHECK(s->file_range()->fd == (*base)->file_range()->fd);
    CHECK(s->file_range()->offset == 1096);
    CHECK(s->file_range()->length == 100);
    CHECK(s->Describe() == "file " + path + " [1096, +100)");
    CHECK(Read(*s) == std::vector<uint8_t>(data.begin() + 1096, data.begin() + 1196));
    SourcePtr inner = SliceSource(s, 50, 50);
    CHECK(inner->file_range()->offset == 1146);
    CHECK(Read(*inner) == std::vector<uint8_t>(data.begin() + 1146, data.begin() + 1196));
  }
  SECTION("generator") {
    SourcePtr base = GeneratorSource("g", 5000, [&](uint64_t o, uint8_t* d, size_t n) {
      std::memcpy(d, data.data() + o, n);
      return Status::OK();
    });
    SourcePtr s = SliceSource(base, 4000, 1000);
    CHECK(s->size() == 1000);
    CHECK(s->contiguous() == nullptr);
    CHECK(s->file_range() == nullptr);
    CHECK(Contains(s->Describe(), "'g'"));
    CHECK(Read(*s) == std::vector<uint8_t>(data.begin() + 4000, data.end()));
    SourcePtr inner = SliceSource(s, 999, 1);
    CHECK(Read(*inner) == std::vector<uint8_t>{data.back()});
    uint8_t b[2];
    CHECK(s->ReadAt(999, b, 2).code() == Code::kOutOfRange);
  }
}

TEST_CASE("ReadAll enforces its limit") {
  const std::vector<uint8_t> data = PatternBytes(100);
  SourcePtr s = MemorySource(data.data(), data.size());
  CHECK(Read(*s) == data);
  auto r = ReadAll(*s, 99);
  REQUIRE(!r.ok());
  CHECK(r.status().code() == Code::kOutOfRange);
  CHECK(Contains(r.status().message(), "memory (100 bytes)"));
  CHECK(ReadAll(*s, 100).ok());
}

TEST_CASE("SameBytes compares across kinds and chunks") {
  TempDir dir;
  const std::string path = dir.File("big.bin");
  // Larger than one comparison chunk, so a difference in the last chunk counts.
  std::vector<uint8_t> data = PatternBytes((size_t{5} << 19) + 7);
  WriteFile(path, data);
  auto file = FileSource(path);
  REQUIRE(file.ok());
  SourcePtr mem = MemorySource(data.data(), data.size());
  SourcePtr gen = GeneratorSource("g", data.size(), [&](uint64_t o, uint8_t* d, size_t n) {
    std::memcpy(d, data.data() + o, n);
    return Status::OK();
  });

  auto same = SameBytes(**file, *mem);
  REQUIRE(same.ok());
  CHECK(*same);
  CHECK(*SameBytes(*gen, **file));
  CHECK(*SameBytes(*mem, *mem));

  std::vector<uint8_t> other = data;
  other.back() ^= 1;
  SourcePtr changed = MemorySource(other.data(), other.size());
  CHECK_FALSE(*SameBytes(**file, *changed));
  CHECK_FALSE(*SameBytes(*changed, *gen));

  SourcePtr shorter = MemorySource(data.data(), data.size() - 1);
  CHECK_FALSE(*SameBytes(*mem, *shorter));

  SourcePtr failing = GeneratorSource("broken", data.size(),
                                      [](uint64_t, uint8_t*, size_t) { return Corrupt("boom"); });
  auto err = SameBytes(*mem, *failing);
  REQUIRE(!err.ok());
  CHECK(Contains(err.status().message(), "boom"));
}

int OpenFds() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  REQUIRE(d != nullptr);
  while (::readdir(d) != nullptr) ++n;
  ::closedir(d);
  return n;
}

TEST_CASE("FileSources of one file share one descriptor") {
  TempDir dir;
  const std::string path = dir.File("w.bin");
  const std::vector<uint8_t> data = PatternBytes(4000);
  WriteFile(path, data);
  const std::string other = dir.File("other.bin");
  WriteFile(other, PatternBytes(10, 2));
  const std::string link = dir.File("link.bin");
  REQUIRE(::link(path.c_str(), link.c_str()) == 0);

  const int before = OpenFds();
  std::vector<SourcePtr> sources;
  for (uint64_t i = 0; i < 3000; ++i) {
    auto r = FileSource(i % 2 ? path : link, i, 1000);  // one file, two names
    REQUIRE(r.ok());
    sources.push_back(*r);
  }
  CHECK(OpenFds() == before + 1);
  for (uint64_t i = 0; i < sources.size(); ++i) {
    uint8_t b[3];
    REQUIRE(sources[i]->ReadAt(997, b, 3).ok());
    REQUIRE(std::memcmp(b, data.data() + i + 997, 3) == 0);
  }
  const int fd = sources[0]->file_range()->fd;
  CHECK(sources.back()->file_range()->fd == fd);
  CHECK(sources[1]->Describe() == "file " + path + " [1, +1000)");  // its own name

  auto second = FileSource(other);
  REQUIRE(second.ok());
  CHECK((*second)->file_range()->fd != fd);
  CHECK(OpenFds() == before + 2);
  second = Status(Code::kNotFound, "dropped");
  sources.clear();
  CHECK(OpenFds() == before);
}

TEST_CASE("FileSource opens a replaced file afresh") {
  TempDir dir;
  const std::string path = dir.File("w.bin");
  WriteFile(path, PatternBytes(100, 1));
  auto old_source = FileSource(path);
  REQUIRE(old_source.ok());
  const std::string next = dir.File("next.bin");
  WriteFile(next, PatternBytes(200, 2));
  REQUIRE(::rename(next.c_str(), path.c_str()) == 0);
  auto new_source = FileSource(path);
  REQUIRE(new_source.ok());
  CHECK((*new_source)->size() == 200);
  CHECK(Read(**new_source) == PatternBytes(200, 2));
  CHECK(Read(**old_source) == PatternBytes(100, 1));  // still the file it opened
}

TEST_CASE("FileSource rejects a FIFO without waiting for a writer") {
  TempDir dir;
  const std::string fifo = dir.File("pipe");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // In a child, so a hang ends in SIGALRM rather than a stuck test run.
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::alarm(10);
    auto r = FileSource(fifo);
    ::_exit(!r.ok() && r.status().code() == Code::kInvalidArgument &&
                    Contains(r.status().message(), fifo) &&
                    Contains(r.status().message(), "not a regular file")
                ? 0
                : 1);
  }
  int wstatus = 0;
  REQUIRE(::waitpid(pid, &wstatus, 0) == pid);
  REQUIRE(WIFEXITED(wstatus));
  CHECK(WEXITSTATUS(wstatus) == 0);

  auto directory = FileSource(dir.File("."));
  REQUIRE(!directory.ok());
  CHECK(directory.status().code() == Code::kInvalidArgument);
  CHECK(Contains(directory.status().message(), "directory"));
}

TEST_CASE("SliceSource past the end of its base fails every read") {
  TempDir dir;
  const std::string path = dir.File("w.bin");
  const std::vector<uint8_t> data = PatternBytes(100);
  WriteFile(path, data);
  auto file = FileSource(path);
  REQUIRE(file.ok());
  const SourcePtr base =
      GENERATE_REF(values<SourcePtr>({MemorySource(data.data(), data.size()), *file,
                                      GeneratorSource("g", 100, [](uint64_t, uint8_t* d, size_t n) {
                                        std::memset(d, 1, n);
                                        return Status::OK();
                                      })}));
  CAPTURE(base->Describe());
  const uint64_t offset = GENERATE(uint64_t{90}, uint64_t{101}, ~uint64_t{0} - 5);
  SourcePtr s = SliceSource(base, offset, 20);
  CHECK(s->size() == 20);  // the promised size, so planning can go on
  CHECK(s->contiguous() == nullptr);
  CHECK(s->file_range() == nullptr);
  uint8_t b[4];
  Status st = s->ReadAt(0, b, 4);
  CHECK(st.code() == Code::kOutOfRange);
  CHECK(Contains(st.message(), base->Describe() + " slice [" + std::to_string(offset) + ", +20)"));
  CHECK(Contains(st.message(), "100 bytes"));
  CHECK(!ReadAll(*s).ok());
}

TEST_CASE("SourceIndex stores a source given again once, and nothing else") {
  const std::vector<uint8_t> data = PatternBytes(16);
  const SourcePtr a = MemorySource(data.data(), data.size());
  const SourcePtr b = MemorySource(data.data(), data.size());  // same bytes, another object
  std::vector<SourcePtr> list;
  SourceIndex index(&list);
  CHECK(index.Add(a) == 0);
  CHECK(index.Add(b) == 1);
  CHECK(index.Add(a) == 0);
  CHECK(index.Add(b) == 1);
  REQUIRE(list.size() == 2);
  CHECK(list[0] == a);
  CHECK(list[1] == b);
}

}  // namespace
}  // namespace etpack
