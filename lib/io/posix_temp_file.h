// posix_temp_file.h (internal to io) — the file a POSIX output writes: a
// temporary beside its destination, and the steps that put it in place.
//
// The temporary is unnamed (O_TMPFILE) until Link(): it takes the
// destination's own name when that is free, else a hidden name that
// Rename() then moves over the destination. A process killed mid-write thus
// leaves nothing behind. Without O_TMPFILE (or without /proc, through which
// an unnamed file is linked; always on macOS) it is
// "<dir>/.<name>.etpack-XXXXXX" from the start, removed unless it reached its
// destination, and flocked while open: a killed writer's is removed by the
// next output to that destination once a minute old and unheld.

#ifndef ETPACK_IO_POSIX_TEMP_FILE_H_
#define ETPACK_IO_POSIX_TEMP_FILE_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "etpack/status.h"
#include "io/destination.h"
#include "io/posix_calls.h"

namespace etpack {

class PosixTempFile {
 public:
  // A temporary file for `destination` (checked by ResolveDestination),
  // already given the owner, group and mode of the file it replaces (or
  // those of a new file). `sync` says whether SyncDirectory() syncs.
  // REQUIRES: `calls` outlives the result.
  static Result<std::unique_ptr<PosixTempFile>> Create(const std::string& destination, bool sync,
                                                       PosixCalls* calls);

  PosixTempFile(const PosixTempFile&) = delete;
  PosixTempFile& operator=(const PosixTempFile&) = delete;
  // Closes the file and removes its temporary name, if it still has one
  // (a file in place has none).
  ~PosixTempFile();

  // The descriptor to write through; -1 once Link() or Rename() closed it.
  int fd() const { return fd_; }
  // The file it replaces or creates (links followed), which errors name.
  const std::string& path() const { return target_.path; }
  // Destination::key: which file this is.
  const std::string& key() const { return target_.key; }
  // The destination's folder, absolute and free of links: what Publish()
  // locks.
  const std::string& real_dir() const { return target_.real_dir; }
  // How errors name the temporary: its name, or "the unnamed temporary
  // file in DIR".
  std::string Text() const;
  // kIoError "PATH: CALL of RANGE into TEMP failed" for `n` bytes at
  // `offset` of the temporary.
  Status WriteError(const std::string& call, uint64_t offset, uint64_t n, int err) const;

  // PublishableOutput::Replaces and ReplaceOnly (etpack/output.h).
  bool Replaces(int fd) const;
  Status ReplaceOnly(int fd);

  // The publishing steps of CheckedOutput (DoLink, DoRename, DoUnplace,
  // DoSyncDirectory), in that order.
  Status Link(bool* placed_free);
  Status Rename();
  void Unplace();
  Status SyncDirectory();
  // The unit's marker beside the destination (io/publish_marker.h), for
  // Publish(): whether the destination exists now; write the marker and
  // make its name durable (the folder synced, when syncing), unless a stale
  // one is there; remove it (PublishableOutput::Unmark).
  bool DestinationExists() const;
  Status Mark(const std::string& bytes);
  void Unmark(bool unit_placed);

 private:
  std::string MarkerPath() const;
  int SyncFolder() const;
  PosixTempFile(Destination target, std::string temp_prefix, std::string temp, int fd, bool sync,
                PosixCalls* calls);

  Status CheckReplaceOnly() const;
  Status Replaced() const;
  Status NameTemporary();
  Status Close();

  const Destination target_;       // as it was when the output was made
  bool replace_only_ = false;      // see ReplaceOnly()
  const std::string temp_prefix_;  // what NameTemporary() adds 6 characters to
  std::string temp_;               // empty while unnamed, cleared once removed
  int fd_;
  bool marked_ = false;  // Mark() made the marker beside the destination
  const bool sync_;
  PosixCalls* const calls_;
};

}  // namespace etpack

#endif  // ETPACK_IO_POSIX_TEMP_FILE_H_
