// posix_output.h (internal) — the POSIX outputs over a chosen set of system
// calls, for tests that make the kernel misbehave (posix_calls.h).

#ifndef ETPACK_IO_POSIX_OUTPUT_H_
#define ETPACK_IO_POSIX_OUTPUT_H_

#include <memory>

#include "etpack/output.h"
#include "io/posix_calls.h"

namespace etpack {

// As NewPosixOutputFs(options), every system call of interest going to
// `calls`. REQUIRES: `calls` outlives the file system and its outputs.
std::unique_ptr<OutputFs> NewPosixOutputFs(const OutputOptions& options, PosixCalls* calls);

}  // namespace etpack

#endif  // ETPACK_IO_POSIX_OUTPUT_H_
