// etpack/writer.h — pass two: stream a planned artifact into a file.
//
// Every format (.pte, .ptd, .bpte) plans down to the same thing, an
// ArtifactPlan (plan.h): the small head (flatbuffer + header) and a list of
// placements, each a source whose bytes go to a fixed file offset. The
// writer reserves the whole file, writes the head, streams each placement
// from its source straight into place, and leaves every other byte (all the
// padding) zero. It never holds more than the output's window in memory.

#ifndef ETPACK_WRITER_H_
#define ETPACK_WRITER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "etpack/env.h"
#include "etpack/json.h"
#include "etpack/output.h"
#include "etpack/plan.h"
#include "etpack/source.h"
#include "etpack/status.h"

namespace etpack {

// An ArtifactPlan that is just the bytes of `source` (an existing file, a
// payload): no head, one placement at 0 (none when the source is empty).
// REQUIRES: source != nullptr.
ArtifactPlan WholeSourcePlan(SourcePtr source);

// SHA-256 digests of one written file, computed while writing it (no
// second pass): of the head [0, head.size()) and of each of the plan's
// segments.
struct ArtifactSha256 {
  std::vector<uint8_t> head;                   // 32 bytes
  std::vector<std::vector<uint8_t>> segments;  // one per ArtifactPlan::segments
};

// What a write did with its bytes, over all the files it wrote: how many it
// wrote (heads and items, not the zero padding between them), and how many
// of those share the disk blocks of the file they came from instead of
// being copied (OutputOptions::share_extents; 0 where the file system
// cannot share, or for outputs that are not files).
// The bytes a plan takes from its base (ArtifactPlan::base) count as
// written, and, where the output is a clone of the base, as shared.
struct WriteStats {
  uint64_t bytes = 0;
  uint64_t bytes_shared = 0;
  // Of bytes_shared, those of a base that a clone of it shares (0 unless a
  // plan has a base and the file system clones).
  uint64_t bytes_cloned = 0;
  uint64_t bytes_copied() const { return bytes - bytes_shared; }
};

// What a write did, as every report of one renders it (the CLI's writing
// commands, `etpack share --json`, etpack.share, etpack_share): sets in
// `report` (a JSON object) "written" (`paths`, the files in the order
// written), "bytes_written" (stats.bytes), "bytes_shared" and
// "bytes_copied". The one place these members are named.
void SetWriteStatsJson(const std::vector<std::string>& paths, const WriteStats& stats,
                       json::Value* report);

// Called now and then with bytes written so far and the total.
using ProgressFn = std::function<void(uint64_t done, uint64_t total)>;

// How a write reports, stops and accounts for itself: the one options
// parameter of every write call below. Every field may be left at its
// default; a default WriteOptions writes silently, to the end, and returns
// nothing but the Status. The caller owns everything it points to, which
// must outlive the call; the writer never keeps a field after returning.
struct WriteOptions {
  // Called on the calling thread with the bytes written so far and the
  // total, both over all the files of the call (heads and placements, not
  // the zero padding between them; a base's bytes unless a clone shares
  // them; a tail's work in its own unit, ByteStream::work): each time at
  // least 64 MiB more have been written (or after each piece of a tail),
  // and once more after the last byte, before publishing. Empty: no
  // reports.
  ProgressFn progress;

  // Asked whether to stop (CancelFn, etpack/output.h): after the head,
  // after each placement or slice of at most 64 MiB of one (so at least
  // every 64 MiB, right after any progress report), once more after the
  // last byte, before publishing, and while publishing waits for another
  // writer's lock (Publish). Once it returns true the write fails with
  // kIoError "DESTINATION: write cancelled by the caller after N of M
  // bytes" (or "... cancelled by the caller while waiting ..." in the lock
  // wait) and, as for any failure, nothing is published and nothing is left
  // behind. Empty: never stops.
  CancelFn cancel;

  // Not null: receives the SHA-256 digests of each file (ArtifactSha256),
  // one entry per file in the order given, once every file is written and
  // before publishing (so a write whose publishing fails has set it; one
  // that fails or is cancelled earlier has not). Asking for them reads
  // every source through memory (no in-kernel copy_file_range, nothing
  // shared with the source, no clone of a base), so the bytes can be hashed
  // on their way into the output. A tail's bytes are not hashed (the
  // segments lie before it).
  std::vector<ArtifactSha256>* sha256 = nullptr;

  // Not null: receives what the write did with its bytes (WriteStats) over
  // all its files, set as `sha256` is.
  WriteStats* stats = nullptr;

  // How the POSIX outputs are made (window, copy_file_range, extent
  // sharing, mmap, sync; etpack/output.h). Read only by the calls that open
  // destination paths themselves on the POSIX file system
  // (WriteArtifactFiles and WriteArtifactFile given an Env without an
  // output file system, as the default Env is); a call given an
  // OutputFs or an OutputFile uses that one as it was made, and
  // WriteArtifactAt writes through the caller's descriptor.
  OutputOptions output;
};

// Reserves `output` (or makes it a clone of the plan's base), writes the
// head, every placement, the base's bytes it did not clone and the tail;
// publishing (or dropping) the output is the caller's. Checks the plan's invariants first
// (order, bounds, sizes, alignment) and fails with kInvalidArgument on a
// malformed plan rather than writing it. `options.output` is not read.
Status WriteArtifact(const ArtifactPlan& plan, OutputFile& output,
                     const WriteOptions& options = {});

// Destination paths and their plans, published as one unit in this order
// (data files before the program that refers to them).
using ArtifactFiles = std::vector<std::pair<std::string, const ArtifactPlan*>>;

// Writes every plan to an unnamed output of `fs` and publishes them all
// together once every one is complete (etpack/output.h, Publish). Every plan
// and every destination is checked before a byte is written, and no
// destination may be a file any of the plans reads (CheckNotInputs: their
// placements and inputs). On failure no
// destination has changed and nothing is left behind, except in the cases
// Publish() names (a later rename failing after an earlier output replaced
// a file; a directory that could not be synced), which the error then says.
// Progress counts the bytes of all files together; `options.cancel` may
// stop the write at any of its checks, before publishing.
//
// Computing digests or integrity tables reads every source through memory
// (no in-kernel copy_file_range for those files), so their bytes can be
// hashed on their way into the output, and nothing is shared with them.
// `options.output` is not read: `fs` made its outputs as it was told.
Status WriteArtifactFiles(OutputFs& fs, const ArtifactFiles& files,
                          const WriteOptions& options = {});

// The same through env.output, or where that is null (the default) on the
// POSIX file system made with `options.output`: how an entry point given an
// Env (etpack/env.h) writes the paths it was given.
Status WriteArtifactFiles(const ArtifactFiles& files, const WriteOptions& options = {},
                          const Env& env = {});

// The common case: one file, written atomically.
Status WriteArtifactFile(const std::string& path, const ArtifactPlan& plan,
                         const WriteOptions& options = {}, const Env& env = {});

// Writes `plan` into a file the caller has open, at [offset, offset +
// plan.file_size) (an exporter streaming into a file object it owns). Not
// atomic: nothing is published or renamed, and on failure the range holds
// whatever was written so far. Every byte of the range ends up as the plan
// says, including the zero padding, even where the file already had bytes;
// the file grows when shorter and is never shortened. The plan is checked
// before anything is written (kInvalidArgument for a malformed plan). `name`
// names the file in errors. REQUIRES: `fd` is open for writing and not in
// append mode (kInvalidArgument otherwise); the caller keeps it open and
// does not write it concurrently. kInvalidArgument, before anything is
// written, when `fd` is a file the plan reads (CheckNotReadBy).
// `options.output` is not read; a cancelled write, like a failed one,
// leaves the range as it stands.
Status WriteArtifactAt(const ArtifactPlan& plan, int fd, uint64_t offset, const std::string& name,
                       const WriteOptions& options = {});

// kInvalidArgument ("IN: is the same file as the output NAME; refusing to
// overwrite an input") when the file open as `fd` (through whatever name,
// link or descriptor, in any mode) is one that `plan` reads: its placements
// and inputs, as WriteArtifactFiles checks its destinations. For a caller
// that writes the plan's bytes into `fd` another way (a file object's
// write()) before it starts.
Status CheckNotReadBy(const ArtifactPlan& plan, int fd, const std::string& name);

// The artifact's bytes in memory (small artifacts: tests, benchmarks).
Result<std::vector<uint8_t>> WriteArtifactToMemory(const ArtifactPlan& plan);

}  // namespace etpack

#endif  // ETPACK_WRITER_H_
