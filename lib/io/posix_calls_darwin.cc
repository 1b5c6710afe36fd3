// posix_calls_darwin.cc — the seam's answers on macOS. Calls with no
// macOS equivalent fail with the errno the callers already read as "not
// here", so the fallbacks they take are the ones the Linux tests drive
// (test/io/darwin_paths_test.cc): a named temporary instead of an unnamed
// one, pwrite instead of mapped writes, plain copies instead of ranges.

#include <sys/attr.h>
#include <sys/clonefile.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "io/posix_calls.h"

namespace etpack {
namespace {

int Unsupported(int err) {
  errno = err;
  return -1;
}

}  // namespace

// No O_TMPFILE: the caller creates a named temporary (posix_temp_file.h).
int PosixCalls::OpenTmpfile(const char*, int, mode_t) { return Unsupported(EOPNOTSUPP); }
int PosixCalls::Ftruncate(int fd, off_t size) { return ::ftruncate(fd, size); }
// F_PREALLOCATE reserves blocks past the end of file; the caller's
// ftruncate already set the size, so ask for all of [0, len).
int PosixCalls::Preallocate(int fd, off_t len) {
  fstore_t store = {};
  store.fst_flags = F_ALLOCATEALL;
  store.fst_posmode = F_PEOFPOSMODE;
  store.fst_offset = 0;
  store.fst_length = len;
  if (::fcntl(fd, F_PREALLOCATE, &store) == 0) return 0;
  if (errno == ENOSPC || errno == EDQUOT || errno == EFBIG) return -1;  // the caller reports these
  return Unsupported(EOPNOTSUPP);  // no reservation: the caller stops mapping
}
int PosixCalls::PunchHole(int fd, off_t offset, off_t len) {
  fpunchhole_t hole = {};
  hole.fp_offset = offset;
  hole.fp_length = len;
  return ::fcntl(fd, F_PUNCHHOLE, &hole);
}
void* PosixCalls::Mmap(size_t len, int fd, off_t offset) {
  return ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset);
}
// No way to fault pages in and learn of a full disk before a store does
// (which would be SIGBUS): EINVAL makes the caller write with pwrite.
int PosixCalls::PopulateWrite(void*, size_t) { return Unsupported(EINVAL); }
ssize_t PosixCalls::Pwrite(int fd, const void* buf, size_t n, off_t offset) {
  return ::pwrite(fd, buf, n, offset);
}
ssize_t PosixCalls::CopyFileRange(int, off_t*, int, off_t*, size_t) {
  return Unsupported(EOPNOTSUPP);
}
// fclonefileat shares a whole file but only by creating a new name, while
// the output already holds an open file: report "cannot" so the caller
// copies. Ranges cannot be cloned on APFS at all.
int PosixCalls::CloneFile(int, int) { return Unsupported(EOPNOTSUPP); }
int PosixCalls::CloneRange(int, uint64_t, int, uint64_t, uint64_t) {
  return Unsupported(EOPNOTSUPP);
}
uint64_t PosixCalls::FsBlockSize(int fd) {
  struct statfs st;
  return ::fstatfs(fd, &st) == 0 && st.f_bsize > 0 ? static_cast<uint64_t>(st.f_bsize) : 0;
}
// No range write-back; the final Fdatasync covers everything.
int PosixCalls::SyncFileRange(int, off_t, off_t, Writeback) { return Unsupported(ENOSYS); }
// fsync on macOS only reaches the drive's cache; F_FULLFSYNC asks the drive
// to flush it, which is what "durable" means. File systems without it
// (some network ones) get fsync.
int PosixCalls::Fdatasync(int fd) {
  if (::fcntl(fd, F_FULLFSYNC) == 0) return 0;
  return ::fsync(fd);
}
int PosixCalls::Linkat(const char* from, const char* to) {
  return ::linkat(AT_FDCWD, from, AT_FDCWD, to, AT_SYMLINK_FOLLOW);
}
int PosixCalls::Rename(const char* from, const char* to) { return std::rename(from, to); }
int PosixCalls::FsyncDirectory(int dir_fd) {
  if (::fcntl(dir_fd, F_FULLFSYNC) == 0) return 0;
  return ::fsync(dir_fd);
}
// renamex_np fails with ENOTSUP where the volume lacks the flag; on macOS
// that is not EOPNOTSUPP, the value the caller's two-rename fallback reads.
int PosixCalls::RenameSpecial(const char* from, const char* to, RenameKind kind) {
  if (::renamex_np(from, to, kind == RenameKind::kSwap ? RENAME_SWAP : RENAME_EXCL) == 0) return 0;
  return errno == ENOTSUP ? Unsupported(EOPNOTSUPP) : -1;
}
int PosixCalls::Mkdir(const char* path, mode_t mode) { return ::mkdir(path, mode); }
int PosixCalls::Unlinkat(int dir_fd, const char* name, int flags) {
  return ::unlinkat(dir_fd, name, flags);
}
time_t PosixCalls::Now() { return ::time(nullptr); }

PosixCalls* DefaultPosixCalls() {
  static PosixCalls* const calls = new PosixCalls();
  return calls;
}

// getentropy takes at most 256 bytes a call.
bool RandomBytes(void* out, size_t n) {
  auto* p = static_cast<unsigned char*>(out);
  for (size_t done = 0; done < n;) {
    const size_t chunk = n - done < 256 ? n - done : 256;
    if (::getentropy(p + done, chunk) != 0) return false;
    done += chunk;
  }
  return true;
}

bool MayOverrideFileOwner() { return ::geteuid() == 0; }

bool IsAppendOnly(const char* path) {
  struct stat st;
  return ::lstat(path, &st) == 0 && (st.st_flags & (UF_APPEND | SF_APPEND)) != 0;
}

// No /proc: the caller sets and restores the umask (posix_temp_file.cc
// says what that races with).
bool ReadUmask(mode_t*) { return false; }

}  // namespace etpack
