// The temporary file of a POSIX output, from its creation beside the
// destination to its rename over it (see posix_temp_file.h).

#include "io/posix_temp_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "core/range_text.h"
#include "io/publish_marker.h"

namespace etpack {
namespace {

// ".<name>.etpack-XXXXXX": what the temporary name adds to the output name.
// The longer of the two kinds of temporary name decides how much of the
// output name fits.
constexpr size_t kTempExtra = 1 + sizeof(".etpack-linked-XXXXXX") - 1;
// A finished output that replaces a file is linked under a hidden name
// ".<name>.etpack-linked-XXXXXX" and renamed onto the file a few system
// calls later. A process killed between the two leaves that name behind;
// the next output to the same destination removes it once its inode change
// time (set by the link) is this old, which no live publish can be.
constexpr time_t kOrphanAgeSeconds = 60;

// Whether `name` is `prefix` and six more characters.
bool HasTempPattern(const std::string& name, const std::string& prefix) {
  return name.size() == prefix.size() + 6 && name.compare(0, prefix.size(), prefix) == 0;
}

// A named temporary (".<name>.etpack-XXXXXX", where the OS has no unnamed
// files) is written for as long as the output takes, so its age says
// nothing; its writer holds an flock on it instead, which the kernel drops
// when the writer dies. True when no process holds it.
bool Abandoned(int dir_fd, const std::string& name, const struct stat& st) {
  const int fd = ::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat now;
  const bool free = ::fstat(fd, &now) == 0 && now.st_ino == st.st_ino && now.st_dev == st.st_dev &&
                    ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  ::close(fd);
  return free;
}

// Removes orphaned temporaries of this user for one destination from `dir`:
// linked names (".etpack-linked-XXXXXX") linked long ago, and named
// temporaries (".etpack-XXXXXX") made long ago that no live writer holds.
// Only those patterns, only regular files.
void RemoveOrphans(const std::string& dir, const std::string& temp_prefix, time_t now) {
  const std::string stem = temp_prefix.substr(temp_prefix.rfind('/') + 1);
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    const bool linked = HasTempPattern(name, stem + "linked-");
    if (!linked && !HasTempPattern(name, stem)) continue;
    struct stat st;
    if (::fstatat(::dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) continue;
    if (now - st.st_ctime < kOrphanAgeSeconds) continue;
    if (!linked && !Abandoned(::dirfd(d), name, st)) continue;
    (void)::unlinkat(::dirfd(d), name.c_str(), 0);
  }
  ::closedir(d);
}

// Asks the OS first because umask() can only be read by setting it, which
// races with other threads creating files.
mode_t CurrentUmask() {
  mode_t mask;
  if (ReadUmask(&mask)) return mask;
  mask = ::umask(022);
  ::umask(mask);
  return mask;
}

// The name through which an unnamed (O_TMPFILE) file can be linked.
std::string ProcFdPath(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

// Gives the new file `fd` what the file it replaces has and cp keeps: its
// owner and group (output.h says why a replacement that cannot keep them is
// refused), then its mode (after the chown, which clears set-ID bits).
Status TakeOver(int fd, const Destination& target, mode_t mode) {
  if (target.exists) {
    struct stat now;
    if (::fstat(fd, &now) != 0)
      return IoError("cannot examine the new file for " + target.path, errno);
    if ((now.st_uid != target.uid || now.st_gid != target.gid) &&
        ::fchown(fd, target.uid, target.gid) != 0) {
      return IoError(target.path + ": cannot replace the existing file of user " +
                         std::to_string(target.uid) + ", group " + std::to_string(target.gid) +
                         ": its replacement would belong to user " + std::to_string(now.st_uid) +
                         ", group " + std::to_string(now.st_gid) +
                         " (only root may give a file away); remove it first to write a file "
                         "of your own",
                     errno);
    }
  }
  if (::fchmod(fd, mode) != 0) {
    return IoError("cannot set the mode of the new file for " + target.path, errno);
  }
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<PosixTempFile>> PosixTempFile::Create(const std::string& destination,
                                                             bool sync, PosixCalls* calls) {
  ETPACK_ASSIGN_OR_RETURN(Destination target, ResolveDestination(destination));
  const std::string prefix = target.path.substr(0, target.path.size() - target.name.size());
  // Only a prefix of a long name goes into the temporary name, which must
  // fit NAME_MAX too.
  const std::string stem = "." + target.name.substr(0, NAME_MAX - kTempExtra);
  const std::string temp_prefix = prefix + stem + ".etpack-";
  RemoveOrphans(target.dir, temp_prefix, calls->Now());
  // A replaced file keeps its mode, as cp keeps it; a new one gets 0666
  // less the umask, as for any new file.
  const mode_t mode = target.exists ? (target.mode & 07777) : (0666 & ~CurrentUmask());
  const int unnamed = calls->OpenTmpfile(target.dir.c_str(), O_RDWR | O_CLOEXEC, 0666);
  if (unnamed >= 0) {
    if (::access(ProcFdPath(unnamed).c_str(), F_OK) == 0) {
      Status owned = TakeOver(unnamed, target, mode);
      if (!owned.ok()) {
        ::close(unnamed);
        return owned;
      }
      return std::unique_ptr<PosixTempFile>(new PosixTempFile(
          std::move(target), temp_prefix + "linked-", std::string(), unnamed, sync, calls));
    }
    ::close(unnamed);  // could not be linked by Publish()
  }
  // Any failure of O_TMPFILE (unsupported, or the directory is missing,
  // which mkostemp then reports) falls back to a named temporary file.
  std::string temp = temp_prefix + "XXXXXX";
  std::vector<char> buf(temp.begin(), temp.end());
  buf.push_back('\0');
  const int fd = ::mkostemp(buf.data(), O_CLOEXEC);
  if (fd < 0) {
    return IoError("cannot create a temporary file in " + target.dir + " for " + destination,
                   errno);
  }
  temp.assign(buf.data());
  // Held until the file is closed: what tells a later run this temporary
  // is not an orphan (RemoveOrphans). A file system without flock only
  // loses that cleanup.
  (void)::flock(fd, LOCK_EX | LOCK_NB);
  Status owned = TakeOver(fd, target, mode);
  if (!owned.ok()) {
    ::close(fd);
    ::unlink(temp.c_str());
    return owned;
  }
  return std::unique_ptr<PosixTempFile>(
      new PosixTempFile(std::move(target), temp_prefix, std::move(temp), fd, sync, calls));
}

PosixTempFile::PosixTempFile(Destination target, std::string temp_prefix, std::string temp, int fd,
                             bool sync, PosixCalls* calls)
    : target_(std::move(target)),
      temp_prefix_(std::move(temp_prefix)),
      temp_(std::move(temp)),
      fd_(fd),
      sync_(sync),
      calls_(calls) {}

// A file in place has no temporary name left: Link() and Rename() clear it
// once the file holds its destination's name.
PosixTempFile::~PosixTempFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

std::string PosixTempFile::Text() const {
  return temp_.empty() ? "the unnamed temporary file in " + target_.dir : temp_;
}

Status PosixTempFile::WriteError(const std::string& call, uint64_t offset, uint64_t n,
                                 int err) const {
  return IoError(
      path() + ": " + call + " of " + RangeText(offset, n) + " into " + Text() + " failed", err);
}

bool PosixTempFile::Replaces(int fd) const {
  struct stat st;
  return target_.exists && ::fstat(fd, &st) == 0 && st.st_dev == target_.dev &&
         st.st_ino == target_.ino;
}

Status PosixTempFile::ReplaceOnly(int fd) {
  if (!Replaces(fd)) return Replaced();
  replace_only_ = true;
  return Status::OK();
}

// What ReplaceOnly() promised, checked under the directory lock.
Status PosixTempFile::CheckReplaceOnly() const {
  struct stat st;
  if (!replace_only_) return Status::OK();
  if (::lstat(path().c_str(), &st) != 0 || st.st_dev != target_.dev || st.st_ino != target_.ino) {
    return Replaced();
  }
  return Status::OK();
}

Status PosixTempFile::Replaced() const {
  return Status(Code::kIoError,
                path() +
                    ": another writer replaced or removed the file since it was read; "
                    "nothing was written (run again on the file as it is now)");
}

// A free destination is taken directly, so the new file never has any
// other name; linkat (unlike rename) fails rather than replace a file.
Status PosixTempFile::Link(bool* placed_free) {
  ETPACK_RETURN_IF_ERROR(CheckReplaceOnly());
  const std::string from = temp_.empty() ? ProcFdPath(fd_) : temp_;
  if (calls_->Linkat(from.c_str(), path().c_str()) == 0) {
    if (!temp_.empty()) ::unlink(temp_.c_str());
    temp_.clear();
    Status closed = Close();
    // Failing, the step must leave nothing in place.
    if (!closed.ok()) ::unlink(path().c_str());
    *placed_free = closed.ok();
    return closed;
  }
  if (errno != EEXIST) {
    return IoError(path() + ": cannot link " + Text() + " into place", errno);
  }
  *placed_free = false;
  if (temp_.empty()) ETPACK_RETURN_IF_ERROR(NameTemporary());
  return Status::OK();
}

Status PosixTempFile::Rename() {
  ETPACK_RETURN_IF_ERROR(Close());
  if (calls_->Rename(temp_.c_str(), path().c_str()) != 0) {
    return IoError(path() + ": cannot rename " + temp_ + " into place", errno);
  }
  temp_.clear();
  return Status::OK();
}

void PosixTempFile::Unplace() { ::unlink(path().c_str()); }

Status PosixTempFile::SyncDirectory() {
  const int err = SyncFolder();
  if (err == 0) return Status::OK();
  // The one failure that leaves the new file in place (see output.h).
  return IoError(path() + " was written and renamed into place, but its directory " + target_.dir +
                     " could not be synced, so the rename may not survive a crash",
                 err);
}

// 0, or the errno of the failed open or fsync of the destination's folder
// (none when not syncing; EINVAL, a folder that cannot be synced, is none).
int PosixTempFile::SyncFolder() const {
  if (!sync_) return 0;
  const int dfd = ::open(target_.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return errno;
  const int rc = calls_->FsyncDirectory(dfd);
  const int err = errno;
  ::close(dfd);
  return rc != 0 && err != EINVAL ? err : 0;
}

std::string PosixTempFile::MarkerPath() const {
  const std::string& p = path();
  return p.substr(0, p.size() - target_.name.size()) + PublishMarkerName(target_.name);
}

bool PosixTempFile::DestinationExists() const {
  struct stat st;
  return ::lstat(path().c_str(), &st) == 0;
}

// A stale marker (a killed publish's) is kept: it was durable before that
// publish renamed anything, and a failure of this one must leave it. Only
// the marker's name must be durable before the renames (the folder's
// sync); its bytes only make the message, so they are not synced: a marker
// that lost them to a power loss still refuses ("an unknown unit").
Status PosixTempFile::Mark(const std::string& bytes) {
  const std::string marker = MarkerPath();
  const int fd = ::open(marker.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EEXIST) return Status::OK();
  if (fd < 0) return IoError(path() + ": cannot create the publishing marker " + marker, errno);
  marked_ = true;
  bool ok = calls_->Pwrite(fd, bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(bytes.size());
  int err = errno;
  if (::close(fd) != 0) ok = false, err = errno;
  if (ok && (err = SyncFolder()) == 0) return Status::OK();
  Unmark(false);
  return IoError(path() + ": cannot write the publishing marker " + marker, err);
}

void PosixTempFile::Unmark(bool unit_placed) {
  if (!marked_ && !unit_placed) return;
  (void)calls_->Unlinkat(AT_FDCWD, MarkerPath().c_str(), 0);
  marked_ = false;
}

Status PosixTempFile::Close() {
  const int fd = fd_;
  fd_ = -1;
  if (fd >= 0 && ::close(fd) != 0) return IoError(path() + ": cannot close " + Text(), errno);
  return Status::OK();
}

// Links the unnamed temporary file under a fresh hidden name, from which
// rename() can replace the destination atomically (linkat cannot). The
// suffix is random, like mkostemp's, so the name cannot be guessed ahead.
Status PosixTempFile::NameTemporary() {
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  const std::string proc = ProcFdPath(fd_);
  for (int attempt = 0; attempt < 100; ++attempt) {
    uint8_t random[6];
    if (!RandomBytes(random, sizeof random)) {
      return IoError(path() + ": cannot draw a random name for the temporary file", errno);
    }
    std::string name = temp_prefix_;
    for (uint8_t r : random) name += kChars[r % (sizeof kChars - 1)];
    if (calls_->Linkat(proc.c_str(), name.c_str()) == 0) {
      temp_ = std::move(name);
      return Status::OK();
    }
    if (errno != EEXIST) break;
  }
  return IoError(path() + ": cannot give the finished temporary file a name in " + target_.dir,
                 errno);
}

}  // namespace etpack
