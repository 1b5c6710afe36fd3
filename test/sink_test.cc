#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

#include "etpack/sink.h"
#include "etpack/source.h"
#include "etpack/writer.h"

namespace etpack {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/etpack-sink-XXXXXX";
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }
  std::set<std::string> List() const {
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(path_)) {
      names.insert(e.path().filename().string());
    }
    return names;
  }

 private:
  std::string path_;
};

std::vector<uint8_t> Pattern(size_t n, uint32_t seed = 1) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed * 2654435761u + 12345u;
  for (auto& b : v) {
    x = x * 1103515245u + 12345u;
    b = static_cast<uint8_t>(x >> 16);
  }
  return v;
}

void WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()),
          static_cast<std::streamsize>(bytes.size()));
  REQUIRE(f.good());
}

std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE(f.good());
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

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
  static const std::vector<uint8_t> head = Pattern(100, 7);
  put(0, MemorySource(head.data(), head.size()), head.data());
  // Memory, across three window boundaries.
  static const std::vector<uint8_t> mem = Pattern(3 * page + 17, 8);
  put(200, MemorySource(mem.data(), mem.size()), mem.data());
  // File range, unaligned at both ends.
  auto file = FileSource(data, page + 3, 2 * page + 5);
  REQUIRE(file.ok());
  put(4 * page + 64, *file, bytes.data() + page + 3);
  // Generator, straight after.
  const uint64_t gen_at = 4 * page + 64 + 2 * page + 5;
  static const std::vector<uint8_t> gen = Pattern(page + 1, 9);
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
  const std::vector<uint8_t> bytes = Pattern(3 * Page() + 11, 3);
  WriteFile(data, bytes);
  const Job job = MixedJob(data, bytes);

  FileSinkOptions opts;
  opts.sync = GENERATE(true, false);
  opts.copy_file_range = GENERATE(true, false);
  opts.window_bytes = GENERATE(uint64_t{1}, Page(), 3 * Page(), uint64_t{16} << 20);
  opts.writeback_windows = GENERATE(0, 2);
  CAPTURE(opts.sync, opts.copy_file_range, opts.window_bytes, opts.writeback_windows);

  const std::string out = dir.File("out.pte");
  auto sink = OpenFileSink(out, opts);
  REQUIRE(sink.ok());
  REQUIRE(Run(job, **sink).ok());
  uint64_t payload = 0;
  for (const auto& w : job.writes) payload += w.second->size();
  CHECK((*sink)->bytes_written() == payload);

  // Before Finish only the temporary file exists, named after the output.
  std::set<std::string> during = dir.List();
  REQUIRE(during.size() == 2);
  CHECK(during.count("out.pte") == 0);
  during.erase("data.bin");
  REQUIRE(during.size() == 1);
  const std::string temp = *during.begin();
  CHECK(temp.rfind(".out.pte.etpack-", 0) == 0);
  CHECK(temp.size() == std::string(".out.pte.etpack-XXXXXX").size());

  REQUIRE((*sink)->Finish().ok());
  CHECK(dir.List() == std::set<std::string>{"data.bin", "out.pte"});
  CHECK(ReadFile(out) == job.expected);
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
    const std::vector<uint8_t> big = Pattern(5 * Page());
    REQUIRE((*sink)->Reserve(big.size()).ok());
    REQUIRE((*sink)->Write(0, big.data(), big.size()).ok());
    CHECK(dir.List().size() == 2);
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
  const std::vector<uint8_t> old = Pattern(77, 5);
  WriteFile(out, old);
  const std::vector<uint8_t> a = Pattern(3 * Page(), 1);
  const std::vector<uint8_t> b = Pattern(3 * Page(), 2);
  ArtifactPlan plan;
  plan.head = Pattern(64, 3);
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
  CHECK(dir.List().size() == 2);  // the partly written temporary is still there
  CHECK(sink->Finish().message() == s.message());
  CHECK(dir.List() == std::set<std::string>{"out.pte"});
  CHECK(ReadFile(out) == old);
}

// A real write failure: the file size limit is below the output size. The
// child process takes the limit so the test runner keeps its own.
TEST_CASE("file size limit: the write fails and the old file survives") {
  TempDir dir;
  const std::string out = dir.File("model.pte");
  const std::vector<uint8_t> old = Pattern(1000, 11);
  WriteFile(out, old);

  ArtifactPlan plan;
  plan.head = Pattern(256, 12);
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
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit = {uint64_t{1} << 20, uint64_t{1} << 20};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(3);
    Status s = WriteArtifactFile(out, plan);
    const std::string msg = s.message();
    if (::write(pipe_fds[1], msg.data(), msg.size()) < 0) ::_exit(4);
    ::_exit(s.ok() ? 0 : s.code() == Code::kIoError ? 1 : 2);
  }
  ::close(pipe_fds[1]);
  std::string message;
  char buf[512];
  ssize_t got;
  while ((got = ::read(pipe_fds[0], buf, sizeof buf)) > 0) message.append(buf, got);
  ::close(pipe_fds[0]);
  int wstatus = 0;
  REQUIRE(::waitpid(pid, &wstatus, 0) == pid);
  REQUIRE(WIFEXITED(wstatus));
  CAPTURE(message);
  CHECK(WEXITSTATUS(wstatus) == 1);  // failed with an I/O error
  CHECK(Contains(message, out));
  CHECK(Contains(message, std::to_string(plan.file_size)));
  CHECK(Contains(message, std::strerror(EFBIG)));
  CHECK(ReadFile(out) == old);
  CHECK(dir.List() == std::set<std::string>{"model.pte"});
}

}  // namespace
}  // namespace etpack
