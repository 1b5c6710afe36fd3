#include <catch2/catch.hpp>

#include "test_files.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "etpack/sink.h"
#include "etpack/source.h"
#include "etpack/writer.h"

// A seam at the system-call boundary. The library calls these libc
// functions; this executable defines them, so the linker binds the
// library's calls here. Each one records what it was asked and, when a test
// says so, fails the way a kernel or file system would; otherwise it
// forwards to libc. Tests reset the state with Syscalls() = {}.
namespace {

struct SyncCall {
  uint64_t offset;
  uint64_t length;
  unsigned flags;
};

struct SyscallState {
  std::vector<SyncCall> syncs;  // sync_file_range calls
  int sync_errno = 0;           // fail every sync_file_range with this
  int copy_calls = 0;           // copy_file_range calls
  int copy_errno = 0;           // fail every copy_file_range with this...
  bool copy_zero = false;       // ...or answer 0
  int fsync_errno = 0;
  int populate_calls = 0;       // madvise(MADV_POPULATE_WRITE) calls
  int populate_errno = 0;       // fail the next populate_failures of them
  int populate_failures = 0;
  int fallocate_errno = 0;
  int pwrite_calls = 0;
  int tmpfile_errno = 0;        // fail open(O_TMPFILE) with this
};

SyscallState& Syscalls() {
  static SyscallState state;
  return state;
}

template <typename Fn>
Fn Libc(const char* name) {
  return reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, name));
}

}  // namespace

extern "C" {

ssize_t copy_file_range(int in_fd, off64_t* in_off, int out_fd, off64_t* out_off,
                        size_t len, unsigned flags) {
  static auto real = Libc<ssize_t (*)(int, off64_t*, int, off64_t*, size_t, unsigned)>(
      "copy_file_range");
  SyscallState& s = Syscalls();
  ++s.copy_calls;
  if (s.copy_errno != 0) {
    errno = s.copy_errno;
    return -1;
  }
  if (s.copy_zero) return 0;
  return real(in_fd, in_off, out_fd, out_off, len, flags);
}

int sync_file_range(int fd, off64_t offset, off64_t count, unsigned flags) {
  static auto real = Libc<int (*)(int, off64_t, off64_t, unsigned)>("sync_file_range");
  SyscallState& s = Syscalls();
  s.syncs.push_back({static_cast<uint64_t>(offset), static_cast<uint64_t>(count), flags});
  if (s.sync_errno != 0) {
    errno = s.sync_errno;
    return -1;
  }
  return real(fd, offset, count, flags);
}

int fsync(int fd) {
  static auto real = Libc<int (*)(int)>("fsync");
  if (Syscalls().fsync_errno != 0) {
    errno = Syscalls().fsync_errno;
    return -1;
  }
  return real(fd);
}

int madvise(void* addr, size_t len, int advice) noexcept {
  static auto real = Libc<int (*)(void*, size_t, int)>("madvise");
  SyscallState& s = Syscalls();
  if (advice == MADV_POPULATE_WRITE) {
    ++s.populate_calls;
    if (s.populate_failures > 0) {
      --s.populate_failures;
      errno = s.populate_errno;
      return -1;
    }
  }
  return real(addr, len, advice);
}

int fallocate64(int fd, int mode, off64_t offset, off64_t len) {
  static auto real = Libc<int (*)(int, int, off64_t, off64_t)>("fallocate64");
  if (Syscalls().fallocate_errno != 0) {
    errno = Syscalls().fallocate_errno;
    return -1;
  }
  return real(fd, mode, offset, len);
}

int open64(const char* path, int flags, ...) {
  static auto real = Libc<int (*)(const char*, int, ...)>("open64");
  mode_t mode = 0;
  if ((flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE) {
    va_list args;
    va_start(args, flags);
    mode = static_cast<mode_t>(va_arg(args, int));
    va_end(args);
  }
  if ((flags & O_TMPFILE) == O_TMPFILE && Syscalls().tmpfile_errno != 0) {
    errno = Syscalls().tmpfile_errno;
    return -1;
  }
  return real(path, flags, mode);
}

ssize_t pwrite64(int fd, const void* buf, size_t n, off64_t offset) {
  static auto real = Libc<ssize_t (*)(int, const void*, size_t, off64_t)>("pwrite64");
  ++Syscalls().pwrite_calls;
  return real(fd, buf, n, offset);
}

}  // extern "C"

namespace etpack {
namespace {

using testing::PatternBytes;
using testing::ReadFile;
using testing::Contains;
using testing::TempDir;
using testing::WriteFile;

namespace fs = std::filesystem;

uint64_t Page() { return static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)); }

// A set of writes and the file they must produce.
struct Job {
  uint64_t size = 0;
  std::vector<std::pair<uint64_t, SourcePtr>> writes;
  std::vector<uint8_t> expected;
};

Status Run(const Job& job, Sink& sink) {
  ETPACK_RETURN_IF_ERROR(sink.Reserve(job.size));
  for (const auto& [offset, source] : job.writes) {
    ETPACK_RETURN_IF_ERROR(sink.Write(offset, *source));
  }
  return Status::OK();
}

// Writes from every kind of source, unaligned, spanning page-sized windows,
// with gaps that must read back as zero. `data` is a file holding `bytes`.
Job MixedJob(const std::string& data, const std::vector<uint8_t>& bytes) {
  const uint64_t page = Page();
  Job job;
  job.size = 12 * page + 123;
  job.expected.assign(job.size, 0);
  auto put = [&](uint64_t offset, SourcePtr s, const uint8_t* content) {
    std::memcpy(job.expected.data() + offset, content, s->size());
    job.writes.emplace_back(offset, std::move(s));
  };
  static const std::vector<uint8_t> head = PatternBytes(100, 7);
  put(0, MemorySource(head.data(), head.size()), head.data());
  // Memory, across three window boundaries.
  static const std::vector<uint8_t> mem = PatternBytes(3 * page + 17, 8);
  put(200, MemorySource(mem.data(), mem.size()), mem.data());
  // File range, unaligned at both ends.
  auto file = FileSource(data, page + 3, 2 * page + 5);
  REQUIRE(file.ok());
  put(4 * page + 64, *file, bytes.data() + page + 3);
  // Generator, straight after.
  const uint64_t gen_at = 4 * page + 64 + 2 * page + 5;
  static const std::vector<uint8_t> gen = PatternBytes(page + 1, 9);
  put(gen_at, GeneratorSource("g", gen.size(), [](uint64_t o, uint8_t* d, size_t n) {
        std::memcpy(d, gen.data() + o, n);
        return Status::OK();
      }),
      gen.data());
  // The whole file, ending 5 bytes before the end of the output.
  auto whole = FileSource(data);
  REQUIRE(whole.ok());
  put(job.size - 5 - bytes.size(), *whole, bytes.data());
  return job;
}

TEST_CASE("memory sink") {
  std::vector<uint8_t> out = {1, 2, 3};
  auto sink = NewMemorySink(&out);
  REQUIRE(sink->Reserve(10).ok());
  REQUIRE(sink->Write(2, "ab", 2).ok());
  REQUIRE(sink->Write(7, "xyz", 3).ok());
  CHECK(sink->bytes_written() == 5);
  CHECK(out == std::vector<uint8_t>{1, 2, 3});  // nothing until Finish
  REQUIRE(sink->Finish().ok());
  CHECK(out == std::vector<uint8_t>{0, 0, 'a', 'b', 0, 0, 0, 'x', 'y', 'z'});
}

TEST_CASE("memory sink rejects out-of-order writes, stickily") {
  std::vector<uint8_t> out;
  auto sink = NewMemorySink(&out);
  REQUIRE(sink->Reserve(10).ok());
  REQUIRE(sink->Write(4, "ab", 2).ok());
  Status s = sink->Write(5, "c", 1);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(sink->Write(8, "d", 1).code() == Code::kInvalidArgument);
  CHECK(sink->Finish().message() == s.message());
  CHECK(out.empty());
}

TEST_CASE("file sink writes the exact bytes, zero padding included") {
  TempDir dir;
  const std::string data = dir.File("data.bin");
  const std::vector<uint8_t> bytes = PatternBytes(3 * Page() + 11, 3);
  WriteFile(data, bytes);
  const Job job = MixedJob(data, bytes);

  FileSinkOptions opts;
  opts.sync = GENERATE(true, false);
  opts.mmap = GENERATE(true, false);
  opts.copy_file_range = GENERATE(true, false);
  opts.window_bytes = GENERATE(uint64_t{1}, Page(), 3 * Page(), uint64_t{16} << 20);
  opts.writeback_windows = GENERATE(0, 2);
  CAPTURE(opts.sync, opts.mmap, opts.copy_file_range, opts.window_bytes, opts.writeback_windows);

  const std::string out = dir.File("out.pte");
  auto sink = OpenFileSink(out, opts);
  REQUIRE(sink.ok());
  REQUIRE(Run(job, **sink).ok());
  uint64_t payload = 0;
  for (const auto& w : job.writes) payload += w.second->size();
  CHECK((*sink)->bytes_written() == payload);

  // Before Finish the output is an unnamed file: nothing new is visible.
  CHECK(dir.List() == std::set<std::string>{"data.bin"});

  REQUIRE((*sink)->Finish().ok());
  CHECK(dir.List() == std::set<std::string>{"data.bin", "out.pte"});
  CHECK(ReadFile(out) == job.expected);
}

TEST_CASE("file sink names its temporary from the start where O_TMPFILE fails") {
  const int err = GENERATE(EOPNOTSUPP, EISDIR, EINVAL);
  CAPTURE(err);
  TempDir dir;
  const std::string out = dir.File("out.pte");
  Syscalls() = {};
  Syscalls().tmpfile_errno = err;
  auto sink = OpenFileSink(out);
  Syscalls() = {};
  REQUIRE(sink.ok());
  REQUIRE((*sink)->Reserve(3).ok());
  REQUIRE((*sink)->Write(0, "abc", 3).ok());
  const std::set<std::string> during = dir.List();
  REQUIRE(during.size() == 1);
  const std::string temp = *during.begin();
  CHECK(temp.rfind(".out.pte.etpack-", 0) == 0);
  CHECK(temp.size() == std::string(".out.pte.etpack-XXXXXX").size());
  REQUIRE((*sink)->Finish().ok());
  CHECK(dir.List() == std::set<std::string>{"out.pte"});
  CHECK(ReadFile(out) == std::vector<uint8_t>{'a', 'b', 'c'});
}

TEST_CASE("a writer killed mid-write leaves no file behind") {
  TempDir dir;
  const std::string out = dir.File("out.pte");
  const std::vector<uint8_t> old = {'o', 'l', 'd'};
  WriteFile(out, old);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {  // no Catch2 here
    auto sink = OpenFileSink(out);
    const std::vector<uint8_t> half = PatternBytes(Page() * 8);
    if (sink.ok() && (*sink)->Reserve(half.size() * 2).ok() &&
        (*sink)->Write(0, half.data(), half.size()).ok()) {
      ::raise(SIGKILL);
    }
    ::_exit(1);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  CHECK(dir.List() == std::set<std::string>{"out.pte"});
  CHECK(ReadFile(out) == old);
}

TEST_CASE("file sink gives the output the usual mode") {
  TempDir dir;
  const mode_t mask = ::umask(027);
  const std::string out = dir.File("out.pte");
  auto sink = OpenFileSink(out);
  ::umask(mask);
  REQUIRE(sink.ok());
  REQUIRE((*sink)->Reserve(3).ok());
  REQUIRE((*sink)->Write(0, "abc", 3).ok());
  REQUIRE((*sink)->Finish().ok());
  struct stat st;
  REQUIRE(::stat(out.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0640);
  CHECK((*sink)->Finish().code() == Code::kInvalidArgument);  // twice
  (*sink)->Abandon();  // harmless after Finish
  CHECK(ReadFile(out) == std::vector<uint8_t>{'a', 'b', 'c'});
}

TEST_CASE("file sink of size zero makes an empty file") {
  TempDir dir;
  const std::string out = dir.File("empty.pte");
  auto sink = OpenFileSink(out);
  REQUIRE(sink.ok());
  REQUIRE((*sink)->Reserve(0).ok());
  REQUIRE((*sink)->Finish().ok());
  CHECK(fs::file_size(out) == 0);
  CHECK(dir.List() == std::set<std::string>{"empty.pte"});
}

TEST_CASE("file sink abandoned leaves the destination as it was") {
  TempDir dir;
  const std::string out = dir.File("out.pte");
  const std::vector<uint8_t> old = {'o', 'l', 'd'};
  WriteFile(out, old);
  FileSinkOptions opts;
  opts.window_bytes = Page();
  const bool explicit_abandon = GENERATE(true, false);
  {
    auto sink = OpenFileSink(out, opts);
    REQUIRE(sink.ok());
    const std::vector<uint8_t> big = PatternBytes(5 * Page());
    REQUIRE((*sink)->Reserve(big.size()).ok());
    REQUIRE((*sink)->Write(0, big.data(), big.size()).ok());
    CHECK(dir.List() == std::set<std::string>{"out.pte"});  // the new file has no name yet
    if (explicit_abandon) {
      (*sink)->Abandon();
      CHECK(dir.List() == std::set<std::string>{"out.pte"});
    }
  }  // otherwise the destructor abandons
  CHECK(dir.List() == std::set<std::string>{"out.pte"});
  CHECK(ReadFile(out) == old);
}

TEST_CASE("file sink rejects out-of-order writes and reports it at Finish") {
  TempDir dir;
  const std::string out = dir.File("out.pte");
  auto sink = OpenFileSink(out);
  REQUIRE(sink.ok());
  Sink& s = **sink;
  CHECK(s.Write(0, "a", 1).code() == Code::kInvalidArgument);  // before Reserve
  auto fresh = OpenFileSink(out);
  REQUIRE(fresh.ok());
  Sink& t = **fresh;
  REQUIRE(t.Reserve(100).ok());
  REQUIRE(t.Write(10, "abcd", 4).ok());
  Status back = t.Write(12, "x", 1);  // overlaps the previous write
  CHECK(back.code() == Code::kInvalidArgument);
  CHECK(Contains(back.message(), out));
  CHECK(Contains(back.message(), "14"));
  CHECK(t.Write(50, "y", 1).message() == back.message());  // sticky
  CHECK(t.Finish().message() == back.message());
  CHECK(s.Finish().code() == Code::kInvalidArgument);
  CHECK(dir.List().empty());
}

TEST_CASE("file sink reports a failing source with the output's name") {
  TempDir dir;
  const std::string out = dir.File("out.pte");
  FileSinkOptions opts;
  opts.copy_file_range = false;
  auto sink = OpenFileSink(out, opts);
  REQUIRE(sink.ok());
  REQUIRE((*sink)->Reserve(10 * Page()).ok());
  SourcePtr bad = GeneratorSource("w", 8 * Page(), [](uint64_t o, uint8_t* d, size_t n) {
    if (o + n > 4 * Page()) return Corrupt("bad data");
    std::memset(d, 1, n);
    return Status::OK();
  });
  Status s = (*sink)->Write(Page(), *bad);
  REQUIRE(!s.ok());
  CHECK(Contains(s.message(), out));
  CHECK(Contains(s.message(), "bad data"));
  CHECK((*sink)->Finish().message() == s.message());
  CHECK(dir.List().empty());
}

TEST_CASE("OpenFileSink needs an existing directory and a file name") {
  TempDir dir;
  auto missing = OpenFileSink(dir.File("no/such/out.pte"));
  REQUIRE(!missing.ok());
  CHECK(Contains(missing.status().message(), dir.File("no/such")));
  CHECK(OpenFileSink(dir.path() + "/").status().code() == Code::kInvalidArgument);
  CHECK(OpenFileSink(dir.path()).status().code() == Code::kInvalidArgument);
}

// Records what reaches it, for checking the fault-injecting wrapper.
class RecordingSink : public Sink {
 public:
  struct Log {
    std::vector<std::pair<uint64_t, uint64_t>> writes;  // offset, size
    uint64_t reserved = 0;
    bool finished = false;
    bool abandoned = false;
  };
  explicit RecordingSink(Log* log) : log_(log) {}
  using Sink::Write;
  Status Reserve(uint64_t size) override {
    log_->reserved = size;
    return Status::OK();
  }
  Status Write(uint64_t offset, const Source& source) override {
    log_->writes.emplace_back(offset, source.size());
    written_ += source.size();
    return Status::OK();
  }
  Status Finish() override {
    log_->finished = true;
    return Status::OK();
  }
  void Abandon() override { log_->abandoned = true; }
  uint64_t bytes_written() const override { return written_; }

 private:
  Log* log_;
  uint64_t written_ = 0;
};

TEST_CASE("fault sink fails the write that crosses the limit") {
  RecordingSink::Log log;
  auto sink = NewFaultInjectingSink(std::make_unique<RecordingSink>(&log), 25);
  REQUIRE(sink->Reserve(100).ok());
  REQUIRE(sink->Write(0, "0123456789", 10).ok());
  REQUIRE(sink->Write(10, "0123456789", 10).ok());
  Status s = sink->Write(30, "0123456789", 10);
  CHECK(s.code() == Code::kIoError);
  CHECK(Contains(s.message(), "injected fault"));
  CHECK(sink->Write(50, "x", 1).message() == s.message());
  CHECK(sink->Finish().message() == s.message());
  CHECK(log.reserved == 100);
  // Only the part below the limit got through.
  const std::vector<std::pair<uint64_t, uint64_t>> expected = {{0, 10}, {10, 10}, {30, 5}};
  CHECK(log.writes == expected);
  CHECK(sink->bytes_written() == 25);
  CHECK(log.abandoned);
  CHECK_FALSE(log.finished);
}

TEST_CASE("fault sink lets a write that ends exactly at the limit through") {
  RecordingSink::Log log;
  auto sink = NewFaultInjectingSink(std::make_unique<RecordingSink>(&log), 10);
  REQUIRE(sink->Reserve(100).ok());
  REQUIRE(sink->Write(0, "0123456789", 10).ok());
  REQUIRE(sink->Write(10, "", 0).ok());
  CHECK(sink->Write(20, "a", 1).code() == Code::kIoError);
  CHECK(log.writes.size() == 2);
  CHECK(sink->Finish().code() == Code::kIoError);
}

TEST_CASE("fault sink forwards Finish when nothing failed") {
  RecordingSink::Log log;
  auto sink = NewFaultInjectingSink(std::make_unique<RecordingSink>(&log), 1000);
  REQUIRE(sink->Reserve(10).ok());
  REQUIRE(sink->Write(0, "abc", 3).ok());
  REQUIRE(sink->Finish().ok());
  CHECK(log.finished);
  CHECK_FALSE(log.abandoned);
}

TEST_CASE("injected fault midway leaves the destination untouched") {
  TempDir dir;
  const std::string out = dir.File("out.pte");
  const std::vector<uint8_t> old = PatternBytes(77, 5);
  WriteFile(out, old);
  const std::vector<uint8_t> a = PatternBytes(3 * Page(), 1);
  const std::vector<uint8_t> b = PatternBytes(3 * Page(), 2);
  ArtifactPlan plan;
  plan.head = PatternBytes(64, 3);
  plan.file_size = 8 * Page();
  plan.placements.push_back({Page(), Page(), MemorySource(a.data(), a.size())});
  plan.placements.push_back({5 * Page(), Page(), MemorySource(b.data(), b.size())});

  FileSinkOptions opts;
  opts.window_bytes = Page();
  auto file = OpenFileSink(out, opts);
  REQUIRE(file.ok());
  auto sink = NewFaultInjectingSink(std::move(*file), 64 + a.size() + 100);
  Status s = WriteArtifact(plan, *sink);
  REQUIRE(s.code() == Code::kIoError);
  CHECK(Contains(s.message(), "injected fault"));
  CHECK(dir.List() == std::set<std::string>{"out.pte"});  // the partial file has no name
  CHECK(sink->Finish().message() == s.message());
  CHECK(dir.List() == std::set<std::string>{"out.pte"});
  CHECK(ReadFile(out) == old);
}

// The file size limit is below the output size. The child process takes the
// limit so the test runner keeps its own. The sink must notice before it
// grows the file: past the limit the kernel sends SIGXFSZ, which kills a
// process that does not ignore it, leaving the temporary file behind.
TEST_CASE("file size limit: reserving fails cleanly and the old file survives") {
  const bool ignore_sigxfsz = GENERATE(true, false);
  CAPTURE(ignore_sigxfsz);
  TempDir dir;
  const std::string out = dir.File("model.pte");
  const std::vector<uint8_t> old = PatternBytes(1000, 11);
  WriteFile(out, old);

  ArtifactPlan plan;
  plan.head = PatternBytes(256, 12);
  plan.file_size = uint64_t{4} << 20;
  plan.placements.push_back(
      {4096, 4096, GeneratorSource("big", plan.file_size - 8192,
                                   [](uint64_t, uint8_t* d, size_t n) {
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
    Status s = WriteArtifactFile(out, plan);
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
  REQUIRE(WIFEXITED(wstatus));  // not killed by SIGXFSZ
  CHECK(WEXITSTATUS(wstatus) == 1);  // failed with kOutOfRange
  CHECK(Contains(message, out));
  CHECK(Contains(message, "cannot reserve " + std::to_string(plan.file_size) + " bytes"));
  CHECK(Contains(message, "file size limit (ulimit -f) of 1048576 bytes"));
  CHECK(ReadFile(out) == old);
  CHECK(dir.List() == std::set<std::string>{"model.pte"});
}

TEST_CASE("sinks report a write past the reserved size instead of aborting") {
  const std::string which = GENERATE(as<std::string>{}, "memory", "file", "fault");
  CAPTURE(which);
  TempDir dir;
  std::vector<uint8_t> bytes;
  std::unique_ptr<Sink> sink;
  if (which == "memory") {
    sink = NewMemorySink(&bytes);
  } else {
    auto file = OpenFileSink(dir.File("out.pte"));
    REQUIRE(file.ok());
    sink = std::move(*file);
    if (which == "fault") sink = NewFaultInjectingSink(std::move(sink), 1000);
  }
  REQUIRE(sink->Reserve(10).ok());
  Status s = sink->Write(8, "abc", 3);
  CHECK(s.code() == Code::kOutOfRange);
  CHECK(Contains(s.message(), "runs past the reserved size (10 bytes)"));
  CHECK(sink->Write(~uint64_t{0}, "a", 1).message() == s.message());  // sticky
  CHECK(sink->Finish().message() == s.message());
  CHECK(dir.List().empty());
}

TEST_CASE("sinks refuse Finish without Reserve") {
  const std::string which = GENERATE(as<std::string>{}, "memory", "file", "fault");
  CAPTURE(which);
  TempDir dir;
  const std::string out = dir.File("out.pte");
  const std::vector<uint8_t> old = {'o', 'l', 'd'};
  WriteFile(out, old);
  std::vector<uint8_t> bytes = {1, 2};
  std::unique_ptr<Sink> sink;
  if (which == "memory") {
    sink = NewMemorySink(&bytes);
  } else {
    auto file = OpenFileSink(out);
    REQUIRE(file.ok());
    sink = std::move(*file);
    if (which == "fault") sink = NewFaultInjectingSink(std::move(sink), 1000);
  }
  Status s = sink->Finish();
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(Contains(s.message(), "Finish called before Reserve"));
  CHECK(bytes == std::vector<uint8_t>{1, 2});
  CHECK(ReadFile(out) == old);
  CHECK(dir.List() == std::set<std::string>{"out.pte"});
}

TEST_CASE("file sink handles a file name near NAME_MAX") {
  // Unnamed, the temporary gets its (equally long) name at Finish.
  const bool unnamed = GENERATE(true, false);
  CAPTURE(unnamed);
  TempDir dir;
  const std::string name = std::string(NAME_MAX - 4, 'n') + ".pte";  // exactly NAME_MAX
  const std::string out = dir.File(name);
  Syscalls() = {};
  if (!unnamed) Syscalls().tmpfile_errno = EOPNOTSUPP;
  auto sink = OpenFileSink(out);
  Syscalls() = {};
  REQUIRE(sink.ok());
  REQUIRE((*sink)->Reserve(3).ok());
  REQUIRE((*sink)->Write(0, "abc", 3).ok());
  const std::set<std::string> during = dir.List();
  if (unnamed) {
    CHECK(during.empty());
  } else {
    REQUIRE(during.size() == 1);
    const std::string temp = *during.begin();
    CHECK(temp.size() == NAME_MAX);
    CHECK(temp.rfind("." + name.substr(0, 200), 0) == 0);
  }
  REQUIRE((*sink)->Finish().ok());
  CHECK(dir.List() == std::set<std::string>{name});
  CHECK(ReadFile(out) == std::vector<uint8_t>{'a', 'b', 'c'});

  auto too_long = OpenFileSink(dir.File(std::string(NAME_MAX + 1, 'x')));
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
  const unsigned kWait =
      SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER;
  const uint64_t cells = frontier >= size ? (size + window - 1) / window : frontier / window;
  uint64_t started = 0;  // cells [0, started) have write-back started
  uint64_t waited = 0;   // cells [0, waited) were waited for
  for (const SyncCall& c : calls) {
    CAPTURE(c.offset, c.length, c.flags, started, waited);
    REQUIRE(c.offset % Page() == 0);
    REQUIRE(c.offset % window == 0);
    if (c.flags == SYNC_FILE_RANGE_WRITE) {
      REQUIRE(c.offset == started * window);  // contiguous, never overlapping
      const uint64_t end = c.offset + c.length;
      REQUIRE((end % window == 0 || end == size));
      REQUIRE(end > c.offset);
      started = (end + window - 1) / window;
    } else {
      REQUIRE(c.flags == kWait);
      REQUIRE(c.offset == waited * window);  // one cell, in order
      REQUIRE(c.length == std::min(window, size - c.offset));
      ++waited;
      REQUIRE(started >= waited + inflight);  // only when `inflight` more are going
    }
  }
  CHECK(started == cells);
  CHECK(waited == cells - std::min(cells, inflight));
}

// The end of a job's last write.
uint64_t Frontier(const Job& job) {
  return job.writes.empty() ? 0 : job.writes.back().first + job.writes.back().second->size();
}

TEST_CASE("file sink runs write-behind once per window rather than once per write") {
  TempDir dir;
  const uint64_t page = Page();
  const std::vector<uint8_t> data = PatternBytes(64 * page, 4);
  WriteFile(dir.File("data.bin"), data);
  auto file = FileSource(dir.File("data.bin"));
  REQUIRE(file.ok());

  FileSinkOptions opts;
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

  const std::string out = dir.File("out.pte");
  auto sink = OpenFileSink(out, opts);
  REQUIRE(sink.ok());
  Syscalls() = {};
  REQUIRE(Run(job, **sink).ok());
  REQUIRE((*sink)->Finish().ok());
  const std::vector<SyncCall> calls = Syscalls().syncs;
  Syscalls() = {};
  CHECK(ReadFile(out) == job.expected);
  CheckWriteBehind(calls, job.size, opts.window_bytes,
                   static_cast<uint64_t>(opts.writeback_windows), Frontier(job));
  // Few calls: at most one start per window plus one wait per window.
  CHECK(calls.size() <= 2 * ((job.size + opts.window_bytes - 1) / opts.window_bytes));
}

TEST_CASE("file sink uses copy_file_range only for large file items") {
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
  put(uint64_t{1} << 20, 12345, (uint64_t{2} << 20) + 7);                // large: kernel

  const std::string out = dir.File("out.pte");
  auto sink = OpenFileSink(out);  // default 16 MiB window
  REQUIRE(sink.ok());
  Syscalls() = {};
  REQUIRE(Run(job, **sink).ok());
  const int calls = Syscalls().copy_calls;
  Syscalls() = {};
  REQUIRE((*sink)->Finish().ok());
  CHECK(calls >= 1);
  CHECK(calls <= 3);  // only for the large item
  CHECK(ReadFile(out) == job.expected);
}

TEST_CASE("file sink stops trying copy_file_range once it is unsupported") {
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
  FileSinkOptions opts;
  opts.window_bytes = 2 * page;
  opts.writeback_windows = 1;
  const std::string out = dir.File("out.pte");
  auto sink = OpenFileSink(out, opts);
  REQUIRE(sink.ok());
  Syscalls() = {};
  Syscalls().copy_errno = err;
  Syscalls().copy_zero = err == 0;
  Status s = Run(job, **sink);
  const SyscallState seen = Syscalls();
  Syscalls() = {};
  REQUIRE(s.ok());
  REQUIRE((*sink)->Finish().ok());
  CHECK(seen.copy_calls == 1);
  CHECK(ReadFile(out) == job.expected);
  CheckWriteBehind(seen.syncs, job.size, opts.window_bytes, 1, Frontier(job));
}

TEST_CASE("file sink reports a file source truncated after opening") {
  TempDir dir;
  const uint64_t page = Page();
  const std::string data = dir.File("data.bin");
  WriteFile(data, PatternBytes(8 * page, 8));
  auto file = FileSource(data);
  REQUIRE(file.ok());
  REQUIRE(::truncate(data.c_str(), static_cast<off_t>(2 * page)) == 0);

  FileSinkOptions opts;
  opts.window_bytes = page;
  opts.copy_file_range = GENERATE(true, false);
  const std::string out = dir.File("out.pte");
  auto sink = OpenFileSink(out, opts);
  REQUIRE(sink.ok());
  REQUIRE((*sink)->Reserve(10 * page).ok());
  Status s = (*sink)->Write(page, **file);
  CAPTURE(s.message());
  CHECK(s.code() == Code::kIoError);
  CHECK(Contains(s.message(), "file ended at offset " + std::to_string(2 * page)));
  CHECK(Contains(s.message(), data));
}

TEST_CASE("file sink fails on a copy_file_range error that is not 'unsupported'") {
  TempDir dir;
  const uint64_t page = Page();
  WriteFile(dir.File("data.bin"), PatternBytes(4 * page, 9));
  auto file = FileSource(dir.File("data.bin"));
  REQUIRE(file.ok());
  FileSinkOptions opts;
  opts.window_bytes = page;
  auto sink = OpenFileSink(dir.File("out.pte"), opts);
  REQUIRE(sink.ok());
  REQUIRE((*sink)->Reserve(8 * page).ok());
  Syscalls() = {};
  Syscalls().copy_errno = EIO;
  Status s = (*sink)->Write(page, **file);
  Syscalls() = {};
  CHECK(s.code() == Code::kIoError);
  CHECK(Contains(s.message(), "copy_file_range"));
  CHECK(Contains(s.message(), std::strerror(EIO)));
  CHECK((*sink)->Finish().message() == s.message());
  CHECK(dir.List() == std::set<std::string>{"data.bin"});
}

TEST_CASE("file sink treats every write-back error as a failure") {
  const int err = GENERATE(EIO, ENOSPC, ENOMEM, EBADF, EROFS);
  CAPTURE(err);
  TempDir dir;
  const std::string out = dir.File("out.pte");
  const std::vector<uint8_t> old = PatternBytes(77, 5);
  WriteFile(out, old);
  const std::vector<uint8_t> big = PatternBytes(6 * Page(), 10);
  FileSinkOptions opts;
  opts.window_bytes = Page();
  auto sink = OpenFileSink(out, opts);
  REQUIRE(sink.ok());
  REQUIRE((*sink)->Reserve(big.size()).ok());
  Syscalls() = {};
  Syscalls().sync_errno = err;
  Status s = (*sink)->Write(0, big.data(), big.size());
  Syscalls() = {};
  CHECK(s.code() == Code::kIoError);
  CHECK(Contains(s.message(), "write-back"));
  CHECK(Contains(s.message(), std::strerror(err)));
  CHECK((*sink)->Finish().message() == s.message());
  CHECK(ReadFile(out) == old);
  CHECK(dir.List() == std::set<std::string>{"out.pte"});
}

TEST_CASE("file sink ignores write-back errors that mean 'cannot do that here'") {
  const int err = GENERATE(EINVAL, ESPIPE, ENOSYS);
  CAPTURE(err);
  TempDir dir;
  const std::string out = dir.File("out.pte");
  const std::vector<uint8_t> big = PatternBytes(6 * Page(), 10);
  FileSinkOptions opts;
  opts.window_bytes = Page();
  auto sink = OpenFileSink(out, opts);
  REQUIRE(sink.ok());
  REQUIRE((*sink)->Reserve(big.size()).ok());
  Syscalls() = {};
  Syscalls().sync_errno = err;
  Status s = (*sink)->Write(0, big.data(), big.size());
  Syscalls() = {};
  REQUIRE(s.ok());
  REQUIRE((*sink)->Finish().ok());
  CHECK(ReadFile(out) == big);
}

TEST_CASE("file sink: a failed directory sync says the file is in place") {
  TempDir dir;
  const std::string out = dir.File("out.pte");
  WriteFile(out, std::vector<uint8_t>{'o', 'l', 'd'});
  auto sink = OpenFileSink(out);
  REQUIRE(sink.ok());
  REQUIRE((*sink)->Reserve(3).ok());
  REQUIRE((*sink)->Write(0, "new", 3).ok());
  Syscalls() = {};
  Syscalls().fsync_errno = EIO;
  Status s = (*sink)->Finish();
  Syscalls() = {};
  CAPTURE(s.message());
  CHECK(s.code() == Code::kIoError);
  CHECK(Contains(s.message(), out + " was written and renamed into place"));
  CHECK(Contains(s.message(), "directory " + dir.path() + " could not be synced"));
  CHECK(Contains(s.message(), std::strerror(EIO)));
  CHECK(ReadFile(out) == std::vector<uint8_t>{'n', 'e', 'w'});
  CHECK(dir.List() == std::set<std::string>{"out.pte"});
}

TEST_CASE("file sink falls back to pwrite where the mapping cannot be populated") {
  TempDir dir;
  const std::string data = dir.File("data.bin");
  const std::vector<uint8_t> bytes = PatternBytes(3 * Page() + 11, 3);
  WriteFile(data, bytes);
  const Job job = MixedJob(data, bytes);
  FileSinkOptions opts;
  opts.window_bytes = 2 * Page();
  opts.copy_file_range = false;
  const std::string out = dir.File("out.pte");
  auto sink = OpenFileSink(out, opts);
  REQUIRE(sink.ok());
  Syscalls() = {};
  Syscalls().populate_errno = EINVAL;
  Syscalls().populate_failures = 1000;
  REQUIRE(Run(job, **sink).ok());
  const SyscallState seen = Syscalls();
  Syscalls() = {};
  REQUIRE((*sink)->Finish().ok());
  CHECK(ReadFile(out) == job.expected);
  CHECK(seen.populate_calls == 1);  // asked once, then pwrite for good
  CHECK(seen.pwrite_calls >= static_cast<int>(job.writes.size()));
}

TEST_CASE("file sink retries an interrupted populate") {
  TempDir dir;
  const std::vector<uint8_t> big = PatternBytes(3 * Page(), 12);
  const std::string out = dir.File("out.pte");
  auto sink = OpenFileSink(out);
  REQUIRE(sink.ok());
  REQUIRE((*sink)->Reserve(big.size()).ok());
  Syscalls() = {};
  Syscalls().populate_errno = GENERATE(EINTR, EAGAIN);
  Syscalls().populate_failures = 3;
  Status s = (*sink)->Write(0, big.data(), big.size());
  const SyscallState seen = Syscalls();
  Syscalls() = {};
  REQUIRE(s.ok());
  REQUIRE((*sink)->Finish().ok());
  CHECK(seen.populate_calls == 4);
  CHECK(seen.pwrite_calls == 0);  // still mapped
  CHECK(ReadFile(out) == big);
}

TEST_CASE("file sink reports an output page it cannot back") {
  TempDir dir;
  const std::vector<uint8_t> big = PatternBytes(3 * Page(), 12);
  const std::string out = dir.File("out.pte");
  auto sink = OpenFileSink(out);
  REQUIRE(sink.ok());
  REQUIRE((*sink)->Reserve(big.size()).ok());
  Syscalls() = {};
  Syscalls().populate_errno = EFAULT;
  Syscalls().populate_failures = 1;
  Status s = (*sink)->Write(0, big.data(), big.size());
  Syscalls() = {};
  CHECK(s.code() == Code::kIoError);
  CHECK(Contains(s.message(), out));
  CHECK(Contains(s.message(), "could not back the mapped output"));
  CHECK(Contains(s.message(), "disk full or I/O error"));
  CHECK((*sink)->Finish().message() == s.message());
  CHECK(dir.List().empty());
}

// Two ways onto the pwrite path: asked for (mmap off), or forced by a file
// system that cannot reserve space (fallocate fails), where mapped pages
// could meet a full disk as SIGBUS.
TEST_CASE("file sink writes through pwrite when asked or when space cannot be reserved") {
  const int fallocate_errno = GENERATE(0, EOPNOTSUPP, ENOSYS);
  CAPTURE(fallocate_errno);
  TempDir dir;
  const std::string data = dir.File("data.bin");
  const std::vector<uint8_t> bytes = PatternBytes(3 * Page() + 11, 3);
  WriteFile(data, bytes);
  const Job job = MixedJob(data, bytes);
  FileSinkOptions opts;
  opts.mmap = fallocate_errno != 0;  // only the failure should turn it off
  opts.window_bytes = Page();
  const std::string out = dir.File("out.pte");
  auto sink = OpenFileSink(out, opts);
  REQUIRE(sink.ok());
  Syscalls() = {};
  Syscalls().fallocate_errno = fallocate_errno;
  Status s = Run(job, **sink);
  const SyscallState seen = Syscalls();
  Syscalls() = {};
  REQUIRE(s.ok());
  REQUIRE((*sink)->Finish().ok());
  CHECK(ReadFile(out) == job.expected);
  CHECK(seen.populate_calls == 0);
  CHECK(seen.pwrite_calls > 0);
}

}  // namespace
}  // namespace etpack
