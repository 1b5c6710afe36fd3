#include "write_job.h"

#include <cinttypes>
#include <cstdio>
#include <utility>

#include "progress.h"
#include "units.h"

namespace etpack::cli {

Status ApplyAlignmentFlags(const Args& args, PteOptions* options) {
  const std::pair<const char*, uint64_t*> flags[] = {
      {"--segment-alignment", &options->segment_alignment},
      {"--constant-alignment", &options->constant_tensor_alignment}};
  for (const auto& [name, field] : flags) {
    const std::string* text = args.Value(name);
    if (!text) continue;
    ETPACK_ASSIGN_OR_RETURN(*field, ParseAlignment(*text, name));
  }
  return Status::OK();
}

Result<WriteJob> ParseWriteJob(const std::vector<std::string>& argv, const char* what,
                               const char* output_name, const std::vector<std::string>& extra) {
  std::vector<std::string> options = {"-o", "--output", "--segment-alignment",
                                      "--constant-alignment"};
  options.insert(options.end(), extra.begin(), extra.end());
  ETPACK_ASSIGN_OR_RETURN(Args args, ParseArgs(argv, options, {}));
  if (args.positional.size() != 1) {
    return InvalidArgument(std::string("expected exactly one ") + what + ", got " +
                           std::to_string(args.positional.size()));
  }
  const std::string* out = args.Output();
  if (!out || out->empty()) return InvalidArgument(std::string("missing -o ") + output_name);
  WriteJob job;
  job.input = args.positional[0];
  job.output = *out;
  job.args = std::move(args);
  return job;
}

namespace {
OutputFs* command_output_fs = nullptr;  // null: POSIX files
}  // namespace

ScopedCommandOutputFs::ScopedCommandOutputFs(OutputFs* fs) : previous_(command_output_fs) {
  command_output_fs = fs;
}
ScopedCommandOutputFs::~ScopedCommandOutputFs() { command_output_fs = previous_; }

Status WriteFiles(const ArtifactFiles& files) {
  std::string label = "writing ";
  for (size_t i = 0; i < files.size(); ++i) {
    label += (i == 0 ? "" : i + 1 == files.size() ? " and " : ", ") + files[i].first;
  }
  ProgressLine progress(label);
  if (command_output_fs != nullptr) {
    return WriteArtifactFiles(*command_output_fs, files, progress.callback());
  }
  return WriteArtifactFiles(files, OutputOptions{}, progress.callback());
}

Status WritePlanned(const std::string& output, const ArtifactPlan& plan) {
  return WriteFiles({{output, &plan}});
}

void ReportPte(const std::string& output, const PtePlan& plan, const PteOptions& options) {
  std::printf("wrote %s (%" PRIu64 " bytes, %zu segments, segment alignment %" PRIu64
              ", constant alignment %" PRIu64 ")\n",
              output.c_str(), plan.artifact.file_size, plan.layout.segments.size(),
              options.segment_alignment, options.constant_tensor_alignment);
}

void ReportPtd(const std::string& output, const PtdPlan& plan, const PtdInput& input,
               const PtdOptions& options) {
  std::printf("wrote %s (%" PRIu64 " bytes, %zu entries, %zu segments, segment alignment %" PRIu64
              ")\n",
              output.c_str(), plan.artifact.file_size, input.entries.size(),
              plan.layout.segments.size(), options.segment_alignment);
}

Status PlanAndWrite(const std::string& output, PteInput input, const PteOptions& options) {
  ETPACK_ASSIGN_OR_RETURN(PtePlan plan, PlanPte(std::move(input), options));
  ETPACK_RETURN_IF_ERROR(WritePlanned(output, plan.artifact));
  ReportPte(output, plan, options);
  return Status::OK();
}

}  // namespace etpack::cli
