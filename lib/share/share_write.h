// share_write.h (internal to share) — WriteShare with the system calls of
// its folder and files given, for tests that fail or stop a share at each
// of its publishing steps (test/share/share_unit_test.cc).

#ifndef ETPACK_SHARE_SHARE_WRITE_H_
#define ETPACK_SHARE_SHARE_WRITE_H_

#include "etpack/share.h"
#include "io/posix_calls.h"

namespace etpack {

// WriteShare(plan, options, Env{nullptr, fs}), the folder's calls and (with `fs` null)
// the POSIX outputs' made through `calls`. REQUIRES: calls != nullptr.
Status WriteShareWith(const SharePlan& plan, const WriteOptions& options, OutputFs* fs,
                      PosixCalls* calls);

}  // namespace etpack

#endif  // ETPACK_SHARE_SHARE_WRITE_H_
