// etpack/share.h — one copy of the weights for a family of programs
// (`etpack share`, docs/share.md).
//
// Programs exported from one model (one per context window, input shape,
// backend) each carry the same weights. PlanShare turns such a family into
// thin programs plus one shared .ptd holding every data item two or more of
// them hold alike, without a re-export: the runtime loads each thin program
// with the shared file (and its own .ptd, if it had one).
//
// What moves is what SharedAcrossFiles (etpack/sizes.h) calls shareable —
// the one owner of that verdict, so `etpack inspect --sizes A B` and `etpack
// share --dry-run` agree: every content (bytes; for a tensor also dtype,
// sizes and dim_order) held by two or more inputs, at least min_bytes long,
// that is a constant tensor (constant segment or inline constant_buffer),
// a named-data key or a .ptd entry. Delegate payloads and mutable data never
// move; a named-data or .ptd key naming different bytes in different inputs
// stays (two .ptd entries disagreeing refuse the whole share). Each such
// content is stored once in the shared file.
//
// Keys in the shared file:
//   - a named-data key or a .ptd entry keeps its key;
//   - a moved constant tensor keeps its fully_qualified_name when every
//     tensor holding the content with that layout has that one name and,
//     in every input, the name means these bytes with this layout and
//     nothing else; otherwise it gets a key made from its content:
//       kContentKeyPrefix ("etpack.content.", etpack/external_data.h) +
//       32 lower-case hex digits of XXH3-128 (high 64
//       bits first) over the ASCII text
//       "<scalar_type>:<sizes, comma-separated>:<dim_order, comma-separated>:<bytes>\n"
//       followed by the content's sample: all of it when it is at most
//       12 KiB, else its first 4 KiB, the 4 KiB at (bytes - 4096) / 2
//       (rounded down) and its last 4 KiB. Different contents that get the
//       same text (equal samples) are told apart by "-2", "-3", ... in the
//       order of their bytes (the first keeps the plain key).
// A moved tensor becomes EXTERNAL under its key and keeps its
// data_buffer_idx; a constant buffer no tensor inside reads any more is
// emptied (ExternalizeTensors, etpack/external_data.h). A moved named-data
// key is dropped from the thin program (the runtime looks it up in the
// program's data files too).
//
// Each thin program loads with the shared file(s) alone (a loader taking
// one data file, as executorch.runtime's load_program, can load it): what
// stays per variant goes back inside it. A .ptd input goes with the
// program of its stem (A.ptd with A.pte) and with every program whose
// EXTERNAL keys only it holds; one no program is paired with so goes with
// every program. Its entries that do not move go into the one program it
// goes with (EXTERNAL tensors reading them become constants, blobs join the
// named data, as InternalizeData brings them in), or to the shared file
// when it goes with several programs (or no tensor of its one program reads
// the entry). A program whose EXTERNAL keys no .ptd input holds is refused.
//
// Outputs, in out_dir: each .pte input's base name (its thin program; one
// nothing moves out of nor into is copied as it is unless alignment or
// integrity_table ask for another layout), and the shared file
// `data_name`, or its shards with max_shard_bytes (named as PlanPtdFiles
// names them). No .ptd input is written. The same inputs give the same bytes whatever their order;
// the order only changes the order of the report's lists.
//
// Cost: planning reads what SharedAcrossFiles reads (samples, then every
// item whose size and sample another has once, unless it lies on the same
// blocks as another), the samples of the contents given content keys, and
// nothing else; memory grows with the number of items, never with their
// bytes. Writing streams every byte.

#ifndef ETPACK_SHARE_H_
#define ETPACK_SHARE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "etpack/artifact_file.h"
#include "etpack/env.h"
#include "etpack/external_data.h"
#include "etpack/json.h"
#include "etpack/ptd.h"
#include "etpack/pte.h"
#include "etpack/sizes.h"
#include "etpack/status.h"
#include "etpack/tensor_layout.h"
#include "etpack/writer.h"

namespace etpack {

struct ShareOptions {
  // The folder the outputs go to. REQUIRES: non-empty; it must exist when
  // the plan is written.
  std::string out_dir;
  // The shared file's name in out_dir: a file name ending in ".ptd".
  std::string data_name = "shared.ptd";
  // Non-zero: the shared file as shards of at most this many bytes each
  // (PtdOptions::max_shard_bytes).
  uint64_t max_shard_bytes = 0;
  // 0: each .pte keeps the alignments it was written with
  // (PteFile::InferredOptions), .ptd files have segments 128-aligned.
  // Else (a power of two, at most kMaxInlineAlignment) every segment and
  // every constant of every output at a multiple of it, as `--align`
  // elsewhere (4096: outputs share the inputs' disk blocks where the file
  // system can, docs/performance.md).
  uint64_t alignment = 0;
  // Contents smaller than this stay where they are (SharedOptions).
  uint64_t min_bytes = 4096;
  // Every output with an integrity table (docs/integrity.md).
  bool integrity_table = false;
};

// One input and what becomes of it.
struct ShareFileReport {
  std::string input;                       // the path given
  ArtifactKind kind = ArtifactKind::kPte;  // kPte or kPtd
  // A .pte: its thin program in out_dir. A .ptd: "" (a .ptd input is never
  // written; `into` says where its entries went).
  std::string output;
  uint64_t bytes_before = 0;  // the input's size
  uint64_t bytes_after = 0;   // the output's size; 0 when not written
  // Bytes of its items now in the shared file (each stored copy once), and
  // the items: constant tensors, named-data keys, entries.
  uint64_t bytes_moved = 0;
  uint64_t items_moved = 0;
  // A .pte: the entries of its own .ptd inputs now inside its thin program
  // (its per-variant data: held by no other input alike, or below
  // min_bytes, or under a key meaning other bytes elsewhere), their bytes,
  // and the .ptd inputs they came from.
  uint64_t items_taken = 0;
  uint64_t bytes_taken = 0;
  std::vector<std::string> taken_from;
  // A .pte: the data files it loads with: the shared file(s) when it reads
  // any of their keys, else none. Never more: what `etpack verify` takes
  // with it, and what a loader taking one data file gives it.
  std::vector<std::string> data;
  // A .ptd: the outputs holding its entries now (the shared file(s), then
  // the thin programs that took some in).
  std::vector<std::string> into;
};

// A key of the shared file.
struct ShareEntry {
  std::string key;
  uint64_t size = 0;                          // bytes of its content
  std::optional<TensorLayout> tensor_layout;  // absent for a blob (named data)
  std::vector<uint32_t> files;                // the inputs it came from, ascending
};

struct ShareReport {
  std::vector<ShareFileReport> files;     // in the order given
  std::vector<std::string> shared_files;  // the shared file or its shards; none when nothing moves
  uint64_t shared_bytes = 0;              // their total size
  std::vector<ShareEntry> entries;        // the shared file's keys, by key
  uint64_t bytes_before = 0;              // every input
  uint64_t bytes_after = 0;               // every output, the shared files included
  // What the inputs hold alike, and for what stays duplicated why
  // (SharedContent::reason) and the keys in conflict.
  SharedReport analysis;
};

// The outputs, planned; nothing is written yet.
struct SharePlan {
  ShareReport report;
  std::vector<PtdFilePlan> data;                          // the shared file(s)
  std::vector<std::pair<std::string, PtePlan>> programs;  // (path, plan), in input order
  // The inputs, open: the plans read from them.
  std::vector<std::shared_ptr<const ArtifactFile>> inputs;
  std::string out_dir;  // ShareOptions::out_dir

  // Every output at its path in out_dir, data files first (pointers into
  // this plan): what WriteShare writes, and what a report lists.
  ArtifactFiles files() const;
};

// Plans `etpack share` for `inputs` (.pte and .ptd paths; two or more .pte)
// with `options`. Fails, before anything is written, with kInvalidArgument
// for fewer than two .pte, another kind of file, an input whose name does
// not end in its kind's suffix (.pte, .ptd), two inputs or outputs of one
// name, bad options, a program whose EXTERNAL keys no .ptd input holds
// (naming it and the keys), or two items for the shared file under one key
// with different bytes or layouts (naming the key and both files); with the
// opening error of an input that does not open; with a planner's error
// prefixed with the output's name. The inputs are read through env.input
// (etpack/env.h); writing the plan is the caller's (WriteShare).
Result<SharePlan> PlanShare(const std::vector<std::string>& inputs, const ShareOptions& options,
                            const Env& env = {});

// Writes `plan` as one unit: out_dir afterwards holds exactly the plan's
// files and the marker ".etpack-unit" (listing them), or, on any failure,
// is as it was. Every output is built in a hidden folder beside out_dir
// (".<name>.etpack-unit-XXXXXX") and then one renameat2() puts that folder
// in place: a new out_dir is renamed into place, an existing one is
// exchanged with it and then removed, so the files of an earlier share
// (other shards, programs no longer in the family) go with it. A process
// killed at any point (SIGKILL, the OOM killer) or a power loss leaves
// out_dir all old or all new, never mixed (docs/share.md, "What holds when
// share fails"); the hidden folder it may leave is removed by the next
// share beside it.
//
// out_dir may be new (its missing parents are made, and removed again when
// the share fails), empty, or a folder an earlier share wrote that holds
// nothing else (its marker lists its files). Anything else is refused,
// naming the file, before anything is written (kInvalidArgument): share
// never removes a file that is not its own. An input that is a file of
// out_dir is refused too ("refusing to overwrite an input").
//
// `options` as for WriteArtifactFiles (progress, cancel, digests, stats;
// `options.output` makes the files when env.output is null). env.output not
// null: the files are made through it, at their paths in the hidden folder
// (a test's fault-injecting output); the folder itself is always a POSIX
// folder. Errors name the files by their paths in out_dir.
Status WriteShare(const SharePlan& plan, const WriteOptions& options = {}, const Env& env = {});

// What Share() did: the plan (its report above all) and, unless it was a
// dry run, what writing it did.
struct ShareResult {
  SharePlan plan;
  std::optional<WriteStats> written;  // empty: a dry run, nothing written
};

// The whole of `etpack share`, the one sequence every front end (the CLI,
// etpack_share, etpack.share) runs: PlanShare(inputs, options, env), then
// unless `dry_run` WriteShare(plan, write, env), whose stats the result keeps
// (write.stats is the call's own: what the caller set there is not used).
// Fails as those do; a dry run writes nothing, nor does a failure.
Result<ShareResult> Share(const std::vector<std::string>& inputs, const ShareOptions& options,
                          bool dry_run, WriteOptions write = {}, const Env& env = {});

// {"files": [{"input", "kind", "output", "bytes_before", "bytes_after",
// "bytes_moved", "items_moved", "items_taken", "bytes_taken", "taken_from",
// "data", "into"}], "shared_files", "shared_bytes",
// "entries": [{"key", "size", "tensor_layout", "files"}], "bytes_before",
// "bytes_after", "bytes_saved", "stayed": [{"size", "copies", "files",
// "reason", "items"}] (the contents held alike that do not move, items by
// name), "conflicts": [{"key", "files", "entry_files"}], "dry_run"}, and
// with `written` (what writing the plan did) the members SetWriteStatsJson
// names ("written": the shared files, then the thin programs, as written;
// "bytes_written", "bytes_shared", "bytes_copied"); without it "dry_run" is
// true. The one rendering of a share's report: `etpack share --json`,
// etpack_share and etpack.share print it (from a ShareResult).
json::Value ShareReportJson(const ShareReport& report, const WriteStats* written = nullptr);
json::Value ShareReportJson(const ShareResult& result);

}  // namespace etpack

#endif  // ETPACK_SHARE_H_
