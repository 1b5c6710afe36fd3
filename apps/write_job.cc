#include "write_job.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <tuple>
#include <utility>

#include "digests.h"
#include "etpack/json.h"
#include "progress.h"
#include "units.h"

namespace etpack::cli {

Status ApplyPteFlags(const Args& args, PteOptions* options) {
  if (args.Has(kDedupFlag)) options->dedup_constants = true;
  if (const std::string* text = args.Value(kAlignOption)) {
    ETPACK_ASSIGN_OR_RETURN(const uint64_t align,
                            ParseAlignment(*text, kAlignOption, kMaxInlineAlignment));
    options->segment_alignment = std::max(options->segment_alignment, align);
    options->constant_tensor_alignment = align;
  }
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

Result<uint64_t> ParseMaxShardBytes(const Args& args) {
  const std::string* text = args.Value(kMaxShardOption);
  if (text == nullptr) return uint64_t{0};
  ETPACK_ASSIGN_OR_RETURN(const uint64_t n, ParseByteSize(*text, kMaxShardOption));
  if (n == 0) return InvalidArgument(std::string(kMaxShardOption) + " must be more than 0");
  return n;
}

Result<WriteJob> ParseWriteJob(const std::vector<std::string>& argv, const char* what,
                               const char* output_name, const std::vector<std::string>& extra) {
  std::vector<std::string> options = {
      "-o", "--output", "--segment-alignment", "--constant-alignment", kAlignOption, kDigestOption};
  options.insert(options.end(), extra.begin(), extra.end());
  ETPACK_ASSIGN_OR_RETURN(Args args,
                          ParseArgs(argv, options, {kIntegrityFlag, kDedupFlag, kJsonFlag}));
  SetJsonReport(args.Has(kJsonFlag));
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
bool json_report = false;
}  // namespace

void SetJsonReport(bool json) { json_report = json; }
bool JsonReport() { return json_report; }

ScopedCommandOutputFs::ScopedCommandOutputFs(OutputFs* fs) : previous_(command_output_fs) {
  command_output_fs = fs;
}
ScopedCommandOutputFs::~ScopedCommandOutputFs() { command_output_fs = previous_; }

OutputFs* CommandOutputFs() { return command_output_fs; }

Status WriteArtifacts(const ArtifactFiles& files, const WriteOptions& options) {
  return command_output_fs != nullptr ? WriteArtifactFiles(*command_output_fs, files, options)
                                      : WriteArtifactFiles(files, options);
}

Status WriteFilesWithProgress(const ArtifactFiles& files, WriteStats* stats,
                              std::vector<ArtifactSha256>* digests) {
  std::string label = "writing ";
  for (size_t i = 0; i < files.size(); ++i) {
    label += (i == 0 ? "" : i + 1 == files.size() ? " and " : ", ") + files[i].first;
  }
  ProgressLine progress(label);
  WriteOptions options;
  options.progress = progress.callback();
  options.sha256 = digests;
  options.stats = stats;
  return WriteArtifacts(files, options);
}

void PrintWriteStats(const WriteStats& stats) {
  // Bytes, not rounded: scripts compare them (and the padding between
  // items, never written, is in neither figure).
  std::printf("shared:  %" PRIu64 " of %" PRIu64
              " bytes written share the disk blocks they came from, %" PRIu64 " bytes copied\n",
              stats.bytes_shared, stats.bytes, stats.bytes_copied());
}

Status WriteFiles(const ArtifactFiles& files, bool sha256) {
  if (sha256 && json_report) {
    return InvalidArgument("--json does not print --digest sha256 digests; give one of them");
  }
  std::vector<ArtifactSha256> digests;
  WriteStats stats;
  ETPACK_RETURN_IF_ERROR(WriteFilesWithProgress(files, &stats, sha256 ? &digests : nullptr));
  if (json_report) {
    json::Value report = json::Value::Object();
    std::vector<std::string> paths;
    for (const auto& file : files) paths.push_back(file.first);
    SetWriteStatsJson(paths, stats, &report);
    std::printf("%s\n", json::Print(report).c_str());
    return Status::OK();
  }
  PrintWriteStats(stats);
  if (sha256) PrintWrittenDigests(files, digests);
  return Status::OK();
}

Status WritePlanned(const std::string& output, const ArtifactPlan& plan, bool sha256) {
  return WriteFiles({{output, &plan}}, sha256);
}

void ReportPte(const std::string& output, const PtePlan& plan, const PteOptions& options) {
  if (json_report) return;
  std::printf("wrote %s (%s, %s, segment alignment %" PRIu64 ", constant alignment %" PRIu64
              "%s)\n",
              output.c_str(), Count(plan.artifact.file_size, "byte").c_str(),
              Count(plan.layout.segments.size(), "segment").c_str(), options.segment_alignment,
              options.constant_tensor_alignment,
              options.dedup_constants ? ", identical constants stored once" : "");
}

void ReportPtd(const std::string& output, const PtdPlan& plan, size_t entries,
               const PtdOptions& options) {
  if (json_report) return;
  std::printf("wrote %s (%s, %s, %s, segment alignment %" PRIu64 ")\n", output.c_str(),
              Count(plan.artifact.file_size, "byte").c_str(),
              Count(entries, "entry", "entries").c_str(),
              Count(plan.layout.segments.size(), "segment").c_str(), options.segment_alignment);
}

Status WritePtdFiles(const std::vector<PtdFilePlan>& files, const PtdOptions& options,
                     bool sha256) {
  ETPACK_RETURN_IF_ERROR(WriteFiles(PtdFiles(files), sha256));
  for (const PtdFilePlan& f : files) ReportPtd(f.path, f.plan, f.entries, options);
  return Status::OK();
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
                        bool sha256, uint64_t max_shard_bytes) {
  std::vector<ExternalDataFile> data;
  data.push_back({ptd_path, std::move(ptd), max_shard_bytes});
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
