// apps/write_job.h — what `repack` and `pack` share: one input, -o, the
// alignment flags, writing a plan with a progress line, and the one-line
// summary of what was written. Every command writes its files here.

#ifndef ETPACK_APPS_WRITE_JOB_H_
#define ETPACK_APPS_WRITE_JOB_H_

#include <string>
#include <vector>

#include "args.h"
#include "etpack/output.h"
#include "etpack/ptd.h"
#include "etpack/pte.h"
#include "etpack/status.h"
#include "etpack/writer.h"

namespace etpack::cli {

struct WriteJob {
  std::string input;
  std::string output;
  Args args;
};

// Splits the arguments: exactly one `what`, -o `output_name`, the
// alignment flags, --dedup, --integrity, --digest and the command's `extra` value
// options. A failure is a
// usage error (its message says what is wrong).
Result<WriteJob> ParseWriteJob(const std::vector<std::string>& argv, const char* what,
                               const char* output_name, const std::vector<std::string>& extra = {});

// --dedup: PteOptions::dedup_constants (a .ptd stores every content once
// anyway).
inline constexpr char kDedupFlag[] = "--dedup";

// Reads "--segment-alignment" / "--constant-alignment" and --dedup into
// `options`. A bad value is an error whose message names the flag.
Status ApplyPteFlags(const Args& args, PteOptions* options);

// Commands write POSIX files with the default options. While a
// ScopedCommandOutputFs is alive they write through its `fs` instead (tests:
// the fault-injecting outputs of io/fault_output.h). REQUIRES: `fs` outlives it.
class ScopedCommandOutputFs {
 public:
  explicit ScopedCommandOutputFs(OutputFs* fs);
  ~ScopedCommandOutputFs();
  ScopedCommandOutputFs(const ScopedCommandOutputFs&) = delete;
  ScopedCommandOutputFs& operator=(const ScopedCommandOutputFs&) = delete;

 private:
  OutputFs* previous_;
};

// Writes `files` as one unit (WriteArtifactFiles), with a progress line;
// with `sha256`, prints the digests computed while writing (digests.h).
Status WriteFiles(const ArtifactFiles& files, bool sha256 = false);

// Writes `plan` to `output` atomically with a progress line.
Status WritePlanned(const std::string& output, const ArtifactPlan& plan, bool sha256 = false);

// "wrote OUT (N bytes, ...)" on stdout.
void ReportPte(const std::string& output, const PtePlan& plan, const PteOptions& options);
void ReportPtd(const std::string& output, const PtdPlan& plan, const PtdInput& input,
               const PtdOptions& options);

// PlanPte, WritePlanned, ReportPte. A planning error is about the input:
// its message starts with `input_name` (the manifest or program read).
Status PlanAndWrite(const std::string& input_name, const std::string& output, PteInput input,
                    const PteOptions& options, bool sha256 = false);

}  // namespace etpack::cli

#endif  // ETPACK_APPS_WRITE_JOB_H_
