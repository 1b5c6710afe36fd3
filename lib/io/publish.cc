// Publishing several outputs as one unit. The order of the steps is the
// whole design: the slow part (syncing gigabytes) happens while nothing has
// a name; then every output gets a name beside its destination (a free
// destination is taken directly, so a new file is never visible under any
// other name); then the renames, in the caller's order. Only the renames
// touch existing files, so a failure before them leaves every destination
// as it was.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "etpack/output.h"
#include "io/file_lock.h"
#include "io/interrupts_held.h"
#include "io/publish_marker.h"
#include "io/publish_steps.h"

namespace etpack {

namespace {

// flock(2) on every distinct lock directory of a unit, released (by
// closing) on destruction. See output.h: a directory that cannot be opened
// or locked is skipped, not an error. Distinct means another device or
// inode: two paths to one folder (a bind mount, which realpath cannot see
// through) must share one lock, as flock on a second open of a locked
// folder would wait for the unit itself. The order is that of device and
// inode too, the same for every process whatever paths it was given.
class DirectoryLocks {
 public:
  DirectoryLocks() = default;
  ~DirectoryLocks() {
    for (const Held& h : held_) ::close(h.fd);
  }
  DirectoryLocks(const DirectoryLocks&) = delete;
  DirectoryLocks& operator=(const DirectoryLocks&) = delete;

  // Fails only when `cancel` asks to stop a wait; the locks already taken
  // are released with the object, as on success.
  Status Lock(const std::vector<PublishableOutput*>& outputs, const CancelFn& cancel) {
    std::string unit;
    std::vector<Held> open;
    for (const PublishableOutput* out : outputs) {
      unit += (unit.empty() ? "" : ", ") + out->destination();
      std::string dir = PublishSteps::lock_directory(*out);
      if (dir.empty()) continue;
      const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (fd < 0) continue;
      struct stat st;
      if (::fstat(fd, &st) != 0) {
        ::close(fd);
        continue;
      }
      open.push_back({st.st_dev, st.st_ino, fd, std::move(dir)});
    }
    std::sort(open.begin(), open.end(), [](const Held& a, const Held& b) {
      return a.dev != b.dev ? a.dev < b.dev : a.ino < b.ino;
    });
    Status status;
    for (Held& h : open) {
      const bool repeat = !held_.empty() && held_.back().dev == h.dev && held_.back().ino == h.ino;
      const LockResult r =
          repeat || !status.ok() ? LockResult::kUnsupported : LockExclusive(h.fd, cancel);
      if (r == LockResult::kCancelled) {
        status = Status(Code::kIoError, unit +
                                            ": write cancelled by the caller while waiting "
                                            "for another writer to finish publishing into " +
                                            h.path);
      }
      if (r == LockResult::kLocked) {
        held_.push_back(h);
      } else {
        ::close(h.fd);
      }
    }
    return status;
  }

 private:
  struct Held {
    dev_t dev;
    ino_t ino;
    int fd;
    std::string path;
  };
  std::vector<Held> held_;
};

// Takes back what a failed unit already put in place; names what cannot be
// taken back. The markers go unless a file was replaced: the unit is then
// mixed, and they say so.
Status Undo(const std::vector<PublishableOutput*>& outputs, Status failure) {
  std::string replaced;
  for (PublishableOutput* out : outputs) {
    if (PublishSteps::replaced_existing(*out)) {
      replaced += (replaced.empty() ? "" : ", ") + out->destination();
    }
    PublishSteps::Unplace(*out);
  }
  if (replaced.empty()) {
    for (PublishableOutput* out : outputs) PublishSteps::Unmark(*out, false);
    return failure;
  }
  return Status(failure.code(),
                failure.message() + " (" + replaced + " already replaced by the new file" +
                    (replaced.find(", ") == std::string::npos ? "" : "s") +
                    "; the unit's .etpack-publishing markers stay, so verify refuses its files "
                    "until it is written again)");
}

// A unit of several outputs that replaces a file gets its markers
// (io/publish_marker.h) before anything is named: naming a free
// destination already shows a new file beside the old ones. A unit of one
// output (one rename decides it), or of new files only (there is nothing
// old to mix with), needs none.
Status MarkUnit(const std::vector<PublishableOutput*>& outputs) {
  if (outputs.size() < 2) return Status::OK();
  bool replaces = false;
  std::vector<std::string> unit;
  for (PublishableOutput* out : outputs) {
    replaces = replaces || PublishSteps::DestinationExists(*out);
    unit.push_back(out->destination());
  }
  if (!replaces) return Status::OK();
  const std::string bytes = EncodePublishMarker(unit);
  for (PublishableOutput* out : outputs) {
    Status s = PublishSteps::Mark(*out, bytes);
    if (!s.ok()) return Undo(outputs, s);
  }
  return Status::OK();
}

// Names and moves every synced output of a unit into place under the
// directory locks and syncs their directories; then the markers go (with
// any stale one a killed publish left beside these files).
Status PlaceSynced(const std::vector<PublishableOutput*>& outputs, const CancelFn& cancel) {
  // Locked before interrupts are held, so a wait for another publisher
  // can still be interrupted. Held until the markers are gone, so that
  // no other publisher of these files sees or removes them meanwhile.
  DirectoryLocks locked;
  ETPACK_RETURN_IF_ERROR(locked.Lock(outputs, cancel));
  InterruptsHeld held;
  ETPACK_RETURN_IF_ERROR(MarkUnit(outputs));
  for (PublishableOutput* out : outputs) {
    Status s = PublishSteps::Link(*out);
    if (!s.ok()) return Undo(outputs, s);
  }
  for (PublishableOutput* out : outputs) {
    Status s = PublishSteps::Rename(*out);
    if (!s.ok()) return Undo(outputs, s);
  }
  // Everything is in place; report the first directory that could not be
  // synced but try them all. A unit not known to be durable keeps its
  // markers.
  Status first;
  for (PublishableOutput* out : outputs) {
    Status s = PublishSteps::SyncDirectory(*out);
    if (first.ok() && !s.ok()) first = s;
  }
  if (!first.ok()) return first;
  for (PublishableOutput* out : outputs) PublishSteps::Unmark(*out, true);
  return Status::OK();
}

}  // namespace

Status CheckOutputsDistinct(const std::vector<std::unique_ptr<OutputFile>>& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i] == nullptr) return InvalidArgument("Publish: an output is null");
    for (size_t j = 0; j < i; ++j) {
      if (outputs[j]->target() == outputs[i]->target()) {
        return InvalidArgument(outputs[i]->destination() + " and " + outputs[j]->destination() +
                               " are the same file (one name in one folder, whatever path "
                               "leads there); each output of one unit needs its own");
      }
    }
  }
  return Status::OK();
}

Status CheckNotInputs(const PublishableOutput& output, const std::vector<const Source*>& inputs) {
  // Sources of one file share one descriptor (FileSource), so this is one
  // look per file, not per item.
  std::set<int> seen;
  for (const Source* in : inputs) {
    const FileRange* r = in != nullptr ? in->file_range() : nullptr;
    if (r == nullptr || !seen.insert(r->fd).second) continue;
    if (output.Replaces(r->fd)) {
      return InvalidArgument(r->path + ": is the same file as the output " + output.destination() +
                             "; refusing to overwrite an input");
    }
  }
  return Status::OK();
}

Status Publish(std::vector<std::unique_ptr<OutputFile>> outputs, const CancelFn& cancel) {
  ETPACK_RETURN_IF_ERROR(CheckOutputsDistinct(outputs));
  // The last writing step; from here on only the publishing part is used.
  for (const auto& out : outputs) ETPACK_RETURN_IF_ERROR(out->Sync());
  std::vector<PublishableOutput*> unit;
  for (const auto& out : outputs) unit.push_back(out.get());
  return PlaceSynced(unit, cancel);
}

}  // namespace etpack
