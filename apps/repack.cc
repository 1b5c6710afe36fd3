// `etpack repack IN.pte -o OUT.pte [--external-constants OUT.ptd]`: lays a
// program out again, optionally moving its constants into a .ptd.

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "etpack/external_data.h"
#include "etpack/ptd.h"
#include "etpack/pte.h"
#include "etpack/pte_file.h"
#include "etpack/writer.h"
#include "write_job.h"

namespace etpack::cli {
namespace {

// A fresh name in `path`'s directory, reserved by creating an empty file
// there, so a finished artifact can wait next to its destination.
Result<std::string> ReserveStagingName(const std::string& path) {
  const std::filesystem::path p(path);
  const std::filesystem::path dir = p.has_parent_path() ? p.parent_path() : ".";
  std::string tmpl = (dir / ("." + p.filename().string() + ".etpack-staged-XXXXXX")).string();
  const int fd = mkstemp(tmpl.data());
  if (fd < 0) return IoError("cannot create a file next to " + path, errno);
  close(fd);
  return tmpl;
}

// Writes a program and its external data so that either both appear under
// their names or neither does: both are written completely to staging
// names first, then renamed into place, the .ptd first (a .pte must never
// appear without the data it refers to).
Status WriteProgramAndData(const std::string& pte_path, const ArtifactPlan& pte_plan,
                           const std::string& ptd_path, const ArtifactPlan& ptd_plan) {
  ETPACK_ASSIGN_OR_RETURN(std::string staged_ptd, ReserveStagingName(ptd_path));
  Result<std::string> staged_pte = ReserveStagingName(pte_path);
  if (!staged_pte.ok()) {
    unlink(staged_ptd.c_str());
    return staged_pte.status();
  }
  auto discard = [&] {
    unlink(staged_ptd.c_str());
    unlink(staged_pte->c_str());
  };
  Status s = WritePlanned(staged_ptd, ptd_plan, ptd_path).WithContext(ptd_path);
  if (s.ok()) s = WritePlanned(*staged_pte, pte_plan, pte_path).WithContext(pte_path);
  if (!s.ok()) {
    discard();
    return s;
  }
  const bool ptd_existed = access(ptd_path.c_str(), F_OK) == 0;
  if (rename(staged_ptd.c_str(), ptd_path.c_str()) != 0) {
    const int err = errno;
    discard();
    return IoError("cannot rename the finished data file to " + ptd_path, err);
  }
  if (rename(staged_pte->c_str(), pte_path.c_str()) != 0) {
    const int err = errno;
    unlink(staged_pte->c_str());
    std::string what = "cannot rename the finished program to " + pte_path;
    if (ptd_existed) {
      what += " (" + ptd_path + " was already replaced by the new data)";
    } else {
      unlink(ptd_path.c_str());
    }
    return IoError(what, err);
  }
  return Status::OK();
}

}  // namespace

int Repack(const std::vector<std::string>& argv) {
  Result<WriteJob> job = ParseWriteJob(argv, "IN.pte", "OUT.pte", {"--external-constants"});
  if (!job.ok()) return UsageError("repack: " + job.status().message());
  // Flags are checked before anything is opened (usage errors come first);
  // they then override what the input file was written with.
  PteOptions flag_check;
  if (Status s = ApplyAlignmentFlags(job->args, &flag_check); !s.ok()) {
    return UsageError("repack: " + s.message());
  }
  const std::string* ptd_path = job->args.Value("--external-constants");
  if (ptd_path != nullptr) {
    if (ptd_path->empty()) return UsageError("repack: --external-constants needs a file name");
    if (std::filesystem::path(*ptd_path).lexically_normal() ==
        std::filesystem::path(job->output).lexically_normal()) {
      return UsageError("repack: the .pte and the .ptd must be different files");
    }
  }
  Result<std::unique_ptr<PteFile>> file = PteFile::Open(job->input);
  if (!file.ok()) return Failure(file.status());
  PteOptions options = (*file)->InferredOptions();
  if (Status s = ApplyAlignmentFlags(job->args, &options); !s.ok()) return Failure(s);
  if (ptd_path == nullptr) {
    Result<PteInput> input = (*file)->ToInput();
    if (!input.ok()) return Failure(input.status());
    if (Status s = PlanAndWrite(job->output, *input, options); !s.ok()) return Failure(s);
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
  // Plan both before writing either: a plan error leaves no file behind.
  Result<PtePlan> pte_plan = PlanPte(split->first, options);
  if (!pte_plan.ok()) return Failure(pte_plan.status().WithContext(job->output));
  Result<PtdPlan> ptd_plan = PlanPtd(split->second, ptd_options);
  if (!ptd_plan.ok()) return Failure(ptd_plan.status().WithContext(*ptd_path));
  if (Status s = WriteProgramAndData(job->output, pte_plan->artifact, *ptd_path,
                                     ptd_plan->artifact);
      !s.ok()) {
    return Failure(s);
  }
  ReportPtd(*ptd_path, *ptd_plan, split->second, ptd_options);
  ReportPte(job->output, *pte_plan, options);
  return kExitOk;
}

}  // namespace etpack::cli
