// End-to-end tests of where the `etpack` binary ($ETPACK_BIN) puts its
// output: a repack killed at any moment leaves nothing half-done behind, and
// a destination that is not a regular file is never replaced.

#include <catch2/catch.hpp>

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
#include <random>
#include <set>
#include <string>
#include <thread>
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
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
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

TEST_CASE("repack --external-constants killed at any moment leaves nothing half-done") {
  TempDir dir;
  // A program of some tens of MiB, so kills land while it is written.
  REQUIRE(Exit({"demo", "--size", "40MiB", "-o", dir.path()}) == 0);
  const std::string in = dir.File("demo.pte");
  TempDir out;
  const std::string pte = out.File("x.pte"), ptd = out.File("x.ptd");
  const std::vector<std::string> repack = {"repack", in, "-o", pte, "--external-constants", ptd};

  // How long an undisturbed run takes (the shortest of three, as the
  // machine may be busy), to spread the kills over it.
  int64_t full = INT64_MAX;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    REQUIRE(Exit(repack) == 0);
    full = std::min<int64_t>(full, std::chrono::duration_cast<std::chrono::microseconds>(
                                       std::chrono::steady_clock::now() - t0)
                                       .count());
  }
  REQUIRE(out.List() == std::set<std::string>{"x.ptd", "x.pte"});
  REQUIRE(Exit({"verify", pte, "--data", ptd}) == 0);

  std::mt19937 rng(12345);
  std::uniform_int_distribution<int64_t> when(0, full * 13 / 10);
  int killed = 0, left_nothing = 0;
  const std::vector<int> signals = {SIGKILL, SIGKILL, SIGKILL, SIGTERM, SIGKILL, SIGINT};
  for (int i = 0; i < 60; ++i) {
    const int sig = signals[static_cast<size_t>(i) % signals.size()];
    CAPTURE(i, sig);
    std::filesystem::remove(pte);
    std::filesystem::remove(ptd);
    const pid_t pid = Start(repack);
    std::this_thread::sleep_for(std::chrono::microseconds(when(rng)));
    ::kill(pid, sig);
    const int status = Wait(pid);
    if (WIFSIGNALED(status)) ++killed;
    // Nothing but the two outputs, never a program without its data, and
    // whatever is there complete.
    const std::set<std::string> names = out.List();
    CAPTURE(names.size());
    for (const std::string& name : names) {
      CAPTURE(name);
      CHECK((name == "x.pte" || name == "x.ptd"));
    }
    if (names.empty()) ++left_nothing;
    if (names.count("x.pte")) {
      REQUIRE(names.count("x.ptd"));
      CHECK(Exit({"verify", pte, "--data", ptd}) == 0);
    } else if (names.count("x.ptd")) {
      CHECK(Exit({"verify", ptd}) == 0);
    }
  }
  // Many kills landed before the end: the loop tested something.
  CHECK(killed >= 15);
  CHECK(left_nothing >= 10);
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
