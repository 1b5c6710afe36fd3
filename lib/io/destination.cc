#include "io/destination.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "etpack/source.h"
#include "io/posix_calls.h"

namespace etpack {
namespace {

// As many links as the kernel follows in one path lookup.
constexpr int kMaxLinks = 40;

const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "directory";
  if (S_ISCHR(mode)) return "character device";
  if (S_ISBLK(mode)) return "block device";
  if (S_ISFIFO(mode)) return "FIFO";
  if (S_ISSOCK(mode)) return "socket";
  return "special file";
}

// Splits `path` into directory and file name, checking the name.
Status Split(const std::string& given, const std::string& path, Destination* d) {
  const size_t slash = path.rfind('/');
  d->path = path;
  d->name = slash == std::string::npos ? path : path.substr(slash + 1);
  d->dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const std::string shown = path == given ? given : given + " (a link to " + path + ")";
  if (d->name.empty() || d->name == "." || d->name == "..") {
    return InvalidArgument("output path '" + shown + "' does not name a file");
  }
  if (d->name.size() > NAME_MAX) {
    return InvalidArgument("output path " + shown + ": the file name is " +
                           std::to_string(d->name.size()) + " bytes, more than the " +
                           std::to_string(NAME_MAX) + " a directory entry can hold");
  }
  return Status::OK();
}

// rename() over a file in a sticky directory needs the caller to own the
// file or the directory, or CAP_FOWNER: what unlink would need (the kernel
// checks it at the rename, after the whole output is written).
Status CheckSticky(const std::string& shown, const Destination& d) {
  struct stat dir;
  if (::stat(d.dir.c_str(), &dir) != 0 || (dir.st_mode & S_ISVTX) == 0) return Status::OK();
  const uid_t me = ::geteuid();
  if (d.uid == me || dir.st_uid == me || MayOverrideFileOwner()) return Status::OK();
  return IoError(shown + ": cannot replace the existing file: it belongs to user " +
                     std::to_string(d.uid) + " and its directory " + d.dir +
                     " is sticky (mode +t), where only the file's owner, the directory's owner "
                     "or root may replace it",
                 EPERM);
}

// The other files rename() may not replace: an append-only file, or any
// file of an append-only directory (chattr +a). The kernel says EPERM only
// at the rename, after the whole output is written. (An immutable file,
// chattr +i, already fails the access check.)
Status CheckAttributes(const std::string& shown, const Destination& d) {
  const char* why = IsAppendOnly(d.path.c_str())  ? "it is append-only (chattr +a)"
                    : IsAppendOnly(d.dir.c_str()) ? "its directory is append-only (chattr +a)"
                                                  : nullptr;
  if (why == nullptr) return Status::OK();
  return IoError(shown + ": cannot replace the existing file: " + why, EPERM);
}

}  // namespace

// Fills d->real_dir and d->key. A directory that cannot be resolved fails
// later, when the output is made in it.
Destination WithKey(Destination d) {
  char* real = ::realpath(d.dir.c_str(), nullptr);
  if (real == nullptr) {
    d.real_dir = d.dir;
  } else {
    d.real_dir = real;
    ::free(real);
  }
  struct stat st;
  if (::stat(d.real_dir.c_str(), &st) == 0) {
    d.key = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + "/" + d.name;
  } else {
    d.key = d.real_dir + (d.real_dir == "/" ? "" : "/") + d.name;
  }
  return d;
}

Result<Destination> ResolveDestination(const std::string& path) {
  ETPACK_RETURN_IF_ERROR(CheckPathText(path, "output path"));
  Destination d;
  std::string current = path;
  for (int links = 0;; ++links) {
    ETPACK_RETURN_IF_ERROR(Split(path, current, &d));
    const std::string shown = current == path ? path : path + " (a link to " + current + ")";
    struct stat st;
    if (::lstat(current.c_str(), &st) != 0) {
      if (errno == ENOENT)
        return WithKey(d);  // a new file; its directory is checked when it is made
      return IoError(shown + ": cannot examine the output path", errno);
    }
    if (S_ISLNK(st.st_mode)) {
      if (links == kMaxLinks) return IoError(shown + ": cannot follow the output path", ELOOP);
      std::vector<char> target(static_cast<size_t>(st.st_size > 0 ? st.st_size : PATH_MAX) + 1);
      const ssize_t n = ::readlink(current.c_str(), target.data(), target.size());
      if (n < 0) return IoError(shown + ": cannot read the link", errno);
      if (static_cast<size_t>(n) >= target.size()) {
        return IoError(shown + ": the link changed while it was read", EAGAIN);
      }
      std::string next(target.data(), static_cast<size_t>(n));
      if (next.empty()) return IoError(shown + ": the link is empty", ENOENT);
      // A relative target is relative to the link's own directory.
      if (next[0] != '/' && d.dir != ".") next = (d.dir == "/" ? "/" : d.dir + "/") + next;
      current = std::move(next);
      continue;
    }
    if (!S_ISREG(st.st_mode)) {
      return InvalidArgument(shown + ": is a " + KindOf(st.st_mode) +
                             ", not a regular file; etpack replaces only regular files");
    }
    // The effective IDs decide, as for the open() cp would make.
    if (::faccessat(AT_FDCWD, current.c_str(), W_OK, AT_EACCESS) != 0) {
      return IoError(shown + ": cannot replace the existing file", errno);
    }
    d.exists = true;
    d.dev = st.st_dev;
    d.ino = st.st_ino;
    d.uid = st.st_uid;
    d.gid = st.st_gid;
    d.mode = st.st_mode;
    ETPACK_RETURN_IF_ERROR(CheckSticky(shown, d));
    ETPACK_RETURN_IF_ERROR(CheckAttributes(shown, d));
    return WithKey(d);
  }
}

}  // namespace etpack
