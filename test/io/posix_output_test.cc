// The POSIX output: exact bytes on every write path, the window mechanics
// (write-behind, copy_file_range, populate, pwrite fallback) and how each
// kernel failure is reported. The kernel misbehaves through PosixCalls, the
// seam the output makes its system calls through.

#include "catch.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "etpack/output.h"
#include "etpack/source.h"
#include "etpack/writer.h"
#include "io/posix_calls.h"
#include "io/posix_output.h"
#include "output_test_util.h"
#include "test_files.h"

namespace etpack {
namespace {

using testing::Contains;
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

namespace fs = std::filesystem;

struct SyncCall {
  uint64_t offset;
  uint64_t length;
  etpack::Writeback how;
};

// Records what the output asks of the kernel and, where a test says so,
// fails the way a kernel or file system would.
class RecordingCalls : public PosixCalls {
 public:
  std::vector<SyncCall> syncs;  // sync_file_range calls
  int sync_errno = 0;           // fail every sync_file_range with this
  int copy_calls = 0;           // copy_file_range calls
  int copy_errno = 0;           // fail every copy_file_range with this...
  bool copy_zero = false;       // ...or answer 0
  int fsync_errno = 0;          // fail the directory fsync
  int populate_calls = 0;       // madvise(MADV_POPULATE_WRITE) calls
  int populate_errno = 0;       // fail the next populate_failures of them
  int populate_failures = 0;
  int fallocate_errno = 0;
  int pwrite_calls = 0;
  int tmpfile_errno = 0;  // fail open(O_TMPFILE) with this
  time_t now_offset = 0;  // seconds added to the clock

  time_t Now() override { return PosixCalls::Now() + now_offset; }

  int OpenTmpfile(const char* dir, int flags, mode_t mode) override {
    if (tmpfile_errno != 0) return Fail(tmpfile_errno);
    return PosixCalls::OpenTmpfile(dir, flags, mode);
  }
  int Preallocate(int fd, off_t len) override {
    if (fallocate_errno != 0) return Fail(fallocate_errno);
    return PosixCalls::Preallocate(fd, len);
  }
  int PopulateWrite(void* addr, size_t len) override {
    ++populate_calls;
    if (populate_failures > 0) {
      --populate_failures;
      return Fail(populate_errno);
    }
    return PosixCalls::PopulateWrite(addr, len);
  }
  ssize_t Pwrite(int fd, const void* buf, size_t n, off_t offset) override {
    ++pwrite_calls;
    return PosixCalls::Pwrite(fd, buf, n, offset);
  }
  ssize_t CopyFileRange(int in_fd, off_t* in_off, int out_fd, off_t* out_off, size_t len) override {
    ++copy_calls;
    if (copy_errno != 0) return Fail(copy_errno);
    if (copy_zero) return 0;
    return PosixCalls::CopyFileRange(in_fd, in_off, out_fd, out_off, len);
  }
  int SyncFileRange(int fd, off_t offset, off_t len, Writeback how) override {
    syncs.push_back({static_cast<uint64_t>(offset), static_cast<uint64_t>(len), how});
    if (sync_errno != 0) return Fail(sync_errno);
    return PosixCalls::SyncFileRange(fd, offset, len, how);
  }
  int FsyncDirectory(int dir_fd) override {
    if (fsync_errno != 0) return Fail(fsync_errno);
    return PosixCalls::FsyncDirectory(dir_fd);
  }

 private:
  static int Fail(int err) {
    errno = err;
    return -1;
  }
};

// A file system over `calls` with `options`.
std::unique_ptr<OutputFs> Fs(RecordingCalls* calls, const OutputOptions& options = {}) {
  return NewPosixOutputFs(options, calls);
}

TEST_CASE("posix output writes the exact bytes, zero padding included") {
  TempDir dir;
  const std::string data = dir.File("data.bin");
  const std::vector<uint8_t> bytes = PatternBytes(3 * Page() + 11, 3);
  WriteFile(data, bytes);
  const Job job = MixedJob(data, bytes);

  OutputOptions opts;
  opts.sync = GENERATE(true, false);
  opts.mmap = GENERATE(true, false);
  opts.copy_file_range = GENERATE(true, false);
  opts.window_bytes = GENERATE(uint64_t{1}, Page(), 3 * Page(), uint64_t{16} << 20);
  opts.writeback_windows = GENERATE(0, 2);
  CAPTURE(opts.sync, opts.mmap, opts.copy_file_range, opts.window_bytes, opts.writeback_windows);

  const std::string path = dir.File("out.pte");
  auto out = Open(*NewPosixOutputFs(opts), path);
  REQUIRE(Run(job, *out).ok());
  uint64_t payload = 0;
  for (const auto& w : job.writes) payload += w.second->size();
  CHECK(out->bytes_written() == payload);

  // Before publishing the output is an unnamed file: nothing new is visible.
  CHECK(dir.List() == std::set<std::string>{"data.bin"});

  REQUIRE(PublishOne(std::move(out)).ok());
  CHECK(dir.List() == std::set<std::string>{"data.bin", "out.pte"});
  CHECK(ReadFile(path) == job.expected);
}

TEST_CASE("posix output names its temporary from the start where O_TMPFILE fails") {
  const int err = GENERATE(EOPNOTSUPP, EISDIR, EINVAL);
  const bool existing = GENERATE(true, false);
  CAPTURE(err, existing);
  TempDir dir;
  const std::string path = dir.File("out.pte");
  if (existing) WriteFile(path, std::string("old"));
  RecordingCalls calls;
  calls.tmpfile_errno = err;
  auto out = Open(*Fs(&calls), path);
  REQUIRE(Fill(*out, {'a', 'b', 'c'}).ok());
  std::set<std::string> during = dir.List();
  during.erase("out.pte");
  REQUIRE(during.size() == 1);
  const std::string temp = *during.begin();
  CHECK(temp.rfind(".out.pte.etpack-", 0) == 0);
  CHECK(temp.size() == std::string(".out.pte.etpack-XXXXXX").size());
  REQUIRE(PublishOne(std::move(out)).ok());
  CHECK(dir.List() == std::set<std::string>{"out.pte"});
  CHECK(ReadFile(path) == std::vector<uint8_t>{'a', 'b', 'c'});
}

TEST_CASE("a named temporary is removed when the output is dropped") {
  TempDir dir;
  RecordingCalls calls;
  calls.tmpfile_errno = EOPNOTSUPP;
  {
    auto out = Open(*Fs(&calls), dir.File("out.pte"));
    REQUIRE(Fill(*out, PatternBytes(3 * Page())).ok());
    CHECK(dir.List().size() == 1);
  }
  CHECK(dir.List().empty());
}

TEST_CASE("a writer killed mid-write leaves no file behind") {
  TempDir dir;
  const std::string path = dir.File("out.pte");
  const std::vector<uint8_t> old = {'o', 'l', 'd'};
  WriteFile(path, old);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {  // no Catch2 here
    auto out = NewPosixOutputFs()->Create(path);
    const std::vector<uint8_t> half = PatternBytes(Page() * 8);
    if (out.ok() && (*out)->Reserve(half.size() * 2).ok() &&
        (*out)->Write(0, half.data(), half.size()).ok()) {
      ::raise(SIGKILL);
    }
    ::_exit(1);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  CHECK(dir.List() == std::set<std::string>{"out.pte"});
  CHECK(ReadFile(path) == old);
}

TEST_CASE("posix output gives a new file the usual mode and a replaced one its old mode") {
  TempDir dir;
  const bool existing = GENERATE(true, false);
  const std::string path = dir.File("out.pte");
  if (existing) {
    WriteFile(path, std::string("old"));
    REQUIRE(::chmod(path.c_str(), 0604) == 0);
  }
  const mode_t mask = ::umask(027);
  auto out = Open(*NewPosixOutputFs(), path);
  ::umask(mask);
  REQUIRE(Fill(*out, {'a', 'b', 'c'}).ok());
  REQUIRE(PublishOne(std::move(out)).ok());
  struct stat st;
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == (existing ? 0604 : 0640));
  CHECK(ReadFile(path) == std::vector<uint8_t>{'a', 'b', 'c'});
  CHECK(dir.List() == std::set<std::string>{"out.pte"});
}

TEST_CASE("hidden names left by a publish killed before its rename are removed later") {
  TempDir dir;
  const std::string path = dir.File("out.pte");
  WriteFile(path, std::string("old"));
  const std::set<std::string> others = {".out.pte.etpack-linked-toolong",  // not 6 characters
                                        ".out.pte.etpack-AbC123",          // a write's temporary
                                        ".other.etpack-linked-AbC123"};    // another output's
  for (const std::string& n : others) WriteFile(dir.File(n), std::string("x"));
  WriteFile(dir.File(".out.pte.etpack-linked-AbC123"), std::string("x"));
  const bool long_ago = GENERATE(false, true);
  CAPTURE(long_ago);
  RecordingCalls calls;
  calls.now_offset = long_ago ? 3600 : 0;  // "now" an hour on: every file is old
  auto out = Open(*Fs(&calls), path);
  REQUIRE(Fill(*out, {'a'}).ok());
  REQUIRE(PublishOne(std::move(out)).ok());
  std::set<std::string> want = others;
  want.insert("out.pte");
  if (!long_ago) want.insert(".out.pte.etpack-linked-AbC123");  // could be a live publish's
  // An old named temporary no writer holds (flock) is a killed write's.
  if (long_ago) want.erase(".out.pte.etpack-AbC123");
  CHECK(dir.List() == want);
}

TEST_CASE("posix output of size zero makes an empty file") {
  TempDir dir;
  const std::string path = dir.File("empty.pte");
  auto out = Open(*NewPosixOutputFs(), path);
  REQUIRE(out->Reserve(0).ok());
  REQUIRE(PublishOne(std::move(out)).ok());
  CHECK(fs::file_size(path) == 0);
  CHECK(dir.List() == std::set<std::string>{"empty.pte"});
}

TEST_CASE("posix output dropped unpublished leaves the destination as it was") {
  TempDir dir;
  const std::string path = dir.File("out.pte");
  const std::vector<uint8_t> old = {'o', 'l', 'd'};
  WriteFile(path, old);
  OutputOptions opts;
  opts.window_bytes = Page();
  {
    auto out = Open(*NewPosixOutputFs(opts), path);
    REQUIRE(Fill(*out, PatternBytes(5 * Page())).ok());
    CHECK(dir.List() == std::set<std::string>{"out.pte"});  // the new file has no name yet
  }
  CHECK(dir.List() == std::set<std::string>{"out.pte"});
  CHECK(ReadFile(path) == old);
}

TEST_CASE("posix output rejects out-of-order calls, stickily") {
  TempDir dir;
  const std::string path = dir.File("out.pte");
  auto fs = NewPosixOutputFs();
  auto early = Open(*fs, path);
  CHECK(early->Write(0, "a", 1).code() == Code::kInvalidArgument);  // before Reserve
  CHECK(PublishOne(std::move(early)).code() == Code::kInvalidArgument);

  auto out = Open(*fs, path);
  REQUIRE(out->Reserve(100).ok());
  REQUIRE(out->Write(10, "abcd", 4).ok());
  Status back = out->Write(12, "x", 1);  // overlaps the previous write
  CHECK(back.code() == Code::kInvalidArgument);
  CHECK(Contains(back.message(), path));
  CHECK(Contains(back.message(), "14"));
  CHECK(out->Write(50, "y", 1).message() == back.message());  // sticky
  CHECK(out->Reserve(5).message() == back.message());
  CHECK(PublishOne(std::move(out)).message() == back.message());
  CHECK(dir.List().empty());
}

TEST_CASE("posix output reports a failing source with the output's name") {
  TempDir dir;
  const std::string path = dir.File("out.pte");
  OutputOptions opts;
  opts.copy_file_range = false;
  auto out = Open(*NewPosixOutputFs(opts), path);
  REQUIRE(out->Reserve(10 * Page()).ok());
  SourcePtr bad = GeneratorSource("w", 8 * Page(), [](uint64_t o, uint8_t* d, size_t n) {
    if (o + n > 4 * Page()) return Corrupt("bad data");
    std::memset(d, 1, n);
    return Status::OK();
  });
  Status s = out->Write(Page(), *bad);
  REQUIRE(!s.ok());
  CHECK(Contains(s.message(), path));
  CHECK(Contains(s.message(), "bad data"));
  CHECK(PublishOne(std::move(out)).message() == s.message());
  CHECK(dir.List().empty());
}

TEST_CASE("posix output needs an existing directory and a file name") {
  TempDir dir;
  auto fs = NewPosixOutputFs();
  auto missing = fs->Create(dir.File("no/such/out.pte"));
  REQUIRE(!missing.ok());
  CHECK(Contains(missing.status().message(), dir.File("no/such")));
  CHECK(fs->Create(dir.path() + "/").status().code() == Code::kInvalidArgument);
  CHECK(fs->Create(dir.path()).status().code() == Code::kInvalidArgument);
  CHECK(fs->Create("").status().code() == Code::kInvalidArgument);
}

// The file size limit is below the output size. The child process takes the
// limit so the test runner keeps its own. The output must notice before it
// grows the file: past the limit the kernel sends SIGXFSZ, which kills a
// process that does not ignore it, leaving the temporary file behind.
TEST_CASE("file size limit: reserving fails cleanly and the old file survives") {
  const bool ignore_sigxfsz = GENERATE(true, false);
  CAPTURE(ignore_sigxfsz);
  TempDir dir;
  const std::string path = dir.File("model.pte");
  const std::vector<uint8_t> old = PatternBytes(1000, 11);
  WriteFile(path, old);

  ArtifactPlan plan;
  plan.head = PatternBytes(256, 12);
  plan.file_size = uint64_t{4} << 20;
  plan.placements.push_back(
      {4096, 4096,
       GeneratorSource("big", plan.file_size - 8192, [](uint64_t, uint8_t* d, size_t n) {
         std::memset(d, 0x5a, n);
         return Status::OK();
       })});

  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(pipe_fds[0]);
    ::signal(SIGXFSZ, ignore_sigxfsz ? SIG_IGN : SIG_DFL);
    struct rlimit limit = {uint64_t{1} << 20, uint64_t{1} << 20};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(3);
    Status s = WriteArtifactFile(path, plan);
    const std::string msg = s.message();
    if (::write(pipe_fds[1], msg.data(), msg.size()) < 0) ::_exit(4);
    ::_exit(s.ok() ? 0 : s.code() == Code::kOutOfRange ? 1 : 2);
  }
  ::close(pipe_fds[1]);
  std::string message;
  char buf[512];
  ssize_t got;
  while ((got = ::read(pipe_fds[0], buf, sizeof buf)) > 0) message.append(buf, got);
  ::close(pipe_fds[0]);
  int wstatus = 0;
  REQUIRE(::waitpid(pid, &wstatus, 0) == pid);
  CAPTURE(message);
  REQUIRE(WIFEXITED(wstatus));       // not killed by SIGXFSZ
  CHECK(WEXITSTATUS(wstatus) == 1);  // failed with kOutOfRange
  CHECK(Contains(message, path));
  CHECK(Contains(message, "cannot reserve " + std::to_string(plan.file_size) + " bytes"));
  CHECK(Contains(message, "file size limit (ulimit -f) of 1048576 bytes"));
  CHECK(ReadFile(path) == old);
  CHECK(dir.List() == std::set<std::string>{"model.pte"});
}

TEST_CASE("posix output handles a file name near NAME_MAX") {
  // Unnamed, the temporary is linked straight to its (equally long) name.
  const bool unnamed = GENERATE(true, false);
  const bool existing = GENERATE(true, false);
  CAPTURE(unnamed, existing);
  TempDir dir;
  const std::string name = std::string(NAME_MAX - 4, 'n') + ".pte";  // exactly NAME_MAX
  const std::string path = dir.File(name);
  if (existing) WriteFile(path, std::string("old"));
  RecordingCalls calls;
  if (!unnamed) calls.tmpfile_errno = EOPNOTSUPP;
  auto out = Open(*Fs(&calls), path);
  REQUIRE(Fill(*out, {'a', 'b', 'c'}).ok());
  std::set<std::string> during = dir.List();
  during.erase(name);
  if (unnamed) {
    CHECK(during.empty());
  } else {
    REQUIRE(during.size() == 1);
    const std::string temp = *during.begin();
    CHECK(temp.size() <= NAME_MAX);
    CHECK(temp.rfind("." + name.substr(0, 200), 0) == 0);
  }
  REQUIRE(PublishOne(std::move(out)).ok());
  CHECK(dir.List() == std::set<std::string>{name});
  CHECK(ReadFile(path) == std::vector<uint8_t>{'a', 'b', 'c'});

  auto too_long = Fs(&calls)->Create(dir.File(std::string(NAME_MAX + 1, 'x')));
  REQUIRE(!too_long.ok());
  CHECK(too_long.status().code() == Code::kInvalidArgument);
  CHECK(Contains(too_long.status().message(), std::to_string(NAME_MAX + 1)));
}

// Checks the write-behind pattern recorded for an output of `size` bytes cut
// into cells of `window` bytes, with at most `inflight` cells pending, after
// writes that ended at `frontier`: write-back is started for whole cells, in
// order, each cell once, for every cell below the frontier; each cell is
// waited for once, in order, and only after the cell `inflight` places later
// was started.
void CheckWriteBehind(const std::vector<SyncCall>& calls, uint64_t size, uint64_t window,
                      uint64_t inflight, uint64_t frontier) {
  const uint64_t cells = frontier >= size ? (size + window - 1) / window : frontier / window;
  uint64_t started = 0;  // cells [0, started) have write-back started
  uint64_t waited = 0;   // cells [0, waited) were waited for
  for (const SyncCall& c : calls) {
    CAPTURE(c.offset, c.length, c.how == etpack::Writeback::kWait, started, waited);
    REQUIRE(c.offset % Page() == 0);
    REQUIRE(c.offset % window == 0);
    if (c.how == etpack::Writeback::kStart) {
      REQUIRE(c.offset == started * window);  // contiguous, never overlapping
      const uint64_t end = c.offset + c.length;
      REQUIRE((end % window == 0 || end == size));
      REQUIRE(end > c.offset);
      started = (end + window - 1) / window;
    } else {
      REQUIRE(c.how == etpack::Writeback::kWait);
      REQUIRE(c.offset == waited * window);  // one cell, in order
      REQUIRE(c.length == std::min(window, size - c.offset));
      ++waited;
      REQUIRE(started >= waited + inflight);  // only when `inflight` more are going
    }
  }
  CHECK(started == cells);
  CHECK(waited == cells - std::min(cells, inflight));
}

TEST_CASE("posix output runs write-behind once per window rather than once per write") {
  TempDir dir;
  const uint64_t page = Page();
  const std::vector<uint8_t> data = PatternBytes(64 * page, 4);
  WriteFile(dir.File("data.bin"), data);
  auto file = FileSource(dir.File("data.bin"));
  REQUIRE(file.ok());

  OutputOptions opts;
  opts.window_bytes = 4 * page;
  opts.writeback_windows = GENERATE(0, 1, 3);
  opts.copy_file_range = GENERATE(true, false);
  CAPTURE(opts.writeback_windows, opts.copy_file_range);

  // Many small items, memory and file alternating, then one file item that
  // spans several windows (a kernel copy when enabled), then more small ones.
  Job job;
  job.size = 40 * page + 300;
  job.expected.assign(job.size, 0);
  uint64_t at = 0;
  int item = 0;
  auto put = [&](uint64_t offset, SourcePtr s) {
    const std::vector<uint8_t> content = *ReadAll(*s);
    std::memcpy(job.expected.data() + offset, content.data(), content.size());
    job.writes.emplace_back(offset, std::move(s));
  };
  static const std::vector<uint8_t> mem = PatternBytes(1000, 5);
  for (; at + 700 <= 12 * page; at += 768, ++item) {
    put(at, item % 2 ? MemorySource(mem.data(), 700)
                     : SliceSource(*file, static_cast<uint64_t>(item) * 100, 700));
  }
  put(13 * page + 5, SliceSource(*file, 7, 15 * page));
  for (at = 29 * page; at + 300 <= job.size; at += 320, ++item) {
    put(at, item % 2 ? MemorySource(mem.data(), 300)
                     : SliceSource(*file, static_cast<uint64_t>(item) * 64, 300));
  }
  REQUIRE(job.writes.size() > 60);

  const std::string path = dir.File("out.pte");
  RecordingCalls calls;
  auto out = Open(*Fs(&calls, opts), path);
  REQUIRE(Run(job, *out).ok());
  REQUIRE(PublishOne(std::move(out)).ok());
  CHECK(ReadFile(path) == job.expected);
  CheckWriteBehind(calls.syncs, job.size, opts.window_bytes,
                   static_cast<uint64_t>(opts.writeback_windows), job.Frontier());
  // Few calls: at most one start per window plus one wait per window.
  CHECK(calls.syncs.size() <= 2 * ((job.size + opts.window_bytes - 1) / opts.window_bytes));
}

TEST_CASE("posix output uses copy_file_range only for large file items") {
  TempDir dir;
  const std::vector<uint8_t> data = PatternBytes(size_t{3} << 20, 6);
  WriteFile(dir.File("data.bin"), data);
  auto file = FileSource(dir.File("data.bin"));
  REQUIRE(file.ok());
  Job job;
  job.size = uint64_t{8} << 20;
  job.expected.assign(job.size, 0);
  auto put = [&](uint64_t offset, uint64_t from, uint64_t n) {
    std::memcpy(job.expected.data() + offset, data.data() + from, n);
    job.writes.emplace_back(offset, SliceSource(*file, from, n));
  };
  for (uint64_t i = 0; i < 100; ++i) put(i * 8192, i * 4096, 4096);  // small: pread
  put(uint64_t{1} << 20, 12345, (uint64_t{2} << 20) + 7);            // large: kernel

  const std::string path = dir.File("out.pte");
  RecordingCalls calls;
  auto out = Open(*Fs(&calls), path);  // default 16 MiB window
  REQUIRE(Run(job, *out).ok());
  const int copies = calls.copy_calls;
  REQUIRE(PublishOne(std::move(out)).ok());
  CHECK(copies >= 1);
  CHECK(copies <= 3);  // only for the large item
  CHECK(ReadFile(path) == job.expected);
}

TEST_CASE("posix output stops trying copy_file_range once it is unsupported") {
  TempDir dir;
  const uint64_t page = Page();
  const std::vector<uint8_t> data = PatternBytes(16 * page, 7);
  WriteFile(dir.File("data.bin"), data);
  auto file = FileSource(dir.File("data.bin"));
  REQUIRE(file.ok());
  Job job;
  job.size = 40 * page;
  job.expected.assign(job.size, 0);
  for (uint64_t i = 0; i < 5; ++i) {
    const uint64_t offset = i * 7 * page + 3, from = i * page + 1, n = 3 * page + 5;
    std::memcpy(job.expected.data() + offset, data.data() + from, n);
    job.writes.emplace_back(offset, SliceSource(*file, from, n));
  }

  const int err = GENERATE(EXDEV, ENOSYS, EOPNOTSUPP, EINVAL, 0);  // 0: answers 0
  CAPTURE(err);
  OutputOptions opts;
  opts.window_bytes = 2 * page;
  opts.writeback_windows = 1;
  const std::string path = dir.File("out.pte");
  RecordingCalls calls;
  calls.copy_errno = err;
  calls.copy_zero = err == 0;
  auto out = Open(*Fs(&calls, opts), path);
  REQUIRE(Run(job, *out).ok());
  REQUIRE(PublishOne(std::move(out)).ok());
  CHECK(calls.copy_calls == 1);
  CHECK(ReadFile(path) == job.expected);
  CheckWriteBehind(calls.syncs, job.size, opts.window_bytes, 1, job.Frontier());
}

TEST_CASE("posix output reports a file source truncated after opening") {
  TempDir dir;
  const uint64_t page = Page();
  const std::string data = dir.File("data.bin");
  WriteFile(data, PatternBytes(8 * page, 8));
  auto file = FileSource(data);
  REQUIRE(file.ok());
  REQUIRE(::truncate(data.c_str(), static_cast<off_t>(2 * page)) == 0);

  OutputOptions opts;
  opts.window_bytes = page;
  opts.copy_file_range = GENERATE(true, false);
  auto out = Open(*NewPosixOutputFs(opts), dir.File("out.pte"));
  REQUIRE(out->Reserve(10 * page).ok());
  Status s = out->Write(page, **file);
  CAPTURE(s.message());
  CHECK(s.code() == Code::kIoError);
  CHECK(Contains(s.message(), "file ended at offset " + std::to_string(2 * page)));
  CHECK(Contains(s.message(), data));
}

TEST_CASE("posix output fails on a copy_file_range error that is not 'unsupported'") {
  TempDir dir;
  const uint64_t page = Page();
  WriteFile(dir.File("data.bin"), PatternBytes(4 * page, 9));
  auto file = FileSource(dir.File("data.bin"));
  REQUIRE(file.ok());
  OutputOptions opts;
  opts.window_bytes = page;
  RecordingCalls calls;
  auto out = Open(*Fs(&calls, opts), dir.File("out.pte"));
  REQUIRE(out->Reserve(8 * page).ok());
  calls.copy_errno = EIO;
  Status s = out->Write(page, **file);
  CHECK(s.code() == Code::kIoError);
  CHECK(Contains(s.message(), "copy_file_range"));
  CHECK(Contains(s.message(), std::strerror(EIO)));
  CHECK(PublishOne(std::move(out)).message() == s.message());
  CHECK(dir.List() == std::set<std::string>{"data.bin"});
}

TEST_CASE("posix output treats every write-back error as a failure") {
  const int err = GENERATE(EIO, ENOSPC, ENOMEM, EBADF, EROFS);
  CAPTURE(err);
  TempDir dir;
  const std::string path = dir.File("out.pte");
  const std::vector<uint8_t> old = PatternBytes(77, 5);
  WriteFile(path, old);
  OutputOptions opts;
  opts.window_bytes = Page();
  RecordingCalls calls;
  auto out = Open(*Fs(&calls, opts), path);
  calls.sync_errno = err;
  Status s = Fill(*out, PatternBytes(6 * Page(), 10));
  CHECK(s.code() == Code::kIoError);
  CHECK(Contains(s.message(), "write-back"));
  CHECK(Contains(s.message(), std::strerror(err)));
  CHECK(PublishOne(std::move(out)).message() == s.message());
  CHECK(ReadFile(path) == old);
  CHECK(dir.List() == std::set<std::string>{"out.pte"});
}

TEST_CASE("posix output ignores write-back errors that mean 'cannot do that here'") {
  const int err = GENERATE(EINVAL, ESPIPE, ENOSYS);
  CAPTURE(err);
  TempDir dir;
  const std::string path = dir.File("out.pte");
  const std::vector<uint8_t> big = PatternBytes(6 * Page(), 10);
  OutputOptions opts;
  opts.window_bytes = Page();
  RecordingCalls calls;
  calls.sync_errno = err;
  auto out = Open(*Fs(&calls, opts), path);
  REQUIRE(Fill(*out, big).ok());
  REQUIRE(PublishOne(std::move(out)).ok());
  CHECK(ReadFile(path) == big);
}

TEST_CASE("posix output: a failed directory sync says the file is in place") {
  TempDir dir;
  const std::string path = dir.File("out.pte");
  WriteFile(path, std::string("old"));
  RecordingCalls calls;
  calls.fsync_errno = EIO;
  auto out = Open(*Fs(&calls), path);
  REQUIRE(Fill(*out, {'n', 'e', 'w'}).ok());
  Status s = PublishOne(std::move(out));
  CAPTURE(s.message());
  CHECK(s.code() == Code::kIoError);
  CHECK(Contains(s.message(), path + " was written and renamed into place"));
  CHECK(Contains(s.message(), "directory " + dir.path() + " could not be synced"));
  CHECK(Contains(s.message(), std::strerror(EIO)));
  CHECK(ReadFile(path) == std::vector<uint8_t>{'n', 'e', 'w'});
  CHECK(dir.List() == std::set<std::string>{"out.pte"});
}

TEST_CASE("posix output falls back to pwrite where the mapping cannot be populated") {
  TempDir dir;
  const std::string data = dir.File("data.bin");
  const std::vector<uint8_t> bytes = PatternBytes(3 * Page() + 11, 3);
  WriteFile(data, bytes);
  const Job job = MixedJob(data, bytes);
  OutputOptions opts;
  opts.window_bytes = 2 * Page();
  opts.copy_file_range = false;
  const std::string path = dir.File("out.pte");
  RecordingCalls calls;
  calls.populate_errno = EINVAL;
  calls.populate_failures = 1000;
  auto out = Open(*Fs(&calls, opts), path);
  REQUIRE(Run(job, *out).ok());
  REQUIRE(PublishOne(std::move(out)).ok());
  CHECK(ReadFile(path) == job.expected);
  CHECK(calls.populate_calls == 1);  // asked once, then pwrite for good
  CHECK(calls.pwrite_calls >= static_cast<int>(job.writes.size()));
}

TEST_CASE("posix output retries an interrupted populate") {
  TempDir dir;
  const std::vector<uint8_t> big = PatternBytes(3 * Page(), 12);
  const std::string path = dir.File("out.pte");
  RecordingCalls calls;
  calls.populate_errno = GENERATE(EINTR, EAGAIN);
  calls.populate_failures = 3;
  auto out = Open(*Fs(&calls), path);
  REQUIRE(Fill(*out, big).ok());
  REQUIRE(PublishOne(std::move(out)).ok());
  CHECK(calls.populate_calls == 4);
  CHECK(calls.pwrite_calls == 0);  // still mapped
  CHECK(ReadFile(path) == big);
}

TEST_CASE("posix output reports an output page it cannot back") {
  TempDir dir;
  const std::string path = dir.File("out.pte");
  RecordingCalls calls;
  calls.populate_errno = EFAULT;
  calls.populate_failures = 1;
  auto out = Open(*Fs(&calls), path);
  Status s = Fill(*out, PatternBytes(3 * Page(), 12));
  CHECK(s.code() == Code::kIoError);
  CHECK(Contains(s.message(), path));
  CHECK(Contains(s.message(), "could not back the mapped output"));
  CHECK(Contains(s.message(), "disk full or I/O error"));
  CHECK(PublishOne(std::move(out)).message() == s.message());
  CHECK(dir.List().empty());
}

// Two ways onto the pwrite path: asked for (mmap off), or forced by a file
// system that cannot reserve space (fallocate fails), where mapped pages
// could meet a full disk as SIGBUS.
TEST_CASE("posix output writes through pwrite when asked or when space cannot be reserved") {
  const int fallocate_errno = GENERATE(0, EOPNOTSUPP, ENOSYS);
  CAPTURE(fallocate_errno);
  TempDir dir;
  const std::string data = dir.File("data.bin");
  const std::vector<uint8_t> bytes = PatternBytes(3 * Page() + 11, 3);
  WriteFile(data, bytes);
  const Job job = MixedJob(data, bytes);
  OutputOptions opts;
  opts.mmap = fallocate_errno != 0;  // only the failure should turn it off
  opts.window_bytes = Page();
  const std::string path = dir.File("out.pte");
  RecordingCalls calls;
  calls.fallocate_errno = fallocate_errno;
  auto out = Open(*Fs(&calls, opts), path);
  REQUIRE(Run(job, *out).ok());
  REQUIRE(PublishOne(std::move(out)).ok());
  CHECK(ReadFile(path) == job.expected);
  CHECK(calls.populate_calls == 0);
  CHECK(calls.pwrite_calls > 0);
}

}  // namespace
}  // namespace etpack
