#include "write_job.h"

#include <cinttypes>
#include <cstdio>
#include <tuple>
#include <utility>

#include "progress.h"
#include "units.h"

namespace etpack::cli {

Status ApplyAlignmentFlags(const Args& args, PteOptions* options) {
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

Status WritePlanned(const std::string& output, const ArtifactPlan& plan) {
  ProgressLine progress("writing " + output);
  return WriteArtifactFile(output, plan, OutputOptions{}, progress.callback());
}

void ReportPte(const std::string& output, const PtePlan& plan, const PteOptions& options) {
  std::printf("wrote %s (%s, %s, segment alignment %" PRIu64 ", constant alignment %" PRIu64 ")\n",
              output.c_str(), Count(plan.artifact.file_size, "byte").c_str(),
              Count(plan.layout.segments.size(), "segment").c_str(), options.segment_alignment,
              options.constant_tensor_alignment);
}

void ReportPtd(const std::string& output, const PtdPlan& plan, const PtdInput& input,
               const PtdOptions& options) {
  std::printf("wrote %s (%s, %s, %s, segment alignment %" PRIu64 ")\n", output.c_str(),
              Count(plan.artifact.file_size, "byte").c_str(),
              Count(input.entries.size(), "entry", "entries").c_str(),
              Count(plan.layout.segments.size(), "segment").c_str(), options.segment_alignment);
}

Status PlanAndWrite(const std::string& input_name, const std::string& output, PteInput input,
                    const PteOptions& options) {
  Result<PtePlan> plan = PlanPte(std::move(input), options);
  if (!plan.ok()) return plan.status().WithContext(input_name);
  ETPACK_RETURN_IF_ERROR(WritePlanned(output, plan->artifact));
  ReportPte(output, *plan, options);
  return Status::OK();
}

}  // namespace etpack::cli
