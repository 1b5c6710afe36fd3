// The fallbacks macOS takes, run on Linux: DarwinLikeCalls answers every
// seam call the way io/posix_calls_darwin.cc does (no unnamed temporary,
// no block reservation, no populate, no kernel copy, no clone, no range
// write-back, no atomic swap), so the logic macOS runs is the logic
// tested here; only the syscalls themselves differ.

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <set>
#include <string>
#include <vector>
#include "catch.h"

#include "etpack/output.h"
#include "etpack/source.h"
#include "io/posix_calls.h"
#include "io/posix_output.h"
#include "output_test_util.h"
#include "test_files.h"

namespace etpack {
namespace {

using testing::Fill;
using testing::Job;
using testing::MixedJob;
using testing::Open;
using testing::Page;
using testing::PatternBytes;
using testing::PublishOne;
using testing::ReadFile;
using testing::Run;
using testing::TempDir;
using testing::WriteFile;

int Fail(int err) {
  errno = err;
  return -1;
}

class DarwinLikeCalls : public PosixCalls {
 public:
  int OpenTmpfile(const char*, int, mode_t) override { return Fail(EOPNOTSUPP); }
  int Preallocate(int, off_t) override { return Fail(EOPNOTSUPP); }
  int PopulateWrite(void*, size_t) override { return ++populates, Fail(EINVAL); }
  ssize_t CopyFileRange(int, off_t*, int, off_t*, size_t) override { return Fail(EOPNOTSUPP); }
  int CloneFile(int, int) override { return Fail(EOPNOTSUPP); }
  int CloneRange(int, uint64_t, int, uint64_t, uint64_t) override { return Fail(EOPNOTSUPP); }
  int SyncFileRange(int, off_t, off_t, Writeback) override { return Fail(ENOSYS); }
  int RenameSpecial(const char*, const char*, RenameKind) override { return Fail(EOPNOTSUPP); }
  void* Mmap(size_t len, int fd, off_t offset) override {
    ++maps;
    return PosixCalls::Mmap(len, fd, offset);
  }
  ssize_t Pwrite(int fd, const void* buf, size_t n, off_t offset) override {
    if (pwrite_errno != 0) return Fail(pwrite_errno);
    return PosixCalls::Pwrite(fd, buf, n, offset);
  }

  time_t Now() override { return PosixCalls::Now() + now_offset; }

  time_t now_offset = 0;
  int maps = 0;
  int populates = 0;
  int pwrite_errno = 0;
};

TEST_CASE("without Linux's calls every write path still gives the exact bytes") {
  TempDir dir;
  const std::string data = dir.File("data.bin");
  const std::vector<uint8_t> bytes = PatternBytes(3 * Page() + 11, 3);
  WriteFile(data, bytes);
  const Job job = MixedJob(data, bytes);
  OutputOptions opts;
  opts.mmap = GENERATE(true, false);
  opts.sync = GENERATE(true, false);
  opts.window_bytes = GENERATE(Page(), uint64_t{16} << 20);
  opts.writeback_windows = GENERATE(0, 2);
  CAPTURE(opts.mmap, opts.sync, opts.window_bytes, opts.writeback_windows);
  DarwinLikeCalls calls;
  const std::string path = dir.File("out.pte");
  auto out = Open(*NewPosixOutputFs(opts, &calls), path);
  REQUIRE(Run(job, *out).ok());
  // The named temporary is the only other name while it is written.
  CHECK(dir.List().size() == 2);
  REQUIRE(PublishOne(std::move(out)).ok());
  CHECK(dir.List() == std::set<std::string>{"data.bin", "out.pte"});
  CHECK(ReadFile(path) == job.expected);
  // No reserved blocks: never a store through a mapping (SIGBUS on a full disk).
  CHECK(calls.maps == 0);
}

TEST_CASE("without a whole-file clone the output is reserved and copied") {
  TempDir dir;
  const std::string data = dir.File("data.bin");
  const std::vector<uint8_t> bytes = PatternBytes(2 * Page() + 5, 4);
  WriteFile(data, bytes);
  auto source = FileSource(data);
  REQUIRE(source.ok());
  DarwinLikeCalls calls;
  auto out = Open(*NewPosixOutputFs({}, &calls), dir.File("out.pte"));
  const Result<bool> cloned = out->ReserveClone(**source);
  REQUIRE(cloned.ok());
  CHECK_FALSE(*cloned);
  REQUIRE(out->Reserve(bytes.size()).ok());
  REQUIRE(out->Write(0, **source).ok());
  CHECK(out->bytes_shared() == 0);
  REQUIRE(PublishOne(std::move(out)).ok());
  CHECK(ReadFile(dir.File("out.pte")) == bytes);
}

TEST_CASE("a named temporary is removed on a failed write and on a dropped output") {
  const std::string old = "old";
  const bool existing = GENERATE(true, false);
  CAPTURE(existing);
  TempDir dir;
  const std::string path = dir.File("out.pte");
  if (existing) WriteFile(path, old);
  DarwinLikeCalls calls;
  {
    auto out = Open(*NewPosixOutputFs({}, &calls), path);
    calls.pwrite_errno = ENOSPC;
    const Status written = Fill(*out, PatternBytes(3 * Page()));
    REQUIRE_FALSE(written.ok());
    CHECK(written.ToString().find(path) != std::string::npos);
  }
  const std::set<std::string> want =
      existing ? std::set<std::string>{"out.pte"} : std::set<std::string>{};
  CHECK(dir.List() == want);
  if (existing) CHECK(ReadFile(path) == std::vector<uint8_t>(old.begin(), old.end()));
}

// The named temporary of a writer killed mid-write stays; the next output
// to that destination removes it once it is a minute old and no live
// writer holds it (its flock went with the killed process).
TEST_CASE("a killed writer's named temporary is removed by a later run, a live one's is not") {
  TempDir dir;
  const std::string path = dir.File("out.pte");
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {  // no Catch2 here
    DarwinLikeCalls child;
    auto out = NewPosixOutputFs({}, &child)->Create(path);
    if (!out.ok() || !(*out)->Reserve(Page()).ok()) ::_exit(1);
    ::_exit(0);  // no destructor runs, as under SIGKILL
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  const std::set<std::string> orphan = dir.List();
  REQUIRE(orphan.size() == 1);

  DarwinLikeCalls calls;
  auto live = Open(*NewPosixOutputFs({}, &calls), path);  // young orphan: kept
  std::set<std::string> both = dir.List();
  CHECK(both.size() == 2);
  CHECK(both.count(*orphan.begin()) == 1);

  calls.now_offset = 120;  // both a minute old; only the live one is held
  auto later = Open(*NewPosixOutputFs({}, &calls), path);
  std::set<std::string> now = dir.List();
  CHECK(now.size() == 2);
  CHECK(now.count(*orphan.begin()) == 0);
  REQUIRE(Fill(*live, {'l'}).ok());
  REQUIRE(PublishOne(std::move(live)).ok());
  CHECK(ReadFile(path) == std::vector<uint8_t>{'l'});
}

}  // namespace
}  // namespace etpack
