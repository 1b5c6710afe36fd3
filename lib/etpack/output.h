// etpack/output.h — the output seam: the one place where the library meets
// the file system on the way out.
//
// An OutputFs makes outputs; an OutputFile is one file being written, seen
// through two interfaces: its WritableOutput part places the bytes, its
// PublishableOutput part puts the file in place. The writer knows every size
// before it writes a byte, so an output is used in one fixed order:
//
//   fs.Create(destination)  an output with no name yet (the destination is
//                           checked here, before anything is written)
//   Reserve(size)           claim the whole file (a full disk fails here)
//   Write(offset, source)   any number of times, at increasing offsets
//   Publish({outputs...})   make them durable and put them all in place
//
// An output that is destroyed without being published is discarded: its
// destination is left as it was and nothing it wrote stays behind. Every
// output checks this order and reports a call out of order (or a write
// outside the reserved size) as an error rather than trusting the caller.
// Errors are sticky: after the first failure every later call on the output
// returns that failure. Every byte reserved but never written reads as zero.
//
// Implementations: POSIX files (NewPosixOutputFs) and memory
// (MemoryOutputFs). A wrapper that changes part of what an output does (the
// tests' fault injection, a counting or throttling output) derives from
// OutputFileWrapper / OutputFsWrapper and overrides only what it changes.

#ifndef ETPACK_OUTPUT_H_
#define ETPACK_OUTPUT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "etpack/input.h"
#include "etpack/source.h"
#include "etpack/status.h"

namespace etpack {

// Asked whether the caller wants the write stopped: by the writer
// (etpack/writer.h says when) and by every wait for a lock (Publish(), an
// update waiting for another update of its file). Once it returns true the
// operation fails with kIoError ("... cancelled by the caller ...") and, as
// for any failure, nothing is published and nothing is left behind. Runs on
// the writing thread; it should be cheap (e.g. read an atomic flag another
// thread or a signal handler sets).
using CancelFn = std::function<bool()>;

// An output is two interfaces that one object implements, so each user
// sees only its own part: the writer's byte loop a WritableOutput, Publish()
// (and the check that no output is one of the plan's inputs) a PublishableOutput.
// OutputFile is the object that is both, as OutputFs::Create() makes it.

// The writing part: what placing bytes needs (as LevelDB's WritableFile).
// Offsets and sizes are in bytes from the start of the file.
class WritableOutput {
 public:
  WritableOutput() = default;
  WritableOutput(const WritableOutput&) = delete;
  WritableOutput& operator=(const WritableOutput&) = delete;
  virtual ~WritableOutput() = default;

  // The path this output will be published at, as given to Create(); what
  // errors name.
  virtual const std::string& destination() const = 0;

  // Called once, before any Write. The POSIX output fails with kOutOfRange,
  // before it creates anything that large, when `size` exceeds the
  // process's file size limit (RLIMIT_FSIZE, `ulimit -f`).
  virtual Status Reserve(uint64_t size) = 0;

  // Instead of Reserve(): makes the output a copy of the whole regular file
  // `source` reads by sharing its extents (FICLONE: XFS with reflink,
  // btrfs), so nothing is copied and no disk is used until a Write()
  // changes a range. True when it did: the output is then reserved at the
  // source's size, Write() overwrites ranges of the copy under Reserve()'s
  // rules (increasing offsets, inside the size), and every byte no Write()
  // touches keeps the source's value. False, with nothing changed, where
  // extents cannot be shared (ext4, tmpfs, another file system, a memory
  // output, a source that is not a whole file): the caller then Reserve()s
  // and writes every byte. Time and new disk after a clone grow with the
  // bytes written, not with the file (etpack update relies on it).
  virtual Result<bool> ReserveClone(const Source& source);

  // Copies all of `source` to [offset, offset + source.size()).
  // The range must lie inside the reserved size (else kOutOfRange) and start
  // at or after the end of the previous write (else kInvalidArgument).
  virtual Status Write(uint64_t offset, const Source& source) = 0;

  // Convenience for small in-memory pieces (headers). `data` is borrowed
  // for the call.
  Status Write(uint64_t offset, const void* data, uint64_t size);

  // For an output whose size is known only once it is written (a
  // compressed archive): Reserve() an upper bound, write, then cut the file
  // to `size` after the last Write and before Publish(). `size` must lie
  // between the end of the last write and the reserved size (else
  // kInvalidArgument). Outputs that cannot shrink return kUnimplemented.
  virtual Status Truncate(uint64_t size);

  // Makes the written bytes durable (when the output syncs at all), after
  // the last Write. Publish() calls it first; calling it earlier is harmless.
  virtual Status Sync() = 0;

  // Bytes written so far (for progress reports).
  virtual uint64_t bytes_written() const = 0;

  // How many of bytes_written() share the disk blocks of the file they came
  // from instead of being copied (a reflink clone, on file systems that
  // share extents: XFS with reflink, btrfs); 0 for outputs that never share.
  virtual uint64_t bytes_shared() const { return 0; }
};

// The publishing part: which file the output lands on, the conditions on
// replacing it, and the steps that put it there.
class PublishableOutput {
 public:
  PublishableOutput() = default;
  PublishableOutput(const PublishableOutput&) = delete;
  PublishableOutput& operator=(const PublishableOutput&) = delete;
  virtual ~PublishableOutput() = default;

  // The path this output will be published at, as given to Create().
  virtual const std::string& destination() const = 0;
  // Which file it will replace or create, as a key: two outputs land on
  // the same file exactly when their targets are equal. For the POSIX
  // outputs the device and inode of the destination's folder (links
  // followed) and the file name, so every path to one folder (a symbolic
  // link, "..", a bind mount) gives one key; for memory, destination().
  // Outputs published together must have distinct targets (Publish()
  // refuses otherwise: one would silently replace the other).
  virtual const std::string& target() const { return destination(); }

  // Whether publishing this output would replace the file open as `fd`:
  // the existing file at target() is that file (same device and inode,
  // whatever names or links lead to either). False for a new file and for
  // outputs that are not files.
  virtual bool Replaces(int fd) const {
    (void)fd;
    return false;
  }

  // For a writer that read the file it replaces (etpack update): publish
  // over the file open as `fd` and nothing else. Fails now, with kIoError
  // naming the destination, when the destination no longer is that file
  // (Replaces(fd) is false); and Publish() checks it again under its
  // directory lock, before anything is named, failing the same way with
  // nothing published when another writer replaced or removed the file
  // meanwhile, rather than silently discarding that writer's file. Call it
  // once, before Publish(). Outputs that are not files accept any `fd`.
  virtual Status ReplaceOnly(int fd) {
    (void)fd;
    return Status::OK();
  }

 protected:
  // The steps of publishing after Sync(), which only Publish() takes, in
  // this order. A wrapper reaches its target's steps by calling
  // OutputFileWrapper's.
  //
  // Gives the output a name next to its destination: the destination
  // itself when that is free (the output is then in place), else a hidden
  // temporary name.
  virtual Status Link() = 0;
  // Moves the hidden name onto the destination, atomically replacing what
  // was there. Nothing to do when Link() already put the output in place.
  virtual Status Rename() = 0;
  // Removes an output that is in place again, when its destination was free
  // before (Publish() undoing a unit that failed part way). Does nothing
  // when the output replaced a file: that file cannot be brought back.
  virtual void Unplace() = 0;
  // Makes the new directory entry durable.
  virtual Status SyncDirectory() = 0;
  // True once the output replaced an existing file at its destination.
  virtual bool replaced_existing() const = 0;
  // The marker of a unit being published (see Publish): whether a file is
  // at the destination now; put the marker `bytes` beside the destination,
  // durably, before any output of the unit is named (a marker a killed
  // publish left there stays as it is); remove it. `unit_placed` (every
  // output of the unit is in place) removes a stale marker too; otherwise
  // (Publish() undoing a unit) only the one Mark() made goes. Outputs that
  // are not files have none.
  virtual bool DestinationExists() const { return false; }
  virtual Status Mark(const std::string& bytes) {
    (void)bytes;
    return Status::OK();
  }
  virtual void Unmark(bool unit_placed) { (void)unit_placed; }
  // The directory Publish() locks while it names and moves this output
  // (see Publish); empty for an output that is not a file.
  virtual std::string lock_directory() const { return std::string(); }

 private:
  friend class PublishSteps;
};

// One file being written: both parts, one destination() for both.
class OutputFile : public WritableOutput, public PublishableOutput {
 public:
  // Discards the output unless Publish() put it in place.
  ~OutputFile() override = default;

  const std::string& destination() const override = 0;
};

// Forwards every call, the publishing steps included, to the output it
// owns, so a wrapper overrides only what it changes and calls the
// OutputFileWrapper method to go on with the target (as LevelDB's
// EnvWrapper). The target is discarded with the wrapper unless published.
class OutputFileWrapper : public OutputFile {
 public:
  // REQUIRES: target != nullptr.
  explicit OutputFileWrapper(std::unique_ptr<OutputFile> target);
  ~OutputFileWrapper() override;

  // The wrapped output (not to be published on its own).
  OutputFile& wrapped() const { return *target_; }

  const std::string& destination() const override;

  // The writing part.
  Status Reserve(uint64_t size) override;
  Result<bool> ReserveClone(const Source& source) override;
  using WritableOutput::Write;
  Status Write(uint64_t offset, const Source& source) override;
  Status Truncate(uint64_t size) override;
  Status Sync() override;
  uint64_t bytes_written() const override;
  uint64_t bytes_shared() const override;

  // The publishing part.
  const std::string& target() const override;
  bool Replaces(int fd) const override;
  Status ReplaceOnly(int fd) override;

 protected:
  Status Link() override;
  Status Rename() override;
  void Unplace() override;
  Status SyncDirectory() override;
  bool replaced_existing() const override;
  bool DestinationExists() const override;
  Status Mark(const std::string& bytes) override;
  void Unmark(bool unit_placed) override;
  std::string lock_directory() const override;

 private:
  std::unique_ptr<OutputFile> target_;
};

// An exclusive lock on one file that a writer reads and then replaces (an
// update: OutputFs::LockForUpdate), held until it is destroyed.
class UpdateLock {
 public:
  UpdateLock() = default;
  UpdateLock(const UpdateLock&) = delete;
  UpdateLock& operator=(const UpdateLock&) = delete;
  virtual ~UpdateLock() = default;

  // Whether `file` (the file as the writer opened it to read) is the file
  // locked; true when nothing could be locked (the file could not be
  // opened, its file system cannot lock, outputs that are not files).
  virtual bool Covers(const InputFile& file) const = 0;
};

class OutputFs {
 public:
  virtual ~OutputFs() = default;

  // Makes the folder `dir` and its missing parents, as `mkdir -p`; OK when
  // it exists. For a caller told to write into a folder that may be new
  // (etpack demo -o DIR). kIoError "cannot create the folder DIR" with the
  // system's reason. The default (outputs that are not files, which need
  // no folder): OK, nothing made.
  virtual Status MakeFolders(const std::string& dir);

  // Locks the existing file at `path` for a writer that reads it and then
  // publishes over it (etpack/update.h): an exclusive flock(2) on the file,
  // so a second such writer of the file waits until the first is done, then
  // reads what it published. A waiter that gets the lock must check that
  // the file it then opens is the one locked (UpdateLock::Covers): the lock
  // is on the inode the first writer replaced. A file that cannot be opened
  // is left to the reader to report (the lock holds nothing), and a file
  // system without flock is written unlocked. `cancel` (when given) is asked
  // while waiting; once it returns true: kIoError "PATH: update cancelled by
  // the caller while waiting for another update of the file to finish". The
  // default (outputs that are not files): a lock that holds nothing.
  virtual Result<std::unique_ptr<UpdateLock>> LockForUpdate(const std::string& path,
                                                            const CancelFn& cancel);

  // A new output to be published at `destination`, with no name until then.
  // The POSIX implementation checks the destination first (README.md,
  // "Where output goes"): an existing destination must be a regular file the
  // caller may write (as `cp` decides it); a symbolic link is followed and
  // the file it points to is replaced. The destination's directory must
  // exist. In a sticky directory (mode +t, like /tmp) a file of another
  // user is refused unless the caller owns the directory or is root, as
  // rename() would refuse it once everything was written.
  //
  // A replaced file keeps its mode, owner and group, as `cp` keeps them
  // when it overwrites. `cp` writes into the existing inode, so the owner
  // stays by itself; etpack puts a new file in its place (that is what
  // makes publishing atomic), and only root may give that file away. Where
  // the new file cannot be given the old owner and group (a user replacing
  // a group-writable file of another user), Create refuses, naming both
  // owners, before anything is written: silently handing someone's file to
  // the writer would lock its owner out of a 0600 file and is not what
  // "overwrite" means. Removing the file first makes it a new file, which
  // belongs to the writer as any new file does.
  virtual Result<std::unique_ptr<OutputFile>> Create(const std::string& destination) = 0;
};

// Forwards Create() to `target`; a wrapper overrides it to wrap what the
// target creates (in an OutputFileWrapper). REQUIRES: `target` outlives the
// wrapper and every output made through it.
class OutputFsWrapper : public OutputFs {
 public:
  explicit OutputFsWrapper(OutputFs* target) : target_(target) {}

  OutputFs* wrapped() const { return target_; }

  Result<std::unique_ptr<OutputFile>> Create(const std::string& destination) override;
  Status MakeFolders(const std::string& dir) override;
  Result<std::unique_ptr<UpdateLock>> LockForUpdate(const std::string& path,
                                                    const CancelFn& cancel) override;

 private:
  OutputFs* target_;
};

// Puts every output at its destination as one unit, in the order given
// (list data files before the program that refers to them: a program then
// never appears without its data). Each output must be complete (reserved
// and written). All are synced first, then all named (a free destination
// taken directly), and only then moved over the files they replace; on failure none is in place,
// except when a later move fails after an earlier output already replaced an existing file, which
// the error then names. The outputs are consumed: on failure they are discarded.
//
// What a kill (SIGKILL, the OOM killer) or a power loss leaves: no single
// system call puts two files in place, so a unit of two or more outputs
// that replaces at least one existing file first puts a marker
// ".<name>.etpack-publishing" (listing the unit's destinations) beside
// every destination, durable (its name: the folder synced) before the first
// output is named; the markers go once every output is in place and its
// folder synced. A publish stopped in between leaves its markers beside
// every file of the unit, and Verify (etpack/verify.h) refuses a file with
// a marker beside it, naming the marker and the unit: the files may be
// half one run's, half another's. Nothing else looks at markers (the
// runtime loads a .pte beside a marker as any other). A unit of new files
// only (a kill leaves some of them missing, not mixed) and a single output
// (one rename) get no marker. A later successful Publish() of an output
// removes the marker beside its destination, stale or not, so writing the
// unit again clears the state; a member of the old unit that the new one
// does not write keeps its marker until it is written or the marker is
// removed by hand. A failure that replaced nothing removes the markers it
// made and keeps those a killed publish left; one that replaced a file, or
// could not sync a folder, keeps them all.
//
// `cancel` (when given) is asked while Publish() waits for another
// publisher's directory lock; once it returns true Publish() fails with
// kIoError ("OUT, ...: write cancelled by the caller while waiting for
// another writer to finish publishing into DIR") and nothing is published
// (the outputs are discarded). Without it the wait blocks, and only
// a signal that ends the process ends it.
//
// While naming and moving, SIGINT, SIGTERM, SIGHUP and SIGQUIT are blocked
// on the calling thread (a few system calls), so an interrupt lands before
// or after publishing, never in the middle of it.
//
// Concurrent writers of the same files (two runs of one job, threads or
// processes) publish one unit after the other: naming and moving happen
// under an exclusive flock(2) on each destination directory of the unit,
// taken in one global order (so two units sharing directories cannot
// deadlock) and released when the last rename is done.
// The published set is therefore always one run's, the last to publish; no
// run ever leaves its .pte beside another run's .ptd. The lock is on the
// directory itself (no lock file is created or left behind), it is held for
// a few system calls, not while writing, and the kernel drops it when its
// holder dies, so a killed writer cannot leave it stuck (a writer stopped
// with SIGSTOP inside those calls makes the others wait until it goes on or
// dies; waiting can be cancelled or interrupted, as the lock is taken
// before the signals are blocked). Each folder is locked once however many
// paths lead to it (compared by device and inode: symbolic links, bind
// mounts), so a unit never waits for itself, and the folders are taken in
// the order of their device and inode, which no path can change. It is
// advisory: it orders etpack's publishers (and anything else that takes
// it), not other programs writing there. A directory that cannot be opened
// for reading (mode -wx) or locked (a file system without flock) is
// published into unlocked, as before. Why the directory: a lock
// on the destination file would be on the inode the rename replaces, and a
// lock file beside it could never be removed safely (a waiter may hold it
// open), so each destination would keep one forever.
//
// A failure to sync a directory after every output is in place is reported
// as an error saying that the files were written and renamed into place but
// the rename may not survive a crash; the new files stay (with their
// markers, in a marked unit). A marked unit whose marker folder cannot be
// synced fails before anything is named, everything as it was.
Status Publish(std::vector<std::unique_ptr<OutputFile>> outputs, const CancelFn& cancel = {});

// The rule `cp` keeps with "are the same file": no output of a job may
// replace one of the job's inputs, which the job would destroy (through
// whatever path, symbolic or hard link the two are named). Fails with
// kInvalidArgument when `output` Replaces() the file of one of `inputs`
// ("IN: is the same file as the output OUT; refusing to overwrite an
// input"). Sources that are not files are skipped; each file is examined
// once however many sources read it. Writers call it right after creating
// an output, before anything is written: WriteArtifactFiles with every
// source its plans read (ArtifactPlan::inputs and the placements), the
// archive writers with the file they read.
Status CheckNotInputs(const PublishableOutput& output, const std::vector<const Source*>& inputs);

// What Publish() checks of a unit before it touches anything, for writers
// to check before they write a byte: kInvalidArgument when an output is
// null or two outputs would land on the same file (their target()s are
// equal, whatever paths name them: the later would replace the earlier, and
// the unit would report success with one file missing).
Status CheckOutputsDistinct(const std::vector<std::unique_ptr<OutputFile>>& outputs);

// Tuning of the POSIX outputs. The defaults are measured choices
// (docs/performance.md, bench/RESULTS.md); most callers leave them alone.
struct OutputOptions {
  // The output is cut into a grid of cells of this many bytes (rounded up
  // to whole pages); one cell is mapped at a time. Peak resident memory of
  // the writer is about window_bytes * (1 + writeback_windows).
  uint64_t window_bytes = uint64_t{16} << 20;
  // Write-back of a cell starts once every write has moved past it; this
  // many finished cells may have write-back in flight before the writer
  // waits for the oldest and drops it from the page cache.
  int writeback_windows = 2;
  // Hand file sources of at least 1 MiB (or window_bytes, if smaller) to
  // copy_file_range; smaller ones are read into the mapped window. The first
  // "not supported" answer turns it off for the rest of the output's life.
  bool copy_file_range = true;
  // Share extents with file sources where the file system can
  // (FICLONERANGE): every whole block of the output that lies at the same
  // offset modulo the block as its bytes in the source, and a last block
  // the source pads with zeros, costs no copy and no disk
  // (docs/performance.md, "Shared extents"). The partial blocks at either
  // end of an item are copied. The first "not supported" answer (ext4,
  // tmpfs) turns it off for the rest of the output's life; any other
  // refusal only means that item is copied.
  bool share_extents = true;
  // Fill the output through the mapped window (true), or through pwrite
  // from a window-sized buffer (false). pwrite is the fallback for file
  // systems that cannot reserve space; it is selectable so the benchmarks
  // can compare the two paths on one machine (bench/RESULTS.md).
  bool mmap = true;
  // Flush data to stable storage before publishing, and the directory after.
  bool sync = true;
};

// Files. Each output is an unnamed temporary file (O_TMPFILE) in its
// destination's directory until Publish(), so a process killed mid-write
// leaves nothing behind. Where the file system has no O_TMPFILE (or /proc
// is not mounted) the temporary is "<dir>/.<name>.etpack-XXXXXX" from the
// start (<name> shortened to fit NAME_MAX), removed on every failure; one a
// killed writer left is removed by the next output to that destination
// once it is a minute old and no live writer holds its flock. A
// destination file name longer than NAME_MAX is refused with
// kInvalidArgument.
std::unique_ptr<OutputFs> NewPosixOutputFs(const OutputOptions& options = {});

// The POSIX file system with the default OutputOptions, for what no
// OutputOptions decide (folders, locks: Env::out()). Never null; lives for
// the whole process; thread-safe.
OutputFs* DefaultOutputFs();

// Memory. Published outputs land in files(), keyed by destination.
class MemoryOutputFs final : public OutputFs {
 public:
  Result<std::unique_ptr<OutputFile>> Create(const std::string& destination) override;

  const std::map<std::string, std::vector<uint8_t>>& files() const { return files_; }

 private:
  std::map<std::string, std::vector<uint8_t>> files_;
};

}  // namespace etpack

#endif  // ETPACK_OUTPUT_H_
