// End-to-end tests of where the `etpack` binary ($ETPACK_BIN) puts its
// output: a writing command killed at any moment leaves nothing half-done
// behind, and a destination that is not a regular file is never replaced.

#include "catch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "test_files.h"

namespace {

using etpack::testing::Golden;
using etpack::testing::TempDir;

std::string Bin() {
  const char* bin = std::getenv("ETPACK_BIN");
  REQUIRE(bin != nullptr);
  return bin;
}

// Starts the binary with `args`, its output discarded, signals as a shell
// would leave them (default dispositions, nothing blocked).
pid_t Start(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {Bin()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> ptrs;
  for (std::string& a : argv) ptrs.push_back(a.data());
  ptrs.push_back(nullptr);
  // Signals stay blocked from before the fork until the child has reset
  // their dispositions: a kill landing in between then waits for the
  // default action instead of running this test's handlers in the child.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) {
      ::dup2(null, 1);
      ::dup2(null, 2);
    }
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) ::signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execv(ptrs[0], ptrs.data());
    ::_exit(127);
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  REQUIRE(pid >= 0);
  return pid;
}

int Wait(pid_t pid) {
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return status;
}

int Exit(const std::vector<std::string>& args) {
  const int status = Wait(Start(args));
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

// A job of each writing command, a few MiB each, and the folder it writes.
struct KillJob {
  std::vector<std::string> args;
  std::vector<std::string> outputs;                   // file names, in publish order
  bool artifact = true;                               // `verify` reads the last output
  std::map<std::string, std::vector<uint8_t>> fresh;  // what an undisturbed run writes
  int64_t micros = INT64_MAX;                         // the shortest undisturbed run
};

// The tokens input of the demo program: LONG [1, 64], zeros.
void WriteDemoCases(const std::string& path) {
  std::ofstream(path) << R"({"methods": {"forward": [{"inputs": [{"tensor": {"dtype": "LONG", )"
                      << R"("sizes": [1, 64], "base64": ")" << std::string(680, 'A') << "AAA="
                      << R"("}}]}]}})";
}

int64_t MicrosSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                               t0)
      .count();
}

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// 120 runs of the binary, each killed after a random delay spread over
// before, during and after its write, the destinations free or holding old
// files: each destination is then the old file, byte for byte (or still
// absent), or the new file, complete (and accepted by `verify`, for an artifact), and nothing
// else is in the folder. The one name a kill can leave is documented
// (posix_temp_file.cc): between linking an output under a hidden name and
// renaming it over an existing file, a SIGKILL leaves the complete new file
// as ".NAME.etpack-linked-XXXXXX", removed by a later write to NAME.
TEST_CASE("writing commands killed at random moments leave each destination old or new") {
  TempDir in;
  REQUIRE(Exit({"demo", "--size", "4MiB", "-o", in.path()}) == 0);
  WriteDemoCases(in.File("cases.json"));
  etpack::testing::WriteFile(in.File("w.safetensors"), etpack::testing::F32Safetensors(1 << 20));
  REQUIRE(Exit({"bundle", in.File("demo.pte"), "--cases", in.File("cases.json"), "-o",
                in.File("demo.bpte")}) == 0);
  REQUIRE(Exit({"compress", in.File("demo.pte"), "-o", in.File("demo.pte.zst")}) == 0);
  TempDir out;
  const std::string dir = out.path() + "/";
  auto make = [](std::vector<std::string> args, std::vector<std::string> outputs,
                 bool artifact = true) {
    KillJob j;
    j.args = std::move(args);
    j.outputs = std::move(outputs);
    j.artifact = artifact;
    return j;
  };
  std::vector<KillJob> jobs = {
      make({"repack", in.File("demo.pte"), "-o", dir + "x.pte", "--segment-alignment", "4096"},
           {"x.pte"}),
      make({"repack", in.File("demo.pte"), "-o", dir + "x.pte", "--external-constants",
            dir + "x.ptd"},
           {"x.ptd", "x.pte"}),
      make({"ptd", in.File("w.safetensors"), "-o", dir + "x.ptd"}, {"x.ptd"}),
      make({"bundle", in.File("demo.pte"), "--cases", in.File("cases.json"), "-o", dir + "x.bpte"},
           {"x.bpte"}),
      make({"unbundle", in.File("demo.bpte"), "-o", dir + "x.pte"}, {"x.pte"}),
      make({"compress", in.File("demo.pte"), "-o", dir + "x.zst"}, {"x.zst"}, false),
      make({"decompress", in.File("demo.pte.zst"), "-o", dir + "x.pte"}, {"x.pte"}),
  };
  auto clear = [&] {
    for (const std::string& name : out.List()) std::filesystem::remove(out.File(name));
  };
  auto verify = [&](const KillJob& job) {
    if (!job.artifact) return 0;  // an archive: its bytes are compared with a fresh run's
    std::vector<std::string> args = {"verify", out.File(job.outputs.back())};
    if (job.outputs.size() == 2) args.insert(args.end(), {"--data", out.File(job.outputs[0])});
    return Exit(args);
  };
  // The new files, and how long an undisturbed run takes (the shortest of
  // three, as the machine may be busy), to spread the kills over twice that:
  // on a machine slower in the loop than here many runs still finish.
  for (KillJob& job : jobs) {
    CAPTURE(job.args[0]);
    for (int i = 0; i < 3; ++i) {
      clear();
      const auto t0 = std::chrono::steady_clock::now();
      REQUIRE(Exit(job.args) == 0);
      job.micros = std::min(job.micros, MicrosSince(t0));
    }
    REQUIRE(out.List() == std::set<std::string>(job.outputs.begin(), job.outputs.end()));
    REQUIRE(verify(job) == 0);
    for (const std::string& name : job.outputs) {
      job.fresh[name] = etpack::testing::ReadFile(out.File(name));
    }
  }

  std::mt19937 rng(12345);
  const std::vector<int> signals = {SIGKILL, SIGKILL, SIGKILL, SIGTERM, SIGKILL, SIGINT, SIGKILL};
  int killed = 0, kept_old = 0, got_new = 0, hidden_links = 0;
  for (int i = 0; i < 120; ++i) {
    const KillJob& job = jobs[static_cast<size_t>(i) % jobs.size()];
    const int sig = signals[static_cast<size_t>(i) % signals.size()];
    const bool existing = (i / static_cast<int>(jobs.size())) % 2 == 1;
    CAPTURE(i, job.args[0], sig, existing);
    clear();
    std::map<std::string, std::vector<uint8_t>> old;
    if (existing) {
      for (const std::string& name : job.outputs) {
        old[name].assign(name.begin(), name.end());  // not an artifact
        etpack::testing::WriteFile(out.File(name), old[name]);
      }
    }
    const pid_t pid = Start(job.args);
    std::this_thread::sleep_for(
        std::chrono::microseconds(std::uniform_int_distribution<int64_t>(0, 2 * job.micros)(rng)));
    ::kill(pid, sig);
    const int status = Wait(pid);
    if (WIFSIGNALED(status)) ++killed;

    int is_new = 0, is_old = 0, markers = 0;
    for (const std::string& name : out.List()) {
      CAPTURE(name);
      const auto output = std::find(job.outputs.begin(), job.outputs.end(), name);
      if (output == job.outputs.end()) {
        // Only the documented hidden link, or the publishing marker of a
        // unit of two files (output.h, Publish), and only over existing files.
        bool link = false, marker = false;
        for (const std::string& o : job.outputs) {
          link = link || StartsWith(name, "." + o + ".etpack-linked-");
          marker = marker || (job.outputs.size() == 2 && name == "." + o + ".etpack-publishing");
        }
        CHECK((link || marker));
        CHECK(existing);
        hidden_links += link ? 1 : 0;
        markers += marker ? 1 : 0;
        continue;
      }
      const std::vector<uint8_t> now = etpack::testing::ReadFile(out.File(name));
      if (now == job.fresh.at(name)) {
        ++is_new;
      } else {
        CHECK((existing && now == old[name]));
        ++is_old;
      }
    }
    CHECK((existing || is_old == 0));
    if (is_new == static_cast<int>(job.outputs.size())) {
      // A marker left beside the unit makes verify refuse it until written again.
      CHECK((verify(job) == 0) == (markers == 0));
      ++got_new;
    } else if (is_new > 0) {
      // Never a program without its data: the .ptd is placed first.
      REQUIRE(job.outputs.size() == 2);
      CHECK(etpack::testing::ReadFile(out.File("x.ptd")) == job.fresh.at("x.ptd"));
    }
    if (existing && is_new == 0) ++kept_old;
    // A run that finished wrote everything.
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      CHECK(is_new == static_cast<int>(job.outputs.size()));
    }
  }
  // The kills landed before, during and after writing: the loop tested something.
  CAPTURE(killed, kept_old, got_new, hidden_links);
  CHECK(killed >= 20);
  CHECK(kept_old >= 10);
  CHECK(got_new >= 5);
  WARN("killed " << killed << " of 120 runs; old files kept " << kept_old << ", new in place "
                 << got_new << ", hidden links left " << hidden_links);
}

TEST_CASE("repack -o /dev/null fails and leaves the device alone (as root)") {
  if (::geteuid() != 0) {
    SUCCEED("without root /dev/null cannot be replaced anyway");
    return;
  }
  CHECK(Exit({"repack", Golden("pte_constants.pte"), "-o", "/dev/null"}) == 1);
  struct stat st;
  REQUIRE(::stat("/dev/null", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  CHECK(st.st_rdev == makedev(1, 3));
}

TEST_CASE("repack through a symbolic link replaces the file it points to") {
  TempDir dir;
  const std::string target = dir.File("real.pte"), link = dir.File("link.pte");
  REQUIRE(Exit({"repack", Golden("pte_constants.pte"), "-o", target}) == 0);
  REQUIRE(::symlink("real.pte", link.c_str()) == 0);
  REQUIRE(Exit({"repack", Golden("pte_constants.pte"), "-o", link, "--segment-alignment",
                "4096"}) == 0);
  struct stat st;
  REQUIRE(::lstat(link.c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));
  CHECK(Exit({"verify", target}) == 0);
  CHECK(dir.List() == std::set<std::string>{"link.pte", "real.pte"});
}

}  // namespace
