// interrupts_held.h (internal to io) — keeps the interrupts a user sends
// (Ctrl-C, kill, a closed terminal) from landing in the middle of a
// publish, where they would leave a hidden name or half a unit behind.

#ifndef ETPACK_IO_INTERRUPTS_HELD_H_
#define ETPACK_IO_INTERRUPTS_HELD_H_

#include <pthread.h>
#include <signal.h>

namespace etpack {

// Blocks SIGINT, SIGTERM, SIGHUP and SIGQUIT on the calling thread for its
// lifetime (a few system calls); a held signal is delivered when it ends.
// SIGKILL cannot be blocked: what holds then is each publisher's to say.
class InterruptsHeld {
 public:
  InterruptsHeld() {
    sigset_t held;
    sigemptyset(&held);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&held, sig);
    active_ = pthread_sigmask(SIG_BLOCK, &held, &previous_) == 0;
  }
  ~InterruptsHeld() {
    if (active_) pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  InterruptsHeld(const InterruptsHeld&) = delete;
  InterruptsHeld& operator=(const InterruptsHeld&) = delete;

 private:
  sigset_t previous_;
  bool active_ = false;
};

}  // namespace etpack

#endif  // ETPACK_IO_INTERRUPTS_HELD_H_
