// apps/write_job.h — what `repack` and `pack` share: one input, -o, the
// alignment flags, writing a plan with a progress line, and the one-line
// summary of what was written. Every command writes its files here.

#ifndef ETPACK_APPS_WRITE_JOB_H_
#define ETPACK_APPS_WRITE_JOB_H_

#include <string>
#include <vector>

#include "args.h"
#include "digests.h"
#include "etpack/env.h"
#include "etpack/external_data.h"
#include "etpack/json.h"
#include "etpack/output.h"
#include "etpack/ptd.h"
#include "etpack/pte.h"
#include "etpack/status.h"
#include "etpack/writer.h"

namespace etpack::cli {

// How a command writes: every file through `env` (the one main() made),
// reporting as its flags say. The Env is borrowed: it outlives the command.
struct Writing {
  const Env& env;
  bool json = false;    // --json (below)
  bool sha256 = false;  // --digest sha256: print the digests computed while writing
};

struct WriteJob {
  std::string input;
  std::string output;
  Args args;
  DigestFlags digest;  // --integrity, --digest
  bool json = false;   // --json

  // How the job's files are written, through `env`.
  Writing writing(const Env& env) const { return Writing{env, json, digest.sha256}; }
};

// Splits the arguments: exactly one `what`, -o `output_name`, the
// alignment flags, --dedup, --integrity, --digest, --json and the command's
// `extra` value options. A failure is a usage error (its message says what
// is wrong).
Result<WriteJob> ParseWriteJob(const std::vector<std::string>& argv, const char* what,
                               const char* output_name, const std::vector<std::string>& extra = {});

// --dedup: PteOptions::dedup_constants (a .ptd stores every content once
// anyway).
inline constexpr char kDedupFlag[] = "--dedup";

// --max-shard-bytes N: write .ptd output as shards of at most N bytes each
// (PtdOptions::max_shard_bytes), for `ptd`, `pack` and `repack`.
inline constexpr char kMaxShardOption[] = "--max-shard-bytes";

// The value of --max-shard-bytes (a byte count, "1GiB"), 0 when absent; an
// error (its message names the flag) for a bad or zero value.
Result<uint64_t> ParseMaxShardBytes(const Args& args);

// --align N: the reflink-friendly preset (docs/performance.md, "Shared
// extents"): every segment and every constant N-aligned (segment and
// constant alignment N), so each item starts on a block and the zeros after
// it fill its last block. --segment-alignment and --constant-alignment
// given with it win.
inline constexpr char kAlignOption[] = "--align";

// Reads --align, "--segment-alignment" / "--constant-alignment" and --dedup
// into `options`. A bad value is an error whose message names the flag.
Status ApplyPteFlags(const Args& args, PteOptions* options);

// --json: a writing command prints one JSON object on stdout (the files
// written, bytes written, shared and copied) instead of its text report
// (Writing::json, which WriteFiles and the Report functions follow).
inline constexpr char kJsonFlag[] = "--json";

// Every command reads and writes through the one Env main() made (the
// POSIX files; a test hands its own, e.g. the fault-injecting outputs of
// test/support/fault_output.h), given to it and by it to every call that opens a
// path: the last parameter, as in the library (etpack/env.h), or inside
// the Writing the calls below take.

// Writes `files` as one unit (WriteArtifactFiles), with a progress line,
// then reports how many bytes were written and how many of those share
// the disk blocks of the files they came from (WriteStats): a "shared:"
// line, or with --json the command's one JSON object. With `sha256`, prints
// the digests computed while writing (digests.h; not with --json).
Status WriteFiles(const ArtifactFiles& files, const Writing& w);

// What WriteFiles does before it reports: writes `files` as one unit with
// a progress line, filling `stats` (and `digests` when not null). For a
// command that prints its own report.
Status WriteFilesWithProgress(const ArtifactFiles& files, WriteStats* stats,
                              std::vector<ArtifactSha256>* digests, const Env& env);
// WriteFiles' text line: "shared:  S of N bytes written share the disk
// blocks they came from, C bytes copied".
void PrintWriteStats(const WriteStats& stats);

// Writes `plan` to `output` atomically with a progress line.
Status WritePlanned(const std::string& output, const ArtifactPlan& plan, const Writing& w);

// "wrote OUT (N bytes, ...)" on stdout; nothing with --json.
void ReportPte(const std::string& output, const PtePlan& plan, const PteOptions& options,
               const Writing& w);
void ReportPtd(const std::string& output, const PtdPlan& plan, size_t entries,
               const PtdOptions& options, const Writing& w);

// Writes the .ptd file(s) of PlanPtdFiles as one unit and reports each.
Status WritePtdFiles(const std::vector<PtdFilePlan>& files, const PtdOptions& options,
                     const Writing& w);

// PlanPte, WritePlanned, ReportPte. A planning error is about the input:
// its message starts with `input_name` (the manifest or program read).
Status PlanAndWrite(const std::string& input_name, const std::string& output, PteInput input,
                    const PteOptions& options, const Writing& w);

// The .ptd named by `flag` (--external-constants, --external-named-data),
// written beside the -o program: nullptr when the flag is absent; an
// error (a usage error) for an empty name, standard output or the -o file.
Result<const std::string*> DataOutput(const WriteJob& job, const char* flag);

// A program and the .ptd holding its data, planned together by
// PlanProgramWithData (etpack/external_data.h; a planning error starts with
// `input_name` for the program, `ptd_path` for the data), published as one
// unit, the .ptd first, and both reported. With `max_shard_bytes` the .ptd
// is shards named after `ptd_path`, all published with the program.
Status PlanAndWritePair(const std::string& input_name, const std::string& output, PteInput pte,
                        const PteOptions& options, const std::string& ptd_path, PtdInput ptd,
                        uint64_t max_shard_bytes, const Writing& w);

}  // namespace etpack::cli

#endif  // ETPACK_APPS_WRITE_JOB_H_
