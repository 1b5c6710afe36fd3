#include "io/posix_calls.h"

#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

namespace etpack {

int PosixCalls::OpenTmpfile(const char* dir, int flags, mode_t mode) {
  return ::open(dir, O_TMPFILE | flags, mode);
}
int PosixCalls::Ftruncate(int fd, off_t size) { return ::ftruncate(fd, size); }
int PosixCalls::Fallocate(int fd, int mode, off_t offset, off_t len) {
  return ::fallocate(fd, mode, offset, len);
}
void* PosixCalls::Mmap(size_t len, int fd, off_t offset) {
  return ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset);
}
int PosixCalls::Madvise(void* addr, size_t len, int advice) { return ::madvise(addr, len, advice); }
ssize_t PosixCalls::Pwrite(int fd, const void* buf, size_t n, off_t offset) {
  return ::pwrite(fd, buf, n, offset);
}
ssize_t PosixCalls::CopyFileRange(int in_fd, loff_t* in_off, int out_fd, loff_t* out_off,
                                  size_t len) {
  return ::copy_file_range(in_fd, in_off, out_fd, out_off, len, 0);
}
int PosixCalls::CloneRange(int in_fd, uint64_t in_off, int out_fd, uint64_t out_off, uint64_t len) {
  struct file_clone_range arg;
  arg.src_fd = in_fd;
  arg.src_offset = in_off;
  arg.src_length = len;
  arg.dest_offset = out_off;
  return ::ioctl(out_fd, FICLONERANGE, &arg);
}
int PosixCalls::Fstatfs(int fd, struct statfs* st) { return ::fstatfs(fd, st); }
int PosixCalls::SyncFileRange(int fd, off_t offset, off_t len, unsigned flags) {
  return ::sync_file_range(fd, offset, len, flags);
}
int PosixCalls::Fdatasync(int fd) { return ::fdatasync(fd); }
int PosixCalls::Linkat(const char* from, const char* to) {
  return ::linkat(AT_FDCWD, from, AT_FDCWD, to, AT_SYMLINK_FOLLOW);
}
int PosixCalls::Rename(const char* from, const char* to) { return std::rename(from, to); }
int PosixCalls::FsyncDirectory(int dir_fd) { return ::fsync(dir_fd); }
int PosixCalls::Renameat2(const char* from, const char* to, unsigned flags) {
  return ::renameat2(AT_FDCWD, from, AT_FDCWD, to, flags);
}
int PosixCalls::Mkdir(const char* path, mode_t mode) { return ::mkdir(path, mode); }
int PosixCalls::Unlinkat(int dir_fd, const char* name, int flags) {
  return ::unlinkat(dir_fd, name, flags);
}

PosixCalls* DefaultPosixCalls() {
  static PosixCalls* const calls = new PosixCalls();
  return calls;
}

time_t PosixCalls::Now() { return ::time(nullptr); }

}  // namespace etpack
