// `etpack repack IN.pte -o OUT.pte [--external-constants OUT.ptd]`: lays a
// program out again, optionally moving its constants into a .ptd.

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "digests.h"
#include "etpack/external_data.h"
#include "etpack/ptd.h"
#include "etpack/pte.h"
#include "etpack/pte_file.h"
#include "etpack/writer.h"
#include "write_job.h"

namespace etpack::cli {

int Repack(const std::vector<std::string>& argv) {
  Result<WriteJob> job = ParseWriteJob(argv, "IN.pte", "OUT.pte", {"--external-constants"});
  if (!job.ok()) return UsageError("repack", job.status().message());
  // Flags are checked before anything is opened (usage errors come first);
  // they then override what the input file was written with.
  PteOptions flag_check;
  if (Status s = ApplyPteFlags(job->args, &flag_check); !s.ok()) {
    return UsageError("repack", s.message());
  }
  const std::string* ptd_path = job->args.Value("--external-constants");
  if (ptd_path != nullptr) {
    if (ptd_path->empty() || *ptd_path == "-") {
      return UsageError("repack", "--external-constants needs a file name (not standard output)");
    }
    if (std::filesystem::path(*ptd_path).lexically_normal() ==
        std::filesystem::path(job->output).lexically_normal()) {
      return UsageError("repack", "the .pte and the .ptd must be different files");
    }
  }
  Result<std::unique_ptr<PteFile>> file = PteFile::Open(job->input);
  if (!file.ok()) return Failure(file.status());
  PteOptions options = (*file)->InferredOptions();
  if (Status s = ApplyPteFlags(job->args, &options); !s.ok()) return Failure(s);
  const DigestFlags digest = ParseDigestFlags(job->args).value();  // checked by ParseWriteJob
  options.integrity_table = digest.integrity_table;
  if (ptd_path == nullptr) {
    Result<PteInput> input = (*file)->ToInput();
    if (!input.ok()) return Failure(input.status());
    if (Status s = PlanAndWrite(job->input, job->output, std::move(*input), options, digest.sha256);
        !s.ok()) {
      return Failure(s);
    }
    return kExitOk;
  }

  // The constants' alignment inside the .pte no longer matters; as .ptd
  // entries they keep the alignment asked for, and their segments the
  // segment alignment.
  Result<std::pair<PteInput, PtdInput>> split =
      ExternalizeConstants(**file, options.constant_tensor_alignment);
  if (!split.ok()) return Failure(split.status());
  PtdOptions ptd_options;
  ptd_options.segment_alignment = options.segment_alignment;
  ptd_options.integrity_table = digest.integrity_table;
  // Plan both before writing either: a plan error leaves no file behind.
  Result<PtePlan> pte_plan = PlanPte(std::move(split->first), options);
  if (!pte_plan.ok()) return Failure(pte_plan.status().WithContext(job->output));
  Result<PtdPlan> ptd_plan = PlanPtd(split->second, ptd_options);
  if (!ptd_plan.ok()) return Failure(ptd_plan.status().WithContext(*ptd_path));
  // Published together, the .ptd first: a .pte never appears without its data.
  if (Status s = WriteFiles({{*ptd_path, &ptd_plan->artifact}, {job->output, &pte_plan->artifact}},
                            digest.sha256);
      !s.ok()) {
    return Failure(s);
  }
  ReportPtd(*ptd_path, *ptd_plan, split->second, ptd_options);
  ReportPte(job->output, *pte_plan, options);
  return kExitOk;
}

}  // namespace etpack::cli
