#include "write_job.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <tuple>
#include <utility>

#include "digests.h"
#include "etpack/json.h"
#include "etpack/path_text.h"
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
  job.json = job.args.Has(kJsonFlag);
  return job;
}

Status WriteFilesWithProgress(const ArtifactFiles& files, WriteStats* stats,
                              std::vector<ArtifactSha256>* digests, const Env& env) {
  std::string label = "writing ";
  for (size_t i = 0; i < files.size(); ++i) {
    label += (i == 0 ? "" : i + 1 == files.size() ? " and " : ", ") + files[i].first;
  }
  ProgressLine progress(label);
  WriteOptions options = progress.options();
  options.sha256 = digests;
  options.stats = stats;
  return WriteArtifactFiles(files, options, env);
}

void PrintWriteStats(const WriteStats& stats) {
  // Bytes, not rounded: scripts compare them (and the padding between
  // items, never written, is in neither figure).
  std::printf("shared:  %" PRIu64 " of %" PRIu64
              " bytes written share the disk blocks they came from, %" PRIu64 " bytes copied\n",
              stats.bytes_shared, stats.bytes, stats.bytes_copied());
}

Status WriteFiles(const ArtifactFiles& files, const Writing& w) {
  if (w.sha256 && w.json) {
    return InvalidArgument("--json does not print --digest sha256 digests; give one of them");
  }
  std::vector<ArtifactSha256> digests;
  WriteStats stats;
  ETPACK_RETURN_IF_ERROR(
      WriteFilesWithProgress(files, &stats, w.sha256 ? &digests : nullptr, w.env));
  if (w.json) {
    json::Value report = json::Value::Object();
    std::vector<std::string> paths;
    for (const auto& file : files) paths.push_back(file.first);
    SetWriteStatsJson(paths, stats, &report);
    std::printf("%s\n", json::Print(report).c_str());
    return Status::OK();
  }
  PrintWriteStats(stats);
  if (w.sha256) PrintWrittenDigests(files, digests, w.env);
  return Status::OK();
}

Status WritePlanned(const std::string& output, const ArtifactPlan& plan, const Writing& w) {
  return WriteFiles({{output, &plan}}, w);
}

void ReportPte(const std::string& output, const PtePlan& plan, const PteOptions& options,
               const Writing& w) {
  if (w.json) return;
  std::printf("wrote %s (%s, %s, segment alignment %" PRIu64 ", constant alignment %" PRIu64
              "%s)\n",
              output.c_str(), Count(plan.artifact.file_size, "byte").c_str(),
              Count(plan.layout.segments.size(), "segment").c_str(), options.segment_alignment,
              options.constant_tensor_alignment,
              options.dedup_constants ? ", identical constants stored once" : "");
}

void ReportPtd(const std::string& output, const PtdPlan& plan, size_t entries,
               const PtdOptions& options, const Writing& w) {
  if (w.json) return;
  std::printf("wrote %s (%s, %s, %s, segment alignment %" PRIu64 ")\n", output.c_str(),
              Count(plan.artifact.file_size, "byte").c_str(),
              Count(entries, "entry", "entries").c_str(),
              Count(plan.layout.segments.size(), "segment").c_str(), options.segment_alignment);
}

Status WritePtdFiles(const std::vector<PtdFilePlan>& files, const PtdOptions& options,
                     const Writing& w) {
  ETPACK_RETURN_IF_ERROR(WriteFiles(PtdFiles(files), w));
  for (const PtdFilePlan& f : files) ReportPtd(f.path, f.plan, f.entries, options, w);
  return Status::OK();
}

Status PlanAndWrite(const std::string& input_name, const std::string& output, PteInput input,
                    const PteOptions& options, const Writing& w) {
  Result<PtePlan> plan = PlanPte(std::move(input), options);
  if (!plan.ok()) return plan.status().WithContext(input_name);
  ETPACK_RETURN_IF_ERROR(WritePlanned(output, plan->artifact, w));
  ReportPte(output, *plan, options, w);
  return Status::OK();
}

Result<const std::string*> DataOutput(const WriteJob& job, const char* flag) {
  const std::string* path = job.args.Value(flag);
  if (path == nullptr) return path;
  if (path->empty() || *path == "-") {
    return InvalidArgument(std::string(flag) + " needs a file name (not standard output)");
  }
  if (SamePathText(*path, job.output)) {
    return InvalidArgument("the .pte and the .ptd must be different files");
  }
  return path;
}

Status PlanAndWritePair(const std::string& input_name, const std::string& output, PteInput pte,
                        const PteOptions& options, const std::string& ptd_path, PtdInput ptd,
                        uint64_t max_shard_bytes, const Writing& w) {
  std::vector<ExternalDataFile> data;
  data.push_back({ptd_path, std::move(ptd), max_shard_bytes});
  ETPACK_ASSIGN_OR_RETURN(
      ProgramWithDataPlan plan,
      PlanProgramWithData(output, std::move(pte), options, std::move(data), input_name));
  ETPACK_RETURN_IF_ERROR(WriteFiles(plan.files(), w));
  for (const ProgramWithDataPlan::Data& d : plan.data) {
    ReportPtd(d.name, d.plan, d.entries, d.options, w);
  }
  ReportPte(output, plan.program, options, w);
  return Status::OK();
}

}  // namespace etpack::cli
