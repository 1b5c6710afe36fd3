// posix_calls.h (internal) — the system calls the POSIX output makes, behind
// one class so tests can make any of them fail (or count them) without
// interposing on libc. The default forwards each call to the kernel; every
// method keeps the libc contract (-1 and errno on failure).

#ifndef ETPACK_IO_POSIX_CALLS_H_
#define ETPACK_IO_POSIX_CALLS_H_

#include <fcntl.h>
#include <sys/types.h>
#include <sys/vfs.h>

#include <cstddef>
#include <cstdint>
#include <ctime>

namespace etpack {

class PosixCalls {
 public:
  virtual ~PosixCalls() = default;

  // open(dir, O_TMPFILE | flags, mode): an unnamed file in `dir`.
  virtual int OpenTmpfile(const char* dir, int flags, mode_t mode);
  virtual int Ftruncate(int fd, off_t size);
  virtual int Fallocate(int fd, int mode, off_t offset, off_t len);
  virtual void* Mmap(size_t len, int fd, off_t offset);  // shared, read-write
  virtual int Madvise(void* addr, size_t len, int advice);
  virtual ssize_t Pwrite(int fd, const void* buf, size_t n, off_t offset);
  virtual ssize_t CopyFileRange(int in_fd, loff_t* in_off, int out_fd, loff_t* out_off, size_t len);
  // ioctl(out_fd, FICLONERANGE): [out_off, +len) of out_fd shares the
  // extents of [in_off, +len) of in_fd. 0 on success.
  virtual int CloneRange(int in_fd, uint64_t in_off, int out_fd, uint64_t out_off, uint64_t len);
  virtual int Fstatfs(int fd, struct statfs* st);
  virtual int SyncFileRange(int fd, off_t offset, off_t len, unsigned flags);
  virtual int Fdatasync(int fd);
  virtual int Linkat(const char* from, const char* to);  // AT_SYMLINK_FOLLOW, both AT_FDCWD
  virtual int Rename(const char* from, const char* to);
  virtual int FsyncDirectory(int dir_fd);
  // For folders published as one unit (folder_unit.h).
  // renameat2(AT_FDCWD, from, AT_FDCWD, to, flags): RENAME_EXCHANGE swaps
  // two existing names in one step, RENAME_NOREPLACE fails with EEXIST
  // rather than replace `to`.
  virtual int Renameat2(const char* from, const char* to, unsigned flags);
  virtual int Mkdir(const char* path, mode_t mode);
  // unlinkat(dir_fd, name, flags): a file, or with AT_REMOVEDIR an empty folder.
  virtual int Unlinkat(int dir_fd, const char* name, int flags);
  virtual time_t Now();  // time(nullptr)
};

// The kernel's calls. Never null; lives for the whole process.
PosixCalls* DefaultPosixCalls();

}  // namespace etpack

#endif  // ETPACK_IO_POSIX_CALLS_H_
