// folder_unit.h (internal to io and the layers above) — a folder of outputs
// published as one unit, decided by one system call.
//
// A unit published file by file (Publish, one rename per file) can be cut
// between two renames by SIGKILL, the OOM killer or a power loss, leaving
// old and new files side by side. A folder that is etpack's own can do
// better: the new unit is built in a hidden sibling folder
// ".<name>.etpack-unit-XXXXXX" and one renameat2() puts it in place —
// RENAME_NOREPLACE where the folder is new, RENAME_EXCHANGE over the old
// folder, which is then removed. Before that call the folder is the old
// unit; after it, the new one. A crash at any point leaves one or the
// other, plus at most a hidden sibling that the next unit published beside
// it removes.
//
// Which folders a unit may replace ("never a file replaced that was not
// ours to replace"): one that does not exist; an empty one; one holding the
// marker kUnitMarker, which every unit writes listing its files, and
// nothing else but those files and etpack's hidden temporaries
// (".*.etpack-*"). Anything else — a file of the user's in it, a
// subfolder — is refused, naming it, before a byte is written.
//
// Where the file system has no RENAME_EXCHANGE (EINVAL: some network and
// FUSE file systems), the old folder is renamed to
// ".<name>.etpack-old-XXXXXX" and the new one into place: two renames, so a
// crash between them leaves the folder missing, the old unit whole under
// that hidden name (never mixed with the new one); the next unit published
// there removes it once it is in place.

#ifndef ETPACK_IO_FOLDER_UNIT_H_
#define ETPACK_IO_FOLDER_UNIT_H_

#include <memory>
#include <string>
#include <vector>

#include "etpack/output.h"
#include "etpack/source.h"
#include "etpack/status.h"
#include "io/posix_calls.h"

namespace etpack {

// The marker a unit's folder holds: "etpack unit 1\n", then the name of
// each of its files, one a line.
inline constexpr char kUnitMarker[] = ".etpack-unit";

class FolderUnit {
 public:
  // Prepares to publish the folder `dir`. Fails, with nothing made, when
  // `dir` exists and may not be replaced (see above), naming why, and with
  // kInvalidArgument when one of `inputs` is a file of `dir`, which would go
  // with the old folder ("IN: is a file of the output folder DIR, ...;
  // refusing to overwrite an input"; sources that are not files are
  // skipped). Makes the missing parents of `dir` (removed again unless
  // Commit() succeeds), then the staging folder beside it, and removes the
  // leftovers of earlier units there that no live process is building.
  // `cancel` is asked while it waits for another publisher of that parent
  // (Publish's lock).
  static Result<std::unique_ptr<FolderUnit>> Begin(const std::string& dir,
                                                   const std::vector<const Source*>& inputs,
                                                   const CancelFn& cancel,
                                                   PosixCalls* calls = DefaultPosixCalls());

  // Unless Commit() succeeded: removes the staging folder with every file in
  // it and the parents Begin() made, so a failed unit leaves nothing.
  ~FolderUnit();
  FolderUnit(const FolderUnit&) = delete;
  FolderUnit& operator=(const FolderUnit&) = delete;

  // The folder as given, and where its file `name` is built.
  const std::string& dir() const { return given_; }
  const std::string& staging() const { return staging_; }
  std::string Staged(const std::string& name) const { return staging_ + "/" + name; }

  // Publishes the staging folder, which holds exactly the files `names`
  // (complete, synced and named): writes the marker, syncs the folder, and
  // under the parent's lock, with interrupts held, checks `dir` once more
  // and renames the staging folder into place in one call; then syncs the
  // parent and removes the old folder. A failure before the rename leaves
  // `dir` as it was; one after it (the parent's sync) says the unit is in
  // place but may not survive a crash.
  Status Commit(const std::vector<std::string>& names, const CancelFn& cancel);

 private:
  explicit FolderUnit(PosixCalls* calls) : calls_(calls) {}
  Status MakeStaging(const std::string& shown, mode_t existing_mode, bool exists,
                     const CancelFn& cancel);
  Status CheckNotInside(const std::vector<const Source*>& inputs) const;
  Status Swap(bool exists);
  void CleanLeftovers(bool dir_exists) const;

  PosixCalls* const calls_;
  std::string given_;                      // `dir` as given (what errors name)
  std::string dir_;                        // absolute, its links resolved
  std::string parent_;                     // dir_'s folder
  std::string stem_;                       // ".<name>.etpack-"
  std::string staging_;                    // parent_/stem_unit-XXXXXX
  std::vector<std::string> made_parents_;  // outermost first
  int marker_fd_ = -1;                     // the staging marker, flocked while the unit lives
  bool committed_ = false;
};

}  // namespace etpack

#endif  // ETPACK_IO_FOLDER_UNIT_H_
