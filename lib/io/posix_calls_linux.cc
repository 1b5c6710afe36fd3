// posix_calls_linux.cc — the seam's answers on Linux: the same system
// calls the output made before the seam was OS-neutral.

#include <linux/capability.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "io/posix_calls.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older headers lack the name
#endif

namespace etpack {
namespace {

// The value of `field` in /proc/self/status ("Umask", "CapEff"), without
// the blanks around it; empty where /proc is not mounted.
std::string ProcSelfStatus(const std::string& field) {
  std::string value;
  if (FILE* f = std::fopen("/proc/self/status", "re")) {
    char line[256];
    const std::string prefix = field + ":";
    while (std::fgets(line, sizeof line, f)) {
      if (std::strncmp(line, prefix.c_str(), prefix.size()) != 0) continue;
      const char* v = line + prefix.size();
      while (*v == ' ' || *v == '\t') ++v;
      value.assign(v, std::strcspn(v, "\n"));
      break;
    }
    std::fclose(f);
  }
  return value;
}

}  // namespace

int PosixCalls::OpenTmpfile(const char* dir, int flags, mode_t mode) {
  return ::open(dir, O_TMPFILE | flags, mode);
}
int PosixCalls::Ftruncate(int fd, off_t size) { return ::ftruncate(fd, size); }
int PosixCalls::Preallocate(int fd, off_t len) { return ::fallocate(fd, 0, 0, len); }
int PosixCalls::PunchHole(int fd, off_t offset, off_t len) {
  return ::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, len);
}
void* PosixCalls::Mmap(size_t len, int fd, off_t offset) {
  return ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset);
}
int PosixCalls::PopulateWrite(void* addr, size_t len) {
  return ::madvise(addr, len, MADV_POPULATE_WRITE);
}
ssize_t PosixCalls::Pwrite(int fd, const void* buf, size_t n, off_t offset) {
  return ::pwrite(fd, buf, n, offset);
}
ssize_t PosixCalls::CopyFileRange(int in_fd, off_t* in_off, int out_fd, off_t* out_off,
                                  size_t len) {
  loff_t in = *in_off;
  loff_t out = *out_off;
  const ssize_t got = ::copy_file_range(in_fd, &in, out_fd, &out, len, 0);
  *in_off = static_cast<off_t>(in);
  *out_off = static_cast<off_t>(out);
  return got;
}
int PosixCalls::CloneFile(int out_fd, int in_fd) { return ::ioctl(out_fd, FICLONE, in_fd); }
int PosixCalls::CloneRange(int in_fd, uint64_t in_off, int out_fd, uint64_t out_off, uint64_t len) {
  struct file_clone_range arg;
  arg.src_fd = in_fd;
  arg.src_offset = in_off;
  arg.src_length = len;
  arg.dest_offset = out_off;
  return ::ioctl(out_fd, FICLONERANGE, &arg);
}
uint64_t PosixCalls::FsBlockSize(int fd) {
  struct statfs st;
  return ::fstatfs(fd, &st) == 0 && st.f_bsize > 0 ? static_cast<uint64_t>(st.f_bsize) : 0;
}
int PosixCalls::SyncFileRange(int fd, off_t offset, off_t len, Writeback how) {
  const unsigned flags =
      how == Writeback::kStart
          ? SYNC_FILE_RANGE_WRITE
          : SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER;
  return ::sync_file_range(fd, offset, len, flags);
}
int PosixCalls::Fdatasync(int fd) { return ::fdatasync(fd); }
int PosixCalls::Linkat(const char* from, const char* to) {
  return ::linkat(AT_FDCWD, from, AT_FDCWD, to, AT_SYMLINK_FOLLOW);
}
int PosixCalls::Rename(const char* from, const char* to) { return std::rename(from, to); }
int PosixCalls::FsyncDirectory(int dir_fd) { return ::fsync(dir_fd); }
int PosixCalls::RenameSpecial(const char* from, const char* to, RenameKind kind) {
  return ::renameat2(AT_FDCWD, from, AT_FDCWD, to,
                     kind == RenameKind::kSwap ? RENAME_EXCHANGE : RENAME_NOREPLACE);
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

bool RandomBytes(void* out, size_t n) { return ::getrandom(out, n, 0) == static_cast<ssize_t>(n); }

// The effective capability set, read from /proc (no libcap). Without
// /proc: whether the process runs as root.
bool MayOverrideFileOwner() {
  const std::string caps = ProcSelfStatus("CapEff");
  if (caps.empty()) return ::geteuid() == 0;
  return (std::strtoull(caps.c_str(), nullptr, 16) >> CAP_FOWNER) & 1;
}

bool IsAppendOnly(const char* path) {
  struct statx stx;
  if (::statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &stx) != 0) return false;
  return (stx.stx_attributes_mask & STATX_ATTR_APPEND) != 0 &&
         (stx.stx_attributes & STATX_ATTR_APPEND) != 0;
}

bool ReadUmask(mode_t* mask) {
  const std::string text = ProcSelfStatus("Umask");
  if (text.empty()) return false;
  *mask = static_cast<mode_t>(std::strtoul(text.c_str(), nullptr, 8));
  return true;
}

}  // namespace etpack
