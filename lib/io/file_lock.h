// file_lock.h (internal to io and the layers above) — an exclusive
// flock(2) whose wait the caller can cancel, for Publish()'s directory
// locks and the update's lock on the file it rewrites.

#ifndef ETPACK_IO_FILE_LOCK_H_
#define ETPACK_IO_FILE_LOCK_H_

#include <memory>
#include <string>

#include "etpack/output.h"

namespace etpack {

enum class LockResult {
  kLocked,       // held until every descriptor of that open file is closed
  kUnsupported,  // the file system cannot lock it (ENOLCK, EOPNOTSUPP, ...)
  kCancelled,    // `cancel` returned true while waiting; nothing held
};

// Takes an exclusive flock(2) on the open file `fd`, waiting while another
// open file (another process, or another open() in this one) holds it.
// Callers go on unlocked where the file system cannot lock, as before, and
// fail with a message of their own ("... cancelled by the caller while
// waiting for ...") when cancelled.
//
// While it waits, `cancel` (when given) is asked at least every 50 ms and
// at once after a signal interrupts the wait. Without `cancel` the wait
// blocks in the kernel until the lock is free (only a signal that ends the
// process ends it).
LockResult LockExclusive(int fd, const CancelFn& cancel);

// The POSIX file system's OutputFs::LockForUpdate (etpack/output.h says
// what it holds and how it fails): LockExclusive on a descriptor of its
// own, opened on `path`.
Result<std::unique_ptr<UpdateLock>> LockFileForUpdate(const std::string& path,
                                                      const CancelFn& cancel);

}  // namespace etpack

#endif  // ETPACK_IO_FILE_LOCK_H_
