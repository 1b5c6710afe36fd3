// Where output goes: what an existing destination may be, who may replace
// it, and how symbolic links are followed (README.md, "Where output goes").

#include "catch.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "etpack/output.h"
#include "etpack/writer.h"
#include "test_files.h"

namespace etpack {
namespace {

using testing::Contains;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

using Bytes = std::vector<uint8_t>;

const Bytes kNew = {'n', 'e', 'w'};

ArtifactPlan NewBytes() {
  ArtifactPlan plan;
  plan.head = kNew;
  plan.file_size = kNew.size();
  return plan;
}

Status WriteNew(const std::string& path) { return WriteArtifactFile(path, NewBytes()); }

bool Root() { return ::geteuid() == 0; }

mode_t Mode(const std::string& path) {
  struct stat st;
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode;
}

TEST_CASE("a FIFO is not replaced") {
  TempDir dir;
  const std::string fifo = dir.File("out.pte");
  REQUIRE(::mkfifo(fifo.c_str(), 0666) == 0);
  Status s = WriteNew(fifo);  // must not block opening it
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(s.message() ==
        fifo + ": is a FIFO, not a regular file; etpack replaces only regular files");
  CHECK(S_ISFIFO(Mode(fifo)));
  CHECK(dir.List() == std::set<std::string>{"out.pte"});
}

TEST_CASE("a directory is not replaced") {
  TempDir dir;
  const std::string sub = dir.File("out.pte");
  REQUIRE(::mkdir(sub.c_str(), 0755) == 0);
  Status s = WriteNew(sub);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(Contains(s.message(), sub + ": is a directory, not a regular file"));
  CHECK(S_ISDIR(Mode(sub)));
}

TEST_CASE("a socket is not replaced") {
  TempDir dir;
  const std::string path = dir.File("s");
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    ::close(fd);
    SUCCEED("temporary directory path too long for a socket");
    return;
  }
  std::strcpy(addr.sun_path, path.c_str());
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  Status s = WriteNew(path);
  ::close(fd);
  CHECK(Contains(s.message(), path + ": is a socket, not a regular file"));
  CHECK(S_ISSOCK(Mode(path)));
}

TEST_CASE("a character device is not replaced (as root)") {
  if (!Root()) {
    SUCCEED("only root can make device nodes");
    return;
  }
  TempDir dir;
  const std::string dev = dir.File("null");
  REQUIRE(::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0);
  Status s = WriteNew(dev);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(s.message() ==
        dev + ": is a character device, not a regular file; etpack replaces only regular files");
  CHECK(S_ISCHR(Mode(dev)));
  CHECK(dir.List() == std::set<std::string>{"null"});
}

TEST_CASE("/dev/null is not replaced (as root)") {
  if (!Root()) {
    SUCCEED("without root /dev/null cannot be replaced anyway");
    return;
  }
  Status s = WriteNew("/dev/null");
  CHECK(s.message() ==
        "/dev/null: is a character device, not a regular file; etpack replaces only regular files");
  CHECK(S_ISCHR(Mode("/dev/null")));
}

TEST_CASE("a read-only file is replaced only where cp would replace it") {
  TempDir dir;
  const std::string path = dir.File("out.pte");
  WriteFile(path, std::string("old"));
  REQUIRE(::chmod(path.c_str(), 0444) == 0);
  Status s = WriteNew(path);
  if (Root()) {
    // Root bypasses the mode bits, and so does cp run by root.
    CHECK(s.ok());
    CHECK(ReadFile(path) == kNew);
  } else {
    CHECK(s.code() == Code::kIoError);
    CHECK(Contains(s.message(), path + ": cannot replace the existing file"));
    CHECK(Contains(s.message(), std::strerror(EACCES)));
    CHECK(ReadFile(path) == Bytes{'o', 'l', 'd'});
  }
  CHECK(dir.List() == std::set<std::string>{"out.pte"});
}

// Run as root, the test drops to an unprivileged user in a child process to
// see what cp would refuse there.
TEST_CASE("a file the user may not write is refused, as cp refuses it") {
  if (!Root()) {
    SUCCEED("the 0444 case above covers an unprivileged user");
    return;
  }
  const uid_t nobody = 65534;
  TempDir dir;
  REQUIRE(::chmod(dir.path().c_str(), 0777) == 0);
  const std::string theirs = dir.File("root.pte"), mine_ro = dir.File("ro.pte"),
                    mine = dir.File("rw.pte");
  for (const std::string& f : {theirs, mine_ro, mine}) WriteFile(f, std::string("old"));
  REQUIRE(::chmod(theirs.c_str(), 0644) == 0);  // root's, readable by all
  REQUIRE(::chown(mine_ro.c_str(), nobody, nobody) == 0);
  REQUIRE(::chmod(mine_ro.c_str(), 0444) == 0);
  REQUIRE(::chown(mine.c_str(), nobody, nobody) == 0);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {  // no Catch2 here: the exit code says which check failed
    if (::setgid(nobody) != 0 || ::setuid(nobody) != 0) ::_exit(10);
    Status a = WriteNew(theirs);
    if (a.code() != Code::kIoError || !Contains(a.message(), std::strerror(EACCES))) ::_exit(11);
    Status b = WriteNew(mine_ro);
    if (b.code() != Code::kIoError || !Contains(b.message(), std::strerror(EACCES))) ::_exit(12);
    if (!WriteNew(mine).ok()) ::_exit(13);
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(ReadFile(theirs) == Bytes{'o', 'l', 'd'});
  CHECK(ReadFile(mine_ro) == Bytes{'o', 'l', 'd'});
  CHECK(ReadFile(mine) == kNew);
  CHECK(dir.List() == std::set<std::string>{"root.pte", "ro.pte", "rw.pte"});
}

TEST_CASE("a symbolic link is written through: the link stays, its target is replaced") {
  TempDir dir;
  REQUIRE(::mkdir(dir.File("real").c_str(), 0755) == 0);
  const std::string target = dir.File("real/model.pte");
  WriteFile(target, std::string("old"));
  const std::string link = dir.File("model.pte");
  const bool relative = GENERATE(true, false);
  CAPTURE(relative);
  REQUIRE(::symlink(relative ? "real/model.pte" : target.c_str(), link.c_str()) == 0);
  REQUIRE(WriteNew(link).ok());
  CHECK(S_ISLNK(Mode(link)));
  CHECK(S_ISREG(Mode(target)));
  CHECK(ReadFile(target) == kNew);
  CHECK(dir.List() == std::set<std::string>{"model.pte", "real"});
}

TEST_CASE("a chain of links is followed to the end") {
  TempDir dir;
  WriteFile(dir.File("c"), std::string("old"));
  REQUIRE(::symlink("c", dir.File("b").c_str()) == 0);
  REQUIRE(::symlink("b", dir.File("a").c_str()) == 0);
  REQUIRE(WriteNew(dir.File("a")).ok());
  CHECK(S_ISLNK(Mode(dir.File("a"))));
  CHECK(S_ISLNK(Mode(dir.File("b"))));
  CHECK(ReadFile(dir.File("c")) == kNew);
  CHECK(dir.List() == std::set<std::string>{"a", "b", "c"});
}

TEST_CASE("a dangling link: the file it names is created") {
  TempDir dir;
  REQUIRE(::symlink("made.pte", dir.File("model.pte").c_str()) == 0);
  REQUIRE(WriteNew(dir.File("model.pte")).ok());
  CHECK(S_ISLNK(Mode(dir.File("model.pte"))));
  CHECK(ReadFile(dir.File("made.pte")) == kNew);
  CHECK(dir.List() == std::set<std::string>{"made.pte", "model.pte"});
}

TEST_CASE("a link to something that is not a regular file is refused") {
  TempDir dir;
  REQUIRE(::mkfifo(dir.File("fifo").c_str(), 0666) == 0);
  REQUIRE(::symlink("fifo", dir.File("model.pte").c_str()) == 0);
  Status s = WriteNew(dir.File("model.pte"));
  CHECK(Contains(s.message(), dir.File("model.pte") + " (a link to " + dir.File("fifo") +
                                  "): is a FIFO, not a regular file"));
  CHECK(S_ISFIFO(Mode(dir.File("fifo"))));
}

TEST_CASE("a loop of links is refused") {
  TempDir dir;
  REQUIRE(::symlink("b", dir.File("a").c_str()) == 0);
  REQUIRE(::symlink("a", dir.File("b").c_str()) == 0);
  Status s = WriteNew(dir.File("a"));
  CHECK(s.code() == Code::kIoError);
  CHECK(Contains(s.message(), std::strerror(ELOOP)));
  CHECK(dir.List() == std::set<std::string>{"a", "b"});
}

// Runs `body` in a child process as user and group nobody (65534) and
// returns its exit code (no Catch2 in the child: the code says which check
// failed). REQUIRES: root.
int AsNobody(const std::function<int()>& body) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
        ::setresuid(65534, 65534, 65534) != 0) {
      ::_exit(99);
    }
    ::_exit(body());
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

struct Owner {
  uid_t uid;
  gid_t gid;
};

Owner OwnerOf(const std::string& path) {
  struct stat st;
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return {st.st_uid, st.st_gid};
}

TEST_CASE("a replaced file keeps its owner and group (as root)") {
  if (!Root()) {
    SUCCEED("needs root to own files of another user; the refusal is tested below as nobody");
    return;
  }
  TempDir dir;
  const std::string path = dir.File("theirs.ptd");
  WriteFile(path, std::string("old"));
  REQUIRE(::chown(path.c_str(), 65534, 65534) == 0);
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  REQUIRE(WriteNew(path).ok());
  CHECK(ReadFile(path) == kNew);
  const Owner o = OwnerOf(path);
  CHECK(o.uid == 65534);
  CHECK(o.gid == 65534);
  CHECK((Mode(path) & 07777) == 0600);
  CHECK(dir.List() == std::set<std::string>{"theirs.ptd"});
}

TEST_CASE("a file whose owner the writer cannot keep is refused before writing") {
  if (!Root()) {
    SUCCEED("needs root to set up a file of another user and to become nobody");
    return;
  }
  TempDir dir;
  REQUIRE(::chmod(dir.path().c_str(), 0777) == 0);
  const std::string path = dir.File("shared.ptd");
  WriteFile(path, std::string("old"));
  REQUIRE(::chmod(path.c_str(), 0666) == 0);  // root's, writable by all
  CHECK(
      AsNobody([&] {
        Status s = WriteNew(path);
        if (s.code() != Code::kIoError) return 1;
        if (!Contains(s.message(), path + ": cannot replace the existing file of user 0, group 0"))
          return 2;
        if (!Contains(s.message(), "would belong to user 65534")) return 3;
        return 0;
      }) == 0);
  CHECK(ReadFile(path) == Bytes{'o', 'l', 'd'});
  CHECK(OwnerOf(path).uid == 0);
  CHECK(dir.List() == std::set<std::string>{"shared.ptd"});
}

TEST_CASE("in a sticky directory another user's file is refused before writing") {
  if (!Root()) {
    SUCCEED("needs root to set up a file of another user and to become nobody");
    return;
  }
  TempDir dir;
  REQUIRE(::chmod(dir.path().c_str(), 01777) == 0);  // like /tmp, root's
  const std::string roots = dir.File("shared.ptd"), mine = dir.File("mine.ptd");
  WriteFile(roots, std::string("old"));
  REQUIRE(::chmod(roots.c_str(), 0666) == 0);
  WriteFile(mine, std::string("old"));
  REQUIRE(::chown(mine.c_str(), 65534, 65534) == 0);
  CHECK(AsNobody([&] {
          // A big plan: the refusal must come before any of it is written.
          ArtifactPlan big;
          big.head = kNew;
          big.file_size = uint64_t{1} << 30;
          uint64_t written = 0;
          WriteOptions options;
          options.progress = [&](uint64_t done, uint64_t) { written = done; };
          Status s = WriteArtifactFile(roots, big, options);
          if (s.code() != Code::kIoError) return 1;
          if (!Contains(s.message(), roots + ": cannot replace the existing file: it belongs to "
                                             "user 0 and its directory "))
            return 2;
          if (!Contains(s.message(), "is sticky")) return 3;
          if (written != 0) return 4;
          if (!WriteNew(mine).ok()) return 5;  // its own file: allowed
          return 0;
        }) == 0);
  CHECK(ReadFile(roots) == Bytes{'o', 'l', 'd'});
  CHECK(ReadFile(mine) == kNew);
  CHECK(dir.List() == std::set<std::string>{"shared.ptd", "mine.ptd"});
  // Root (CAP_FOWNER) may replace anyone's file there, keeping its owner.
  REQUIRE(::chown(roots.c_str(), 65534, 65534) == 0);
  CHECK(WriteNew(roots).ok());
  CHECK(OwnerOf(roots).uid == 65534);
}

// chattr +a through the ioctl; false where the file system or the caller
// cannot set it.
bool SetAppendOnly(const std::string& path, bool on) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  int flags = 0;
  bool ok = ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
  flags = on ? (flags | FS_APPEND_FL) : (flags & ~FS_APPEND_FL);
  ok = ok && ::ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
  ::close(fd);
  return ok;
}

TEST_CASE("an append-only file, or a file in an append-only folder, is refused before writing") {
  TempDir dir;
  const std::string file = dir.File("log.ptd"), sub = dir.File("sub"),
                    inside = dir.File("sub/x.ptd");
  WriteFile(file, std::string("old"));
  REQUIRE(::mkdir(sub.c_str(), 0755) == 0);
  WriteFile(inside, std::string("old"));
  if (!SetAppendOnly(file, true) || !SetAppendOnly(sub, true)) {
    SetAppendOnly(file, false);
    SUCCEED("this file system or user cannot set chattr +a");
    return;
  }
  Status a = WriteNew(file);
  Status b = WriteNew(inside);
  Status fresh = WriteNew(dir.File("sub/new.ptd"));  // a new file may be added there
  CHECK(SetAppendOnly(file, false));
  CHECK(SetAppendOnly(sub, false));
  CHECK(a.code() == Code::kIoError);
  CHECK(Contains(a.message(), file + ": cannot replace the existing file: it is append-only"));
  CHECK(b.code() == Code::kIoError);
  CHECK(Contains(b.message(), "its directory is append-only"));
  CHECK(fresh.ok());
  CHECK(ReadFile(file) == Bytes{'o', 'l', 'd'});
  CHECK(ReadFile(inside) == Bytes{'o', 'l', 'd'});
  CHECK(dir.List() == std::set<std::string>{"log.ptd", "sub"});
}

}  // namespace
}  // namespace etpack
