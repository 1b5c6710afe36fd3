// Publishing: several outputs as one unit, and every failure, injected at
// each step, leaving the destinations as they were and nothing behind.

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "catch.h"

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "etpack/output.h"
#include "etpack/source.h"
#include "etpack/writer.h"
#include "fault_output.h"
#include "io/posix_calls.h"
#include "io/posix_output.h"
#include "output_test_util.h"
#include "test_files.h"

namespace etpack {
namespace {

using testing::Contains;
using testing::Page;
using testing::PatternBytes;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

using Bytes = std::vector<uint8_t>;

// A small plan whose bytes are known: a head and two placements across
// several one-page windows.
struct Artifact {
  explicit Artifact(uint32_t seed) {
    const Bytes a = PatternBytes(3 * Page(), seed);
    const Bytes b = PatternBytes(2 * Page() + 5, seed + 1);
    plan.head = PatternBytes(64, seed + 2);
    plan.file_size = 8 * Page();
    plan.placements.push_back({Page(), Page(), OwnedSource(a)});
    plan.placements.push_back({5 * Page(), Page(), OwnedSource(b)});
    bytes.assign(plan.file_size, 0);
    std::memcpy(bytes.data(), plan.head.data(), plan.head.size());
    std::memcpy(bytes.data() + Page(), a.data(), a.size());
    std::memcpy(bytes.data() + 5 * Page(), b.data(), b.size());
  }
  ArtifactPlan plan;
  Bytes bytes;
};

// The directory's entries and their contents.
std::map<std::string, Bytes> Snapshot(const TempDir& dir) {
  std::map<std::string, Bytes> files;
  for (const std::string& name : dir.List()) files[name] = ReadFile(dir.File(name));
  return files;
}

OutputOptions SmallWindows() {
  OutputOptions opts;
  opts.window_bytes = Page();
  return opts;
}

TEST_CASE("several artifacts are published together, data first") {
  TempDir dir;
  const Artifact data(1), program(2);
  const std::string ptd = dir.File("m.ptd"), pte = dir.File("m.pte");
  const bool existing = GENERATE(true, false);
  if (existing) {
    WriteFile(ptd, std::string("old data"));
    WriteFile(pte, std::string("old program"));
  }
  // Records the order in which files get their final names.
  struct Order : PosixCalls {
    std::vector<std::string> placed;
    int Linkat(const char* from, const char* to) override {
      const int rc = PosixCalls::Linkat(from, to);
      if (rc == 0 && std::strstr(to, ".etpack-") == nullptr) placed.push_back(to);
      return rc;
    }
    int Rename(const char* from, const char* to) override {
      const int rc = PosixCalls::Rename(from, to);
      if (rc == 0) placed.push_back(to);
      return rc;
    }
  } calls;
  auto fs = NewPosixOutputFs(SmallWindows(), &calls);
  std::vector<std::pair<uint64_t, uint64_t>> progress;
  WriteOptions options;
  options.progress = [&](uint64_t done, uint64_t total) { progress.emplace_back(done, total); };
  REQUIRE(WriteArtifactFiles(*fs, {{ptd, &data.plan}, {pte, &program.plan}}, options).ok());
  CHECK(dir.List() == std::set<std::string>{"m.ptd", "m.pte"});
  CHECK(ReadFile(ptd) == data.bytes);
  CHECK(ReadFile(pte) == program.bytes);
  CHECK(calls.placed == std::vector<std::string>{ptd, pte});
  REQUIRE(!progress.empty());
  const uint64_t each = 64 + 3 * Page() + 2 * Page() + 5;
  CHECK(progress.back() == std::make_pair(2 * each, 2 * each));
}

TEST_CASE("several artifacts in memory") {
  MemoryOutputFs fs;
  const Artifact a(1), b(2);
  REQUIRE(WriteArtifactFiles(fs, {{"a", &a.plan}, {"b", &b.plan}}).ok());
  CHECK(fs.files().at("a") == a.bytes);
  CHECK(fs.files().at("b") == b.bytes);
}

TEST_CASE("a unit with a bad plan, a bad destination or a repeated name writes nothing") {
  TempDir dir;
  Artifact good(1), bad(2);
  bad.plan.placements[1].offset = 2 * Page();  // overlaps placements[0]
  WriteFile(dir.File("bystander"), std::string("x"));
  Status s;
  std::string needle;
  SECTION("bad plan") {
    s = WriteArtifactFiles({{dir.File("a.ptd"), &good.plan}, {dir.File("a.pte"), &bad.plan}});
    needle = "placements[1]";
  }
  SECTION("bad destination") {
    s = WriteArtifactFiles({{dir.File("a.ptd"), &good.plan}, {dir.path(), &good.plan}});
    needle = "directory";
  }
  SECTION("the same name twice") {
    s = WriteArtifactFiles({{dir.File("a"), &good.plan}, {dir.File("a"), &good.plan}});
    needle = "are the same file";
  }
  SECTION("the same file by another path") {
    s = WriteArtifactFiles({{dir.File("a"), &good.plan}, {dir.path() + "/./a", &good.plan}});
    needle = "are the same file";
  }
  SECTION("the same file through a link") {
    REQUIRE(::symlink("a", dir.File("link").c_str()) == 0);
    s = WriteArtifactFiles({{dir.File("a"), &good.plan}, {dir.File("link"), &good.plan}});
    REQUIRE(::unlink(dir.File("link").c_str()) == 0);
    needle = "are the same file";
  }
  CAPTURE(s.message());
  CHECK(!s.ok());
  CHECK(Contains(s.message(), needle));
  CHECK(dir.List() == std::set<std::string>{"bystander"});
}

// Each step of the OutputFile interface, failed in either output of a unit
// of two, with the destinations free or holding old files.
TEST_CASE("a fault at any step of a unit leaves every destination as it was") {
  const FaultStep step = GENERATE(FaultStep::kReserve, FaultStep::kWrite, FaultStep::kSync,
                                  FaultStep::kLink, FaultStep::kRename);
  const int which = GENERATE(0, 1);
  const bool existing = GENERATE(true, false);
  CAPTURE(FaultStepName(step), which, existing);
  TempDir dir;
  const Artifact data(1), program(2);
  const std::string ptd = dir.File("m.ptd"), pte = dir.File("m.pte");
  if (existing) {
    WriteFile(ptd, std::string("old data"));
    WriteFile(pte, std::string("old program"));
  }
  const auto before = Snapshot(dir);
  auto posix = NewPosixOutputFs(SmallWindows());
  Fault fault;
  fault.step = step;
  fault.output = which;
  auto fs = NewFaultInjectingOutputFs(posix.get(), fault);
  Status s = WriteArtifactFiles(*fs, {{ptd, &data.plan}, {pte, &program.plan}});
  CAPTURE(s.message());
  REQUIRE(s.code() == Code::kIoError);
  CHECK(Contains(s.message(), std::string("injected fault at ") + FaultStepName(step)));
  if (step == FaultStep::kRename && which == 1 && existing) {
    // The one case Publish() cannot take back: the data file was already
    // renamed over the old one when the program's rename failed.
    CHECK(Contains(s.message(), ptd + " already replaced by the new file"));
    CHECK(ReadFile(ptd) == data.bytes);
    CHECK(ReadFile(pte) == Bytes{'o', 'l', 'd', ' ', 'p', 'r', 'o', 'g', 'r', 'a', 'm'});
    // Its markers stay, so verify refuses the mixed pair.
    CHECK(dir.List() == std::set<std::string>{"m.ptd", "m.pte", ".m.ptd.etpack-publishing",
                                              ".m.pte.etpack-publishing"});
    CHECK(Contains(s.message(), "verify refuses its files until it is written again"));
  } else {
    CHECK(Snapshot(dir) == before);
  }
}

TEST_CASE("a fault after some bytes leaves every destination as it was") {
  const uint64_t after = GENERATE(uint64_t{0}, uint64_t{64}, uint64_t{5000}, uint64_t{30000});
  CAPTURE(after);
  TempDir dir;
  const Artifact data(1), program(2);
  const std::string ptd = dir.File("m.ptd"), pte = dir.File("m.pte");
  WriteFile(pte, std::string("old program"));
  const auto before = Snapshot(dir);
  auto posix = NewPosixOutputFs(SmallWindows());
  Fault fault;
  fault.after_bytes = after;
  auto fs = NewFaultInjectingOutputFs(posix.get(), fault);
  Status s = WriteArtifactFiles(*fs, {{ptd, &data.plan}, {pte, &program.plan}});
  CHECK(s.code() == Code::kIoError);
  CHECK(Contains(s.message(), "injected fault"));
  CHECK(Snapshot(dir) == before);
}

TEST_CASE("a failing directory sync leaves the unit in place and says so") {
  TempDir dir;
  const Artifact data(1), program(2);
  const std::string ptd = dir.File("m.ptd"), pte = dir.File("m.pte");
  auto posix = NewPosixOutputFs(SmallWindows());
  Fault fault;
  fault.step = FaultStep::kDirectorySync;
  auto fs = NewFaultInjectingOutputFs(posix.get(), fault);
  Status s = WriteArtifactFiles(*fs, {{ptd, &data.plan}, {pte, &program.plan}});
  CHECK(s.code() == Code::kIoError);
  CHECK(ReadFile(ptd) == data.bytes);
  CHECK(ReadFile(pte) == program.bytes);
  CHECK(dir.List() == std::set<std::string>{"m.ptd", "m.pte"});
}

// The same steps one level down: the system call behind each fails inside
// the POSIX output (a window that cannot be mapped included).
TEST_CASE("a failing system call at any step leaves the destination as it was") {
  const FaultStep step =
      GENERATE(FaultStep::kReserve, FaultStep::kMap, FaultStep::kWrite, FaultStep::kSync,
               FaultStep::kLink, FaultStep::kRename, FaultStep::kDirectorySync);
  const bool existing = GENERATE(true, false);
  const bool unnamed = GENERATE(true, false);
  CAPTURE(FaultStepName(step), existing, unnamed);
  TempDir dir;
  const Artifact program(2);
  const std::string pte = dir.File("m.pte");
  if (existing) WriteFile(pte, std::string("old program"));
  const auto before = Snapshot(dir);
  struct Calls : FaultyPosixCalls {
    Calls(FaultStep step, bool unnamed) : FaultyPosixCalls(step), unnamed(unnamed) {}
    int OpenTmpfile(const char* d, int flags, mode_t mode) override {
      if (unnamed) return FaultyPosixCalls::OpenTmpfile(d, flags, mode);
      errno = EOPNOTSUPP;
      return -1;
    }
    const bool unnamed;
  } calls(step, unnamed);
  auto fs = NewPosixOutputFs(SmallWindows(), &calls);
  Status s = WriteArtifactFiles(*fs, {{pte, &program.plan}});
  CAPTURE(s.message());
  // A free destination is linked straight into place: no rename to fail.
  if (step == FaultStep::kRename && !existing) {
    CHECK(s.ok());
    CHECK(dir.List() == std::set<std::string>{"m.pte"});
    return;
  }
  REQUIRE(s.code() == Code::kIoError);
  CHECK(Contains(s.message(), pte));
  CHECK(Contains(s.message(), std::strerror(EIO)));
  if (step == FaultStep::kDirectorySync) {
    CHECK(Contains(s.message(), "written and renamed into place"));
    CHECK(dir.List() == std::set<std::string>{"m.pte"});
    CHECK(ReadFile(pte) == program.bytes);
  } else {
    CHECK(Snapshot(dir) == before);
  }
}

}  // namespace
}  // namespace etpack

namespace etpack {
namespace {

// Widens the race between two publishers of one unit: every file that gets
// its final name (linked or renamed into place) is followed by a short
// pause, as a busy machine would pause a process there.
struct SlowPlacing : PosixCalls {
  int Linkat(const char* from, const char* to) override {
    const int rc = PosixCalls::Linkat(from, to);
    if (rc == 0 && std::strstr(to, ".etpack-") == nullptr) ::usleep(2000);
    return rc;
  }
  int Rename(const char* from, const char* to) override {
    const int rc = PosixCalls::Rename(from, to);
    if (rc == 0) ::usleep(2000);
    return rc;
  }
};

ArtifactPlan Marked(const std::string& marker) {
  ArtifactPlan plan;
  plan.head.assign(marker.begin(), marker.end());
  plan.file_size = plan.head.size();
  return plan;
}

TEST_CASE("concurrent publishers of one unit never mix their files") {
  constexpr int kRounds = 40, kWriters = 4;
  TempDir dir, other;
  // The pair spans two directories: each unit locks both.
  const std::string ptd = dir.File("m.ptd"), pte = other.File("m.pte");
  SlowPlacing calls;
  OutputOptions options;
  options.sync = false;
  int mixed = 0;
  for (int round = 0; round < kRounds; ++round) {
    if (round % 2 == 1) {  // odd rounds start from free destinations
      ::unlink(ptd.c_str());
      ::unlink(pte.c_str());
    }
    std::vector<std::thread> writers;
    std::vector<Status> results(kWriters);
    for (int w = 0; w < kWriters; ++w) {
      writers.emplace_back([&, w] {
        const std::string marker =
            "round " + std::to_string(round) + " writer " + std::to_string(w);
        const ArtifactPlan data = Marked(marker + " data"), program = Marked(marker + " program");
        auto fs = NewPosixOutputFs(options, &calls);
        results[w] = WriteArtifactFiles(*fs, {{ptd, &data}, {pte, &program}});
      });
    }
    for (std::thread& t : writers) t.join();
    for (const Status& s : results) CHECK(s.ok());
    const Bytes d = ReadFile(ptd), p = ReadFile(pte);
    const std::string ds(d.begin(), d.end()), ps(p.begin(), p.end());
    INFO(ds << " / " << ps);
    CHECK(Contains(ds, " data"));
    if (ds.substr(0, ds.size() - 5) != ps.substr(0, ps.size() - 8)) ++mixed;
    CHECK(dir.List() == std::set<std::string>{"m.ptd"});
    CHECK(other.List() == std::set<std::string>{"m.pte"});
  }
  CHECK(mixed == 0);
}

// Runs `write` in a child process that SIGALRM ends after 20 s: a write
// that waits for itself (a lock taken twice) fails the test instead of
// hanging it. The child's exit code is 0 when `write` returned true.
bool FinishesInChild(const std::function<bool()>& write) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::signal(SIGALRM, SIG_DFL);
    ::alarm(20);
    ::_exit(write() ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  INFO("child status " << status << (WIFSIGNALED(status) ? " (killed: it hung)" : ""));
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Two paths to one folder through a bind mount, which realpath cannot see
// through: the unit locks the folder once (it used to wait forever for its
// own lock), and one name in it reached both ways is one file.
TEST_CASE("a unit reaching one folder by two paths (bind mount) locks it once") {
  TempDir dir;
  const std::string src = dir.File("src"), bind = dir.File("bind");
  REQUIRE(::mkdir(src.c_str(), 0755) == 0);
  REQUIRE(::mkdir(bind.c_str(), 0755) == 0);
  testing::BindMount mount(src, bind);
  if (!mount.mounted()) {
    WARN("skipped: " << mount.why());
    return;
  }
  const Artifact data(1), program(2);
  SECTION("two names: written, no wait for itself") {
    CHECK(FinishesInChild([&] {
      return WriteArtifactFiles({{bind + "/m.ptd", &data.plan}, {src + "/m.pte", &program.plan}})
          .ok();
    }));
    CHECK(ReadFile(src + "/m.ptd") == data.bytes);
    CHECK(ReadFile(src + "/m.pte") == program.bytes);
  }
  SECTION("one name both ways: the same file, refused") {
    WriteFile(src + "/x", std::string("old"));
    CHECK(FinishesInChild([&] {
      Status s = WriteArtifactFiles({{bind + "/x", &data.plan}, {src + "/x", &program.plan}});
      return s.code() == Code::kInvalidArgument && Contains(s.message(), "are the same file");
    }));
    CHECK(ReadFile(src + "/x") == Bytes{'o', 'l', 'd'});
  }
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(src)) {
    names.insert(e.path().filename().string());
  }
  CHECK(names.size() <= 2);  // no temporary left behind
}

// Another writer holds the folder's lock (this test, through its own open
// of the folder) for as long as the write runs: the write waits at the
// lock, asks `cancel` there, and stops when told, publishing nothing. The
// writer asks `cancel` once after its last progress report (before
// publishing); every later call can only come from the lock wait. If the
// wait ignored `cancel` the watchdog frees the lock after 20 s and the
// write publishes: the test then fails, without hanging.
TEST_CASE("a write waiting for another writer's folder lock stops when cancelled") {
  TempDir dir;
  const Artifact data(1);
  const std::string out = dir.File("m.ptd");
  const int held = ::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(held >= 0);
  REQUIRE(::flock(held, LOCK_EX) == 0);
  std::mutex m;
  std::condition_variable cv;
  bool done = false, freed = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(m);
    freed = !cv.wait_for(lock, std::chrono::seconds(20), [&] { return done; });
    if (freed) ::close(held);
  });
  bool finished = false;
  int asked_after = 0;
  WriteOptions options;
  options.output = SmallWindows();
  options.progress = [&](uint64_t d, uint64_t total) { finished = d == total; };
  options.cancel = [&] { return finished && ++asked_after > 1; };
  Status s = WriteArtifactFiles({{out, &data.plan}}, options);
  {
    std::lock_guard<std::mutex> lock(m);
    done = true;
  }
  cv.notify_all();
  watchdog.join();
  CAPTURE(s.message());
  CHECK(s.code() == Code::kIoError);
  CHECK(Contains(s.message(), out + ": write cancelled by the caller while waiting for another "
                                    "writer to finish publishing into "));
  CHECK(!freed);
  CHECK(dir.List().empty());
  if (!freed) ::close(held);
}

}  // namespace
}  // namespace etpack
