// `etpack repack IN.pte -o OUT.pte [--external-constants OUT.ptd | --data X.ptd...]`:
// lays a program out again, optionally moving its constants into a .ptd, or
// bringing the data it finds in .ptd files back inside.

#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "digests.h"
#include "etpack/external_data.h"
#include "etpack/ptd.h"
#include "etpack/ptd_file.h"
#include "etpack/pte.h"
#include "etpack/pte_file.h"
#include "etpack/writer.h"
#include "write_job.h"

namespace etpack::cli {

namespace {

// `thin` with the data of the .ptd files `paths` inside (InternalizeData),
// noting when nothing of them is used.
Result<PteInput> Internalize(const PteFile& thin, const std::vector<std::string>& paths,
                             const Env& env) {
  std::vector<std::unique_ptr<PtdFile>> files;
  std::vector<const PtdFile*> data;
  for (const std::string& path : paths) {
    ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<PtdFile> f, PtdFile::Open(path, env));
    data.push_back(f.get());
    files.push_back(std::move(f));
  }
  InternalizeStats stats;
  ETPACK_ASSIGN_OR_RETURN(PteInput input, InternalizeData(thin, data, &stats));
  if (stats.tensors == 0 && stats.named_data == 0) {
    std::fprintf(stderr,
                 "etpack: note: %s has no EXTERNAL tensors and the data files hold no named "
                 "data: nothing of them is used\n",
                 thin.name().c_str());
  }
  return input;
}

}  // namespace

int Repack(const std::vector<std::string>& argv, const Env& env) {
  Result<WriteJob> job = ParseWriteJob(argv, "IN.pte", "OUT.pte",
                                       {"--external-constants", "--data...", kMaxShardOption});
  if (!job.ok()) return UsageError("repack", job.status().message());
  // Flags are checked before anything is opened (usage errors come first);
  // they then override what the input file was written with.
  PteOptions flag_check;
  if (Status s = ApplyPteFlags(job->args, &flag_check); !s.ok()) {
    return UsageError("repack", s.message());
  }
  Result<const std::string*> ptd_path = DataOutput(*job, "--external-constants");
  if (!ptd_path.ok()) return UsageError("repack", ptd_path.status().message());
  Result<uint64_t> max_shard = ParseMaxShardBytes(job->args);
  if (!max_shard.ok()) return UsageError("repack", max_shard.status().message());
  if (*max_shard != 0 && *ptd_path == nullptr) {
    return UsageError("repack", "--max-shard-bytes applies to --external-constants");
  }
  const std::vector<std::string> data_paths = job->args.Values("--data");
  if (!data_paths.empty() && *ptd_path != nullptr) {
    return UsageError("repack",
                      "--data brings a program's data back inside and --external-constants "
                      "moves its constants out: give one or the other");
  }
  Result<std::unique_ptr<PteFile>> file = PteFile::Open(job->input, env);
  if (!file.ok()) return Failure(file.status());
  PteOptions options = (*file)->InferredOptions();
  if (Status s = ApplyPteFlags(job->args, &options); !s.ok()) return Failure(s);
  const DigestFlags& digest = job->digest;
  options.integrity_table = digest.integrity_table;
  if (*ptd_path == nullptr) {
    Result<PteInput> input =
        data_paths.empty() ? (*file)->ToInput() : Internalize(**file, data_paths, env);
    if (!input.ok()) return Failure(input.status());
    if (Status s =
            PlanAndWrite(job->input, job->output, std::move(*input), options, job->writing(env));
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
  if (Status s =
          PlanAndWritePair(job->output, job->output, std::move(split->first), options, **ptd_path,
                           std::move(split->second), *max_shard, job->writing(env));
      !s.ok()) {
    return Failure(s);
  }
  return kExitOk;
}

}  // namespace etpack::cli
