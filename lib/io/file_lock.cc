// A cancellable flock(2) wait. A blocking flock cannot be asked to stop:
// a caller whose signals only set a flag (Python's Ctrl-C, a C program's
// SIGINT handler) sees EINTR at best, and a signal delivered to another
// thread not even that. So with a cancel callback the lock is tried
// without blocking, and between tries the waiter sleeps a short, growing
// while and asks the callback: a cancel is seen within one sleep.

#include "io/file_lock.h"

#include <sys/file.h>

#include <algorithm>
#include <cerrno>
#include <ctime>

namespace etpack {

LockResult LockExclusive(int fd, const CancelFn& cancel) {
  constexpr long kFirstSleepNs = 1000000L;  // 1 ms, doubling to
  constexpr long kLastSleepNs = 50000000L;  // 50 ms
  long sleep_ns = kFirstSleepNs;
  for (;;) {
    if (::flock(fd, cancel ? LOCK_EX | LOCK_NB : LOCK_EX) == 0) return LockResult::kLocked;
    const int err = errno;
    if (err != EINTR && err != EWOULDBLOCK) return LockResult::kUnsupported;
    if (cancel && cancel()) return LockResult::kCancelled;
    if (err == EWOULDBLOCK) {
      const timespec pause{0, sleep_ns};
      ::nanosleep(&pause, nullptr);  // a signal ends it early: asked again at once
      sleep_ns = std::min(sleep_ns * 2, kLastSleepNs);
    }
  }
}

}  // namespace etpack
