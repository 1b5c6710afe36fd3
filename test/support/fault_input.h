// fault_input.h (test support) — inputs that fail on purpose, to prove that
// a read error, a short read or a file that ends early becomes a Status
// naming the file, and that nothing is published.

#ifndef ETPACK_TEST_FAULT_INPUT_H_
#define ETPACK_TEST_FAULT_INPUT_H_

#include <cerrno>
#include <cstdint>
#include <memory>

#include "etpack/input.h"

namespace etpack {

enum class InputFaultKind {
  kNone,
  kOpen,       // Open fails with `err`
  kRead,       // reads at or past file offset `at` fail with `err`
  kShortRead,  // every read returns at most `at` bytes (at least 1): not an error
  kShrink,     // the file ends at `at` for reads (Size still says what it was)
};

struct InputFault {
  InputFaultKind kind = InputFaultKind::kNone;
  uint64_t at = 0;
  int err = EIO;
};

// Forwards to `inner` except where `fault` says, for every file it opens.
// An injected failure is kIoError("injected fault: ...").
// REQUIRES: `inner` outlives the result and the files it opens.
std::unique_ptr<InputFs> NewFaultInjectingInputFs(InputFs* inner, const InputFault& fault);

}  // namespace etpack

#endif  // ETPACK_TEST_FAULT_INPUT_H_
