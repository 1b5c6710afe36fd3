// `etpack pack MANIFEST.json -o OUT`: a .pte or .ptd from a JSON manifest.

#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "commands.h"
#include "digests.h"
#include "etpack/fat_delegate.h"
#include "etpack/manifest.h"
#include "etpack/ptd.h"
#include "etpack/pte.h"
#include "write_job.h"

namespace etpack::cli {

int Pack(const std::vector<std::string>& argv) {
  Result<WriteJob> job = ParseWriteJob(argv, "MANIFEST.json", "OUT", {"--external-named-data"});
  if (!job.ok()) return UsageError("pack", job.status().message());
  // Validate the flags before touching any file so a typo costs nothing.
  PteOptions flag_check;
  if (Status s = ApplyPteFlags(job->args, &flag_check); !s.ok()) {
    return UsageError("pack", s.message());
  }
  Result<const std::string*> ptd_path = DataOutput(*job, "--external-named-data");
  if (!ptd_path.ok()) return UsageError("pack", ptd_path.status().message());
  const DigestFlags& digest = job->digest;
  Result<AnyManifest> manifest = LoadManifest(job->input);
  if (!manifest.ok()) return Failure(manifest.status());

  if (auto* pte = std::get_if<PteManifest>(&*manifest)) {
    PteOptions options = pte->options;
    if (Status s = ApplyPteFlags(job->args, &options); !s.ok()) return Failure(s);
    options.integrity_table = digest.integrity_table;
    Status s;
    if (*ptd_path == nullptr) {
      s = PlanAndWrite(job->input, job->output, std::move(pte->input), options, digest.sha256);
    } else {
      // All named data, the program's own and its fat delegates' (merged
      // into one list by the manifest reader): delegates look keys up in
      // the .pte's named data and the .ptd files together, so only the
      // file the bytes live in changes.
      PtdInput data = PtdInputOf(pte->input.named_data);
      pte->input.named_data.clear();
      s = PlanAndWritePair(job->input, job->output, std::move(pte->input), options, **ptd_path,
                           std::move(data), digest.sha256);
    }
    return s.ok() ? kExitOk : Failure(s);
  }

  const PtdManifest& ptd = std::get<PtdManifest>(*manifest);
  if (*ptd_path != nullptr) {
    return UsageError("pack", "--external-named-data applies to a .pte manifest (" + job->input +
                                  " has format \"ptd\")");
  }
  if (job->args.Value("--constant-alignment") != nullptr) {
    return UsageError("pack", "--constant-alignment does not apply to a .ptd manifest (" +
                                  job->input + " has format \"ptd\")");
  }
  PtdOptions options = ptd.options;
  if (job->args.Value("--segment-alignment") != nullptr ||
      job->args.Value(kAlignOption) != nullptr) {
    options.segment_alignment = flag_check.segment_alignment;
  }
  options.integrity_table = digest.integrity_table;
  Result<PtdPlan> plan = PlanPtd(ptd.input, options);
  if (!plan.ok()) return Failure(plan.status().WithContext(job->input));
  if (Status s = WritePlanned(job->output, plan->artifact, digest.sha256); !s.ok()) {
    return Failure(s);
  }
  ReportPtd(job->output, *plan, ptd.input.entries.size(), options);
  return kExitOk;
}

}  // namespace etpack::cli
