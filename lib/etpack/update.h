// etpack/update.h — new weights into an existing .pte or .ptd, in place
// (`etpack update`, etpack.update in Python).
//
//   ETPACK_ASSIGN_OR_RETURN(PtdInput weights, ReadWeights({"new.safetensors"}));
//   ETPACK_ASSIGN_OR_RETURN(UpdateReport r, UpdateWeights("model.ptd", weights));
//
// What can be updated is every tensor or blob of the file that has a key:
//   .ptd  every entry (a tensor with its layout, or an opaque blob);
//   .pte  every constant tensor, under the key `repack --external-constants`
//         would give it (its fully_qualified_name, else
//         "constant.<method>.<value index>"), and every named-data key (a
//         blob). Tensors marked EXTERNAL live in a .ptd: update that file.
// A new tensor replaces an old one when the keys are equal and the layouts
// are: the same scalar type, sizes and dim_order (a blob on either side:
// the same byte size). Anything else refuses the whole update before a byte
// changes: a key the file does not have, another layout, a key whose bytes
// the file shares with a key not given the same new bytes (deduplicated
// storage), a key given twice.
//
// The file is replaced as a whole, atomically, through the output seam
// (etpack/output.h): readers and a kill at any moment see the old file or
// the new one, never a mix, and no temporary file stays behind. Where the
// file system shares extents (XFS with reflink, btrfs) the new file is a
// clone of the old one with only the changed bytes written, so time and new
// disk grow with the changed bytes; elsewhere every byte is copied
// (copy_file_range for the unchanged ranges). Tensors whose new bytes equal
// the old are skipped; when nothing changes nothing is written at all. The
// file's integrity table (docs/integrity.md), when it has one, is brought
// up to date, so `etpack verify` passes after.

#ifndef ETPACK_UPDATE_H_
#define ETPACK_UPDATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "etpack/env.h"
#include "etpack/json.h"
#include "etpack/output.h"
#include "etpack/ptd.h"
#include "etpack/status.h"
#include "etpack/writer.h"

namespace etpack {

struct UpdateReport {
  uint64_t tensors_rewritten = 0;  // keys whose bytes changed
  uint64_t bytes_rewritten = 0;    // their bytes
  uint64_t tensors_unchanged = 0;  // keys given with the bytes they had
  uint64_t bytes_unchanged = 0;
  bool written = false;        // false when nothing changed (the file was left alone)
  bool cloned = false;         // the new file shares the old one's extents
  uint64_t file_size = 0;      // bytes in the file (before and after: the same)
  uint64_t bytes_written = 0;  // bytes the output wrote: the changes and the
                               // integrity table when cloned, the whole file else
  uint64_t other_links = 0;    // other hard links to the file read, which keep
                               // the old contents (see UpdateWeights)
};

// Replaces, in the .pte or .ptd at `path`, the bytes of every entry of
// `weights` (keys, layouts and bytes; PtdEntry::alignment is ignored) by
// the rules above. The file is read through `env.input` and the new file
// written through `env.output` (etpack/env.h; null: the POSIX outputs made
// with `options.output`); the lock (below) is taken through env.out()
// (OutputFs::LockForUpdate: for the POSIX outputs, on the POSIX file `path`
// names), and a file read must be the one locked (an input fs that is no
// view of the POSIX files has files no POSIX lock covers). The
// new file is a plan over the old one (ArtifactPlan::base, replaces_base)
// written by the writer (etpack/writer.h), with `options` as for any write:
// progress counts the changed bytes (and, where the file is copied rather
// than cloned, the unchanged ones), `options.stats` receives what the write
// did (WriteStats::bytes_cloned: the old file's bytes a clone shares), and
// `options.sha256`, when asked for, keeps the file from being cloned (every
// byte then passes through memory). Errors name `path`, the key and both
// layouts ("model.ptd: key 'w': the file has FLOAT[4, 4] (64 bytes),
// new.safetensors has HALF[4, 4] (32 bytes)"): kNotFound for an unknown
// key, kInvalidArgument for any other refusal, the reader's codes for a file
// that is not a valid artifact (a .bpte is kInvalidArgument).
//
// Concurrent updates of one file (threads or processes) run one after the
// other: each holds an exclusive flock(2) on the file from before it reads
// it until its replacement is published, and one that waited reads the file
// the other published, so every update lands (two updates of different keys
// both change the file). `options.cancel` (etpack/output.h), when given, is
// asked while waiting (kIoError "PATH: update cancelled by the caller ...",
// nothing written), while writing and while publishing waits, as for any
// write (WriteOptions::cancel): a cancelled update leaves the file as it was. A writer that is not
// an update (a `repack -o` of the same path) takes no such lock: when it replaces or removes the
// file while the update runs, the update fails with kIoError ("PATH: another writer replaced or
// removed the file since it was read; nothing was written") instead of discarding that file.
//
// The update replaces the file at `path` (links followed) with a new file,
// as `sed -i` and rsync do: other hard links to the old file keep the old
// contents (they are other names of the old inode, which is left alone);
// UpdateReport::other_links counts them, for the caller to say so.
// REQUIRES: env's file systems outlive the call.
Result<UpdateReport> UpdateWeights(const std::string& path, const PtdInput& weights,
                                   const WriteOptions& options = {}, const Env& env = {});

// New weights from files, as `etpack update --from` takes them: any mix of
// .safetensors files, sharded checkpoint indexes (*.index.json) and .ptd
// files (every entry, tensors and blobs). A key in two of them is an error
// naming both (kInvalidArgument). The sources read the files (nothing is
// loaded into memory); PtdInput::read lists every file read. Every file is
// opened through `env.input`.
Result<PtdInput> ReadWeights(const std::vector<std::string>& paths, const Env& env = {});

// {"path", "tensors_rewritten", "bytes_rewritten", "tensors_unchanged",
// "bytes_unchanged", "written", "cloned", "file_size", "bytes_written",
// "bytes_shared" (the bytes a clone shares with the old file:
// file_size - bytes_written when cloned, else 0), "other_links"}: the one
// rendering of the report of an update of `path`, which `etpack update
// --json` prints (adding its "seconds") and etpack.update returns.
json::Value UpdateReportJson(const std::string& path, const UpdateReport& report);

}  // namespace etpack

#endif  // ETPACK_UPDATE_H_
