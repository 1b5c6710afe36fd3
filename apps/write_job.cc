#include "write_job.h"

#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <tuple>
#include <utility>

#include "digests.h"
#include "progress.h"
#include "units.h"

namespace etpack::cli {

Status ApplyPteFlags(const Args& args, PteOptions* options) {
  if (args.Has(kDedupFlag)) options->dedup_constants = true;
  const std::tuple<const char*, uint64_t*, uint64_t> flags[] = {
      {"--segment-alignment", &options->segment_alignment, kMaxAlignment},
      {"--constant-alignment", &options->constant_tensor_alignment, kMaxInlineAlignment}};
  for (const auto& [name, field, max] : flags) {
    const std::string* text = args.Value(name);
    if (!text) continue;
    ETPACK_ASSIGN_OR_RETURN(*field, ParseAlignment(*text, name, max));
  }
  return Status::OK();
}

Result<WriteJob> ParseWriteJob(const std::vector<std::string>& argv, const char* what,
                               const char* output_name, const std::vector<std::string>& extra) {
  std::vector<std::string> options = {"-o", "--output", "--segment-alignment",
                                      "--constant-alignment", kDigestOption};
  options.insert(options.end(), extra.begin(), extra.end());
  ETPACK_ASSIGN_OR_RETURN(Args args, ParseArgs(argv, options, {kIntegrityFlag, kDedupFlag}));
  ETPACK_ASSIGN_OR_RETURN(const DigestFlags digest, ParseDigestFlags(args));
  if (args.positional.size() != 1) {
    return InvalidArgument(std::string("expected exactly one ") + what + ", got " +
                           std::to_string(args.positional.size()));
  }
  const std::string* out = args.Output();
  if (!out) return InvalidArgument(std::string("missing -o ") + output_name);
  WriteJob job;
  job.input = args.positional[0];
  job.output = *out;
  job.args = std::move(args);
  job.digest = digest;
  return job;
}

namespace {
OutputFs* command_output_fs = nullptr;  // null: POSIX files
}  // namespace

ScopedCommandOutputFs::ScopedCommandOutputFs(OutputFs* fs) : previous_(command_output_fs) {
  command_output_fs = fs;
}
ScopedCommandOutputFs::~ScopedCommandOutputFs() { command_output_fs = previous_; }

OutputFs* CommandOutputFs() { return command_output_fs; }

Status WriteFiles(const ArtifactFiles& files, bool sha256) {
  std::string label = "writing ";
  for (size_t i = 0; i < files.size(); ++i) {
    label += (i == 0 ? "" : i + 1 == files.size() ? " and " : ", ") + files[i].first;
  }
  std::vector<ArtifactSha256> digests;
  std::vector<ArtifactSha256>* wanted = sha256 ? &digests : nullptr;
  {
    ProgressLine progress(label);
    ETPACK_RETURN_IF_ERROR(
        command_output_fs != nullptr
            ? WriteArtifactFiles(*command_output_fs, files, progress.callback(), wanted)
            : WriteArtifactFiles(files, OutputOptions{}, progress.callback(), wanted));
  }
  if (sha256) PrintWrittenDigests(files, digests);
  return Status::OK();
}

Status WritePlanned(const std::string& output, const ArtifactPlan& plan, bool sha256) {
  return WriteFiles({{output, &plan}}, sha256);
}

void ReportPte(const std::string& output, const PtePlan& plan, const PteOptions& options) {
  std::printf("wrote %s (%s, %s, segment alignment %" PRIu64 ", constant alignment %" PRIu64
              "%s)\n",
              output.c_str(), Count(plan.artifact.file_size, "byte").c_str(),
              Count(plan.layout.segments.size(), "segment").c_str(), options.segment_alignment,
              options.constant_tensor_alignment,
              options.dedup_constants ? ", identical constants stored once" : "");
}

void ReportPtd(const std::string& output, const PtdPlan& plan, size_t entries,
               const PtdOptions& options) {
  std::printf("wrote %s (%s, %s, %s, segment alignment %" PRIu64 ")\n", output.c_str(),
              Count(plan.artifact.file_size, "byte").c_str(),
              Count(entries, "entry", "entries").c_str(),
              Count(plan.layout.segments.size(), "segment").c_str(), options.segment_alignment);
}

Status PlanAndWrite(const std::string& input_name, const std::string& output, PteInput input,
                    const PteOptions& options, bool sha256) {
  Result<PtePlan> plan = PlanPte(std::move(input), options);
  if (!plan.ok()) return plan.status().WithContext(input_name);
  ETPACK_RETURN_IF_ERROR(WritePlanned(output, plan->artifact, sha256));
  ReportPte(output, *plan, options);
  return Status::OK();
}

Result<const std::string*> DataOutput(const WriteJob& job, const char* flag) {
  const std::string* path = job.args.Value(flag);
  if (path == nullptr) return path;
  if (path->empty() || *path == "-") {
    return InvalidArgument(std::string(flag) + " needs a file name (not standard output)");
  }
  if (std::filesystem::path(*path).lexically_normal() ==
      std::filesystem::path(job.output).lexically_normal()) {
    return InvalidArgument("the .pte and the .ptd must be different files");
  }
  return path;
}

Status PlanAndWritePair(const std::string& input_name, const std::string& output, PteInput pte,
                        const PteOptions& options, const std::string& ptd_path, PtdInput ptd,
                        bool sha256) {
  std::vector<ExternalDataFile> data;
  data.push_back({ptd_path, std::move(ptd)});
  ETPACK_ASSIGN_OR_RETURN(
      ProgramWithDataPlan plan,
      PlanProgramWithData(output, std::move(pte), options, std::move(data), input_name));
  ETPACK_RETURN_IF_ERROR(WriteFiles(plan.files(), sha256));
  for (const ProgramWithDataPlan::Data& d : plan.data) {
    ReportPtd(d.name, d.plan, d.entries, d.options);
  }
  ReportPte(output, plan.program, options);
  return Status::OK();
}

}  // namespace etpack::cli
