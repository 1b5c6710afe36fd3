// A folder published as one unit (see folder_unit.h): built beside its
// destination, put in place by one renameat2().

#include "io/folder_unit.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <utility>

#include "io/file_lock.h"
#include "io/interrupts_held.h"

namespace etpack {
namespace {

constexpr char kMarkerHead[] = "etpack unit 1\n";
// What the staging name adds to the folder's name: ".", ".etpack-unit-",
// six random characters.
constexpr size_t kStagingExtra = 1 + sizeof(".etpack-unit-XXXXXX") - 1;

// An open descriptor closed with the object.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    ::closedir(d);
  }
  return names;
}

// etpack's hidden temporaries: ".<name>.etpack-XXXXXX",
// ".<name>.etpack-linked-XXXXXX" (posix_temp_file.cc).
bool IsTemporary(const std::string& name) {
  return name.size() > 1 && name[0] == '.' && name.find(".etpack-", 1) != std::string::npos;
}

// The names a unit's marker lists; false when `dir` holds no marker of ours.
bool ReadMarker(const std::string& dir, std::set<std::string>* names) {
  std::FILE* f = std::fopen((dir + "/" + kUnitMarker).c_str(), "re");
  if (f == nullptr) return false;
  std::string text;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
  std::fclose(f);
  if (text.compare(0, sizeof(kMarkerHead) - 1, kMarkerHead) != 0) return false;
  for (size_t at = sizeof(kMarkerHead) - 1; at < text.size();) {
    const size_t end = text.find('\n', at);
    names->insert(text.substr(at, end - at));
    at = end == std::string::npos ? text.size() : end + 1;
  }
  return true;
}

// Whether the folder `dir` may be replaced by a unit (folder_unit.h);
// `exists` says whether there is one. `shown` names it in errors.
Status CheckReplaceable(const std::string& dir, const std::string& shown, bool* exists) {
  struct stat st;
  *exists = ::lstat(dir.c_str(), &st) == 0;
  if (!*exists) {
    if (errno == ENOENT) return Status::OK();
    return IoError(shown + ": cannot examine the output folder", errno);
  }
  if (!S_ISDIR(st.st_mode)) {
    return InvalidArgument(shown +
                           ": is not a folder; the output folder must be a folder, new, "
                           "empty or one an earlier etpack share wrote");
  }
  std::set<std::string> ours;
  ReadMarker(dir, &ours);
  for (const std::string& name : Entries(dir)) {
    if (name == kUnitMarker || IsTemporary(name) || ours.count(name)) continue;
    struct stat e;
    const bool file =
        ::fstatat(AT_FDCWD, (dir + "/" + name).c_str(), &e, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(e.st_mode);
    return InvalidArgument(shown + ": holds " + name + (file ? "" : " (not a regular file)") +
                           ", which no etpack share wrote there; share replaces the whole "
                           "folder, so it writes only into a new folder, an empty one, or one "
                           "an earlier share wrote (move " +
                           name + " away or give another folder)");
  }
  return Status::OK();
}

// Six characters for a unique name.
std::string RandomSuffix() {
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  unsigned char bytes[6] = {};
  if (!RandomBytes(bytes, sizeof bytes)) {
    for (unsigned char& b : bytes) b = static_cast<unsigned char>(std::rand());
  }
  std::string s;
  for (unsigned char b : bytes) s += kChars[b % (sizeof(kChars) - 1)];
  return s;
}

// Removes the files of `dir`, then `dir`, all through `calls`: a unit's
// folder holds only files. What cannot be removed stays.
void RemoveFolder(const std::string& dir, PosixCalls* calls) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.get() < 0) return;
  for (const std::string& name : Entries(dir)) (void)calls->Unlinkat(fd.get(), name.c_str(), 0);
  (void)calls->Unlinkat(AT_FDCWD, dir.c_str(), AT_REMOVEDIR);
}

// The parent folder's lock: the flock(2) Publish() takes on the folders it
// publishes into, so units and files published there go one at a time.
class ParentLock {
 public:
  Status Take(const std::string& parent, const std::string& shown, const CancelFn& cancel) {
    fd_ = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_ < 0) return IoError(shown + ": cannot open its folder " + parent, errno);
    if (LockExclusive(fd_, cancel) == LockResult::kCancelled) {
      return Status(Code::kIoError, shown +
                                        ": write cancelled by the caller while waiting for "
                                        "another writer to finish publishing into " +
                                        parent);
    }
    return Status::OK();
  }
  ~ParentLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

}  // namespace

Result<std::unique_ptr<FolderUnit>> FolderUnit::Begin(const std::string& dir,
                                                      const std::vector<const Source*>& inputs,
                                                      const CancelFn& cancel, PosixCalls* calls) {
  ETPACK_RETURN_IF_ERROR(CheckPathText(dir, "the output folder"));
  std::string path = dir;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  std::unique_ptr<FolderUnit> unit(new FolderUnit(calls));
  unit->given_ = dir;
  // The parents first (the folder's own real path needs them).
  std::string lexical_parent = path.rfind('/') == std::string::npos ? "."
                               : path.rfind('/') == 0               ? "/"
                                                      : path.substr(0, path.rfind('/'));
  for (size_t at = 1; at <= lexical_parent.size(); ++at) {
    if (at != lexical_parent.size() && lexical_parent[at] != '/') continue;
    const std::string prefix = lexical_parent.substr(0, at);
    struct stat st;
    if (::stat(prefix.c_str(), &st) == 0) continue;
    if (calls->Mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST) {
      return IoError("cannot make the output folder's parent " + prefix, errno);
    }
    unit->made_parents_.push_back(prefix);
  }
  // The folder itself, links resolved: a link to a folder publishes the
  // folder it leads to, as for files.
  struct stat st;
  const bool exists = ::stat(path.c_str(), &st) == 0;
  char* real = ::realpath(exists ? path.c_str() : lexical_parent.c_str(), nullptr);
  if (real == nullptr) return IoError(dir + ": cannot resolve the output folder", errno);
  std::string resolved = real;
  ::free(real);
  if (!exists) {
    const std::string name =
        path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
    resolved += (resolved == "/" ? "" : "/") + name;
  }
  const size_t slash = resolved.rfind('/');
  const std::string name = resolved.substr(slash + 1);
  if (name.empty() || name == "." || name == "..") {
    return InvalidArgument("output folder '" + dir + "' does not name a folder");
  }
  unit->dir_ = resolved;
  unit->parent_ = slash == 0 ? "/" : resolved.substr(0, slash);
  unit->stem_ = "." + name.substr(0, NAME_MAX - kStagingExtra) + ".etpack-";
  ETPACK_RETURN_IF_ERROR(unit->CheckNotInside(inputs));
  bool present = false;
  ETPACK_RETURN_IF_ERROR(CheckReplaceable(unit->dir_, dir, &present));
  ETPACK_RETURN_IF_ERROR(unit->MakeStaging(dir, present ? st.st_mode : 0, present, cancel));
  return unit;
}

// Makes the staging folder and its marker, flocked, under the parent's
// lock: a cleaner (CleanLeftovers, under that lock too) then never sees a
// live staging folder unlocked. A folder that replaces one gets its mode.
Status FolderUnit::MakeStaging(const std::string& shown, mode_t existing_mode, bool exists,
                               const CancelFn& cancel) {
  ParentLock lock;
  ETPACK_RETURN_IF_ERROR(lock.Take(parent_, shown, cancel));
  CleanLeftovers(exists);
  for (int attempt = 0;; ++attempt) {
    const std::string candidate = parent_ + "/" + stem_ + "unit-" + RandomSuffix();
    if (calls_->Mkdir(candidate.c_str(), 0777) == 0) {
      staging_ = candidate;
      break;
    }
    if (errno != EEXIST || attempt == 100) {
      return IoError(shown + ": cannot make a folder in " + parent_ + " to build the output in",
                     errno);
    }
  }
  if (exists && ::chmod(staging_.c_str(), existing_mode & 07777) != 0) {
    return IoError(shown + ": cannot give the new folder " + staging_ + " the mode of the old",
                   errno);
  }
  const std::string marker = Staged(kUnitMarker);
  marker_fd_ = ::open(marker.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (marker_fd_ < 0 || ::flock(marker_fd_, LOCK_EX | LOCK_NB) != 0) {
    return IoError(shown + ": cannot make " + marker, errno);
  }
  return Status::OK();
}

FolderUnit::~FolderUnit() {
  if (marker_fd_ >= 0) ::close(marker_fd_);
  if (committed_) return;
  if (!staging_.empty()) RemoveFolder(staging_, calls_);
  // Only empty folders go: a parent that another writer filled meanwhile stays.
  for (auto it = made_parents_.rbegin(); it != made_parents_.rend(); ++it) {
    (void)calls_->Unlinkat(AT_FDCWD, it->c_str(), AT_REMOVEDIR);
  }
}

Status FolderUnit::CheckNotInside(const std::vector<const Source*>& inputs) const {
  std::set<std::pair<dev_t, ino_t>> inside;
  for (const std::string& name : Entries(dir_)) {
    struct stat st;
    if (::fstatat(AT_FDCWD, (dir_ + "/" + name).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      inside.insert({st.st_dev, st.st_ino});
    }
  }
  if (inside.empty()) return Status::OK();
  std::set<int> seen;
  for (const Source* in : inputs) {
    const FileRange* r = in != nullptr ? in->file_range() : nullptr;
    if (r == nullptr || !seen.insert(r->fd).second) continue;
    struct stat st;
    if (::fstat(r->fd, &st) == 0 && inside.count({st.st_dev, st.st_ino})) {
      return InvalidArgument(r->path + ": is a file of the output folder " + given_ +
                             ", which share replaces as a whole; refusing to overwrite an input");
    }
  }
  return Status::OK();
}

Status FolderUnit::Commit(const std::vector<std::string>& names, const CancelFn& cancel) {
  // By name: the same unit gives the same marker whatever the order of its files.
  std::string text = kMarkerHead;
  for (const std::string& n : std::set<std::string>(names.begin(), names.end())) text += n + "\n";
  const std::string marker = Staged(kUnitMarker);
  if (::pwrite(marker_fd_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    return IoError(given_ + ": cannot write " + marker, errno);
  }
  if (calls_->Fdatasync(marker_fd_) != 0) return IoError(given_ + ": cannot sync " + marker, errno);
  {
    Fd staging(::open(staging_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (staging.get() < 0 || calls_->FsyncDirectory(staging.get()) != 0) {
      return IoError(given_ + ": cannot sync the new folder " + staging_, errno);
    }
  }
  ParentLock lock;
  ETPACK_RETURN_IF_ERROR(lock.Take(parent_, given_, cancel));
  InterruptsHeld held;
  bool exists = false;
  ETPACK_RETURN_IF_ERROR(CheckReplaceable(dir_, given_, &exists));
  ETPACK_RETURN_IF_ERROR(Swap(exists));
  committed_ = true;
  Status synced = calls_->FsyncDirectory(lock.fd()) == 0
                      ? Status::OK()
                      : IoError(given_ +
                                    ": the new folder is in place but the rename may not survive "
                                    "a crash: cannot sync " +
                                    parent_,
                                errno);
  if (exists) RemoveFolder(staging_, calls_);  // the old unit, now at the staging name
  CleanLeftovers(true);
  return synced;
}

// The one call that decides the unit (folder_unit.h), and the two-rename
// fallback where the file system cannot exchange.
Status FolderUnit::Swap(bool exists) {
  if (calls_->RenameSpecial(staging_.c_str(), dir_.c_str(),
                            exists ? RenameKind::kSwap : RenameKind::kNoReplace) == 0) {
    return Status::OK();
  }
  if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) {
    return IoError(given_ + ": cannot put the new folder " + staging_ + " in place", errno);
  }
  if (exists) {
    const std::string old = parent_ + "/" + stem_ + "old-" + RandomSuffix();
    if (calls_->Rename(dir_.c_str(), old.c_str()) != 0) {
      return IoError(given_ + ": cannot move the old folder aside to " + old, errno);
    }
    if (calls_->Rename(staging_.c_str(), dir_.c_str()) != 0) {
      const int err = errno;
      (void)calls_->Rename(old.c_str(), dir_.c_str());
      return IoError(given_ + ": cannot put the new folder " + staging_ + " in place", err);
    }
    staging_ = old;  // what Commit() then removes
    return Status::OK();
  }
  if (calls_->Rename(staging_.c_str(), dir_.c_str()) != 0) {
    return IoError(given_ + ": cannot put the new folder " + staging_ + " in place", errno);
  }
  return Status::OK();
}

// Removes the folders of earlier units beside the folder that no live
// process holds (a live one's marker is flocked): a killed run's staging
// folder, an old folder a killed run did not finish removing. An old
// folder moved aside by the fallback stays while the folder is missing:
// it is then the only whole unit. Called under the parent's lock.
void FolderUnit::CleanLeftovers(bool dir_exists) const {
  const std::string unit_prefix = stem_ + "unit-", old_prefix = stem_ + "old-";
  for (const std::string& name : Entries(parent_)) {
    const bool staged = name.compare(0, unit_prefix.size(), unit_prefix) == 0;
    const bool old = name.compare(0, old_prefix.size(), old_prefix) == 0;
    if (!(staged || (old && dir_exists))) continue;
    const std::string path = parent_ + "/" + name;
    if (path == staging_) continue;
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
      continue;
    }
    Fd marker(::open((path + "/" + kUnitMarker).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (marker.get() >= 0 && ::flock(marker.get(), LOCK_EX | LOCK_NB) != 0) continue;  // live
    RemoveFolder(path, calls_);
  }
}

}  // namespace etpack
