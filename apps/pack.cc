// `etpack pack MANIFEST.json -o OUT`: a .pte or .ptd from a JSON manifest.

#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "commands.h"
#include "digests.h"
#include "etpack/external_data.h"
#include "etpack/fat_delegate.h"
#include "etpack/manifest.h"
#include "etpack/ptd.h"
#include "etpack/pte.h"
#include "write_job.h"

namespace etpack::cli {

int Pack(const std::vector<std::string>& argv, const Env& env) {
  Result<WriteJob> job =
      ParseWriteJob(argv, "MANIFEST.json", "OUT", {"--external-named-data", kMaxShardOption});
  if (!job.ok()) return UsageError("pack", job.status().message());
  // Validate the flags before touching any file so a typo costs nothing.
  PteOptions flag_check;
  if (Status s = ApplyPteFlags(job->args, &flag_check); !s.ok()) {
    return UsageError("pack", s.message());
  }
  Result<const std::string*> ptd_path = DataOutput(*job, "--external-named-data");
  if (!ptd_path.ok()) return UsageError("pack", ptd_path.status().message());
  Result<uint64_t> max_shard = ParseMaxShardBytes(job->args);
  if (!max_shard.ok()) return UsageError("pack", max_shard.status().message());
  const DigestFlags& digest = job->digest;
  Result<AnyManifest> manifest = LoadManifest(job->input, env);
  if (!manifest.ok()) return Failure(manifest.status());

  if (auto* pte = std::get_if<PteManifest>(&*manifest)) {
    PteOptions options = pte->options;
    if (Status s = ApplyPteFlags(job->args, &options); !s.ok()) return Failure(s);
    options.integrity_table = digest.integrity_table;
    Status s;
    if (*ptd_path == nullptr) {
      if (*max_shard != 0) {
        return UsageError("pack",
                          "--max-shard-bytes applies to .ptd output: a manifest with "
                          "\"format\": \"ptd\" or --external-named-data");
      }
      s = PlanAndWrite(job->input, job->output, std::move(pte->input), options, job->writing(env));
    } else {
      // All named data, the program's own and its fat delegates' (merged
      // into one list by the manifest reader): delegates look keys up in
      // the .pte's named data and the .ptd files together, so only the
      // file the bytes live in changes.
      PtdInput data = PtdInputOf(pte->input.named_data);
      std::set<std::string> moved;
      for (const NamedData& n : pte->input.named_data) moved.insert(n.key);
      if (Status s = MoveNamedDataOut(&pte->input, moved); !s.ok()) {
        return Failure(s.WithContext(job->input));
      }
      s = PlanAndWritePair(job->input, job->output, std::move(pte->input), options, **ptd_path,
                           std::move(data), *max_shard, job->writing(env));
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
  options.max_shard_bytes = *max_shard;
  Result<std::vector<PtdFilePlan>> plans = PlanPtdFiles(job->output, ptd.input, options);
  if (!plans.ok()) return Failure(plans.status().WithContext(job->input));
  if (Status s = WritePtdFiles(*plans, options, job->writing(env)); !s.ok()) return Failure(s);
  return kExitOk;
}

}  // namespace etpack::cli
