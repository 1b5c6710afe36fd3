// destination.h (internal) — which file an output replaces, decided before
// anything is written (README.md, "Where output goes"):
//
//   - a symbolic link is followed, as `cp` writes through it: the file it
//     leads to is replaced (a dangling link: the path it names is created);
//   - an existing destination must be a regular file; anything else (a
//     device, a FIFO, a socket, a directory) is refused, naming what it is;
//   - an existing file must be one the caller may write, as `cp` decides
//     it (effective IDs; root may replace a read-only file);
//   - in a sticky directory (mode +t, like /tmp) an existing file must also
//     be one the caller may replace: its own, in its own directory, or with
//     CAP_FOWNER (root). rename() would refuse it with EPERM, but only after
//     the whole output was written; so it would an append-only file or
//     any file of an append-only directory (chattr +a), refused as well.

#ifndef ETPACK_IO_DESTINATION_H_
#define ETPACK_IO_DESTINATION_H_

#include <sys/types.h>

#include <string>

#include "etpack/status.h"

namespace etpack {

struct Destination {
  std::string path;  // the file to replace: the path given, or where its links lead
  std::string dir;   // the directory that holds `path` ("." for a bare name)
  std::string name;  // the last component of `path`
  // The directory made absolute and free of links (`dir` where it cannot be
  // resolved yet).
  std::string real_dir;
  // Which file this is: the device and inode of the directory, and `name`
  // ("DEV:INO/NAME"; real_dir + "/" + name while the directory cannot be
  // examined). Two destinations are the same file exactly when their keys
  // are equal, through whatever paths (links, "..", bind mounts) they lead
  // there: a path string cannot tell, as realpath does not see through a
  // bind mount.
  std::string key;
  // The file `path` holds now; `exists` false for a new file.
  bool exists = false;
  dev_t dev = 0;
  ino_t ino = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  mode_t mode = 0;
};

// Fails with kInvalidArgument for a destination that is not a regular file
// or does not name a file (empty, ".", "..", a trailing '/', a name longer
// than NAME_MAX), with kIoError for one the caller may not write or that
// cannot be examined.
Result<Destination> ResolveDestination(const std::string& path);

}  // namespace etpack

#endif  // ETPACK_IO_DESTINATION_H_
