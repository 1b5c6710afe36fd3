// A write killed at one of its publishing steps: the test hook the shipped
// library does not have (io/posix_calls.h), for the kill tests of units of
// files (io/publish_unit_test.cc) and of shares (share/share_unit_test.cc),
// each of which kills a write at every step in turn.
#ifndef ETPACK_TEST_KILL_AT_H_
#define ETPACK_TEST_KILL_AT_H_

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include "catch.h"

#include "etpack/status.h"
#include "io/posix_calls.h"

namespace etpack::testing {

// The process ends with SIGKILL right before its `kill_at`-th publishing
// step: a file synced, linked, renamed or removed, a folder made, synced or
// exchanged. Without an atomic exchange (`exchange` false) RenameSpecial
// fails with EINVAL, as on file systems that lack it.
class KillAt : public PosixCalls {
 public:
  explicit KillAt(int kill_at, bool exchange = true) : kill_at_(kill_at), exchange_(exchange) {}

  int Fdatasync(int fd) override { return Step(), PosixCalls::Fdatasync(fd); }
  int Linkat(const char* f, const char* t) override { return Step(), PosixCalls::Linkat(f, t); }
  int Rename(const char* f, const char* t) override { return Step(), PosixCalls::Rename(f, t); }
  int FsyncDirectory(int fd) override { return Step(), PosixCalls::FsyncDirectory(fd); }
  int Mkdir(const char* p, mode_t m) override { return Step(), PosixCalls::Mkdir(p, m); }
  int Unlinkat(int d, const char* n, int flags) override {
    return Step(), PosixCalls::Unlinkat(d, n, flags);
  }
  int RenameSpecial(const char* f, const char* t, RenameKind kind) override {
    Step();
    if (!exchange_) {
      errno = EINVAL;
      return -1;
    }
    return PosixCalls::RenameSpecial(f, t, kind);
  }

 private:
  void Step() {
    if (++steps_ == kill_at_) ::raise(SIGKILL);
  }
  const int kill_at_;
  const bool exchange_;
  int steps_ = 0;
};

// Runs `write` in a child whose system calls are KillAt(kill_at, exchange);
// true when it was killed, false when it finished (successfully) first.
inline bool KilledAt(int kill_at, const std::function<Status(PosixCalls*)>& write,
                     bool exchange = true) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {  // no Catch2 here
    KillAt calls(kill_at, exchange);
    ::_exit(write(&calls).ok() ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  if (WIFSIGNALED(status)) {
    REQUIRE(WTERMSIG(status) == SIGKILL);
    return true;
  }
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  return false;
}

}  // namespace etpack::testing

#endif  // ETPACK_TEST_KILL_AT_H_
