// `etpack ptd WEIGHTS.safetensors ... -o OUT.ptd [--align N]
// [--max-shard-bytes N]`: a safetensors checkpoint to a .ptd (or to shards
// of one), streamed file to file.

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "commands.h"
#include "digests.h"
#include "etpack/ptd.h"
#include "etpack/safetensors.h"
#include "etpack/writer.h"
#include "measure.h"
#include "write_job.h"

namespace etpack::cli {

int Ptd(const std::vector<std::string>& argv, const Env& env) {
  Result<Args> args =
      ParseArgs(argv, {"-o", "--output", kAlignOption, kDigestOption, kMaxShardOption},
                {kIntegrityFlag, kJsonFlag});
  if (!args.ok()) return UsageError("ptd", args.status().message());
  Result<DigestFlags> digest = ParseDigestFlags(*args);
  if (!digest.ok()) return UsageError("ptd", digest.status().message());
  if (args->positional.empty()) {
    return UsageError("ptd", "give at least one .safetensors file or model.safetensors.index.json");
  }
  const std::string* out = args->Output();
  if (!out) return UsageError("ptd", "missing -o OUT.ptd");
  uint64_t align = 1;
  if (const std::string* text = args->Value("--align")) {
    Result<uint64_t> parsed = ParseAlignment(*text, "--align");
    if (!parsed.ok()) return UsageError("ptd", parsed.status().message());
    align = *parsed;
  }

  Result<uint64_t> max_shard = ParseMaxShardBytes(*args);
  if (!max_shard.ok()) return UsageError("ptd", max_shard.status().message());

  const auto start = std::chrono::steady_clock::now();
  std::vector<SourcePtr> read;
  Result<std::vector<SafetensorsTensor>> tensors = ReadCheckpoint(args->positional, &read, env);
  if (!tensors.ok()) return Failure(tensors.status());
  PtdInput input = PtdInputFromCheckpoint(*tensors, align);
  input.read = std::move(read);
  // The segment base and every segment start are multiples of the segment
  // alignment, so raising it to N places each tensor N-aligned in the file.
  PtdOptions options;
  options.segment_alignment = std::max<uint64_t>(128, align);
  options.integrity_table = digest->integrity_table;
  options.max_shard_bytes = *max_shard;
  Result<std::vector<PtdFilePlan>> plans = PlanPtdFiles(*out, input, options);
  if (!plans.ok()) return Failure(plans.status().WithContext(*out));
  const double read_s = SecondsSince(start);

  // The files read: those given (an index stands for its shards) and the
  // shards tensors came from, so that an empty file counts too.
  uint64_t tensor_bytes = 0;
  std::set<std::string> files;
  for (const std::string& p : args->positional) {
    if (p.size() < 5 || p.compare(p.size() - 5, 5, ".json") != 0) files.insert(p);
  }
  for (const SafetensorsTensor& t : *tensors) {
    tensor_bytes += t.data->size();
    files.insert(t.file);
  }
  const Writing w{env, args->Has(kJsonFlag), digest->sha256};
  const auto write_start = std::chrono::steady_clock::now();
  if (Status s = WriteFiles(PtdFiles(*plans), w); !s.ok()) return Failure(s);
  const double write_s = SecondsSince(write_start);
  if (w.json) return kExitOk;
  const double mib_s =
      write_s > 0 ? static_cast<double>(tensor_bytes) / (1024.0 * 1024.0) / write_s : 0;

  std::printf("read:    %s from %s, %s of tensor data\n", Count(tensors->size(), "tensor").c_str(),
              Count(files.size(), "safetensors file").c_str(), BytesText(tensor_bytes).c_str());
  if (*max_shard != 0) {
    std::printf("wrote:   %s of at most %s each (--max-shard-bytes)\n",
                Count(plans->size(), "shard").c_str(), BytesText(*max_shard).c_str());
  }
  for (const PtdFilePlan& f : *plans) {
    std::printf("%s   %s\n", *max_shard != 0 ? "       " : "wrote:", f.path.c_str());
    std::printf("  file size:           %s\n", BytesText(f.plan.artifact.file_size).c_str());
    if (*max_shard != 0) std::printf("  entries:             %zu\n", f.entries);
    std::printf("  segments:            %zu, segment alignment %" PRIu64
                ", tensor alignment %" PRIu64 "\n",
                f.plan.layout.segments.size(), options.segment_alignment, align);
    std::printf("  segment base offset: %" PRIu64 "\n", f.plan.layout.segment_base_offset);
  }
  std::printf("time:    read headers + plan %.3f s, write %.3f s (%.0f MiB/s), total %.3f s\n",
              read_s, write_s, mib_s, SecondsSince(start));
  std::printf("memory:  peak RSS %.1f MiB\n", PeakRssMiB());
  return kExitOk;
}

}  // namespace etpack::cli
