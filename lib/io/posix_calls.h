// posix_calls.h (internal) — the system calls the POSIX output makes, behind
// one class so tests can make any of them fail (or count them) without
// interposing on libc. Each method names the question asked, not one
// kernel's call: posix_calls_linux.cc and posix_calls_darwin.cc answer it
// (meson picks one by host_machine.system()). Every method keeps the libc
// contract (-1 and errno on failure). Where an OS has no equivalent the
// method fails with the errno the callers already treat as "not here"
// (EOPNOTSUPP, EINVAL), so the callers' fallbacks are the only OS logic and
// tests on Linux can drive them by failing the same way.

#ifndef ETPACK_IO_POSIX_CALLS_H_
#define ETPACK_IO_POSIX_CALLS_H_

#include <fcntl.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <ctime>

namespace etpack {

// How far to push a range of written pages towards the disk.
enum class Writeback {
  kStart,  // start writing the dirty pages back; do not wait
  kWait,   // start and wait until the range is on the device
};

// The two atomic renames a folder unit needs (folder_unit.h).
enum class RenameKind {
  kSwap,       // both names exist; exchange them in one step
  kNoReplace,  // fail with EEXIST rather than replace `to`
};

class PosixCalls {
 public:
  virtual ~PosixCalls() = default;

  // An unnamed file in `dir` (flags as for open). EOPNOTSUPP where the OS
  // or file system has none: the caller then creates a named temporary.
  virtual int OpenTmpfile(const char* dir, int flags, mode_t mode);
  virtual int Ftruncate(int fd, off_t size);
  // Reserves blocks for [0, len) so writes through a mapping cannot find
  // the disk full. EOPNOTSUPP where blocks cannot be reserved.
  virtual int Preallocate(int fd, off_t len);
  // Gives back the blocks of [offset, +len) without changing the size.
  virtual int PunchHole(int fd, off_t offset, off_t len);
  virtual void* Mmap(size_t len, int fd, off_t offset);  // shared, read-write
  // Faults in [addr, +len) of a shared mapping for writing, so a disk that
  // cannot back it is reported here (EFAULT) rather than as SIGBUS later.
  // EINVAL where the OS cannot: the caller then writes with pwrite.
  virtual int PopulateWrite(void* addr, size_t len);
  virtual ssize_t Pwrite(int fd, const void* buf, size_t n, off_t offset);
  // Copies len bytes between files inside the kernel, advancing both
  // offsets (copy_file_range). EOPNOTSUPP where there is no such call.
  virtual ssize_t CopyFileRange(int in_fd, off_t* in_off, int out_fd, off_t* out_off, size_t len);
  // The whole of out_fd (empty) shares the extents of in_fd. 0 on success.
  virtual int CloneFile(int out_fd, int in_fd);
  // [out_off, +len) of out_fd shares the extents of [in_off, +len) of
  // in_fd. 0 on success.
  virtual int CloneRange(int in_fd, uint64_t in_off, int out_fd, uint64_t out_off, uint64_t len);
  // The block size extent sharing aligns to, or 0 when unknown.
  virtual uint64_t FsBlockSize(int fd);
  // EINVAL/ENOSYS where ranges cannot be written back on their own (the
  // final Fdatasync still covers everything).
  virtual int SyncFileRange(int fd, off_t offset, off_t len, Writeback how);
  // Data (and the size) on stable storage: what the output promises.
  virtual int Fdatasync(int fd);
  virtual int Linkat(const char* from, const char* to);  // AT_SYMLINK_FOLLOW, both AT_FDCWD
  virtual int Rename(const char* from, const char* to);
  virtual int FsyncDirectory(int dir_fd);
  // For folders published as one unit (folder_unit.h). EINVAL where the
  // file system cannot: the caller then renames twice.
  virtual int RenameSpecial(const char* from, const char* to, RenameKind kind);
  virtual int Mkdir(const char* path, mode_t mode);
  // unlinkat(dir_fd, name, flags): a file, or with AT_REMOVEDIR an empty folder.
  virtual int Unlinkat(int dir_fd, const char* name, int flags);
  virtual time_t Now();  // time(nullptr)
};

// The kernel's calls. Never null; lives for the whole process.
PosixCalls* DefaultPosixCalls();

// Facts about the process and its files that each OS tells differently;
// not faultable (tests drive their callers through real files).

// Whether the process may replace another user's file in a sticky folder
// (CAP_FOWNER on Linux, root elsewhere).
bool MayOverrideFileOwner();
// Whether `path` (not followed) is append-only (chattr +a, chflags uappnd),
// as far as its file system tells.
bool IsAppendOnly(const char* path);
// The umask without changing it, where the OS can tell (Linux: /proc);
// false where the caller must set and restore it.
bool ReadUmask(mode_t* mask);

// Fills `n` bytes with random ones from the kernel; false if it cannot.
bool RandomBytes(void* out, size_t n);

}  // namespace etpack

#endif  // ETPACK_IO_POSIX_CALLS_H_
