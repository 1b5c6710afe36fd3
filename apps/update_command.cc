// `etpack update MODEL.pte|MODEL.ptd --from NEW.safetensors|index.json|NEW.ptd
// ... [--json]`: new weights into an existing file, in place (etpack/update.h).

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"
#include "etpack/json.h"
#include "etpack/update.h"
#include "measure.h"
#include "progress.h"
#include "write_job.h"

namespace etpack::cli {

int Update(const std::vector<std::string>& argv, const Env& env) {
  Result<Args> args = ParseArgs(argv, {"--from..."}, {"--json"});
  if (!args.ok()) return UsageError("update", args.status().message());
  if (args->positional.size() != 1) {
    return UsageError("update", args->positional.empty()
                                    ? "give the .pte or .ptd to update"
                                    : "give exactly one file to update, then --from NEW ...");
  }
  const std::vector<std::string> from = args->Values("--from");
  if (from.empty()) {
    return UsageError("update",
                      "give the new weights: --from NEW.safetensors (or an "
                      "index.json, or a .ptd), repeatable");
  }
  const std::string& path = args->positional[0];
  const auto start = std::chrono::steady_clock::now();
  Result<PtdInput> weights = ReadWeights(from, env);
  if (!weights.ok()) return Failure(weights.status());
  Result<UpdateReport> r = UpdateReport{};
  {
    ProgressLine progress("updating " + path);
    r = UpdateWeights(path, *weights, progress.options(), env);
  }
  if (!r.ok()) return Failure(r.status());
  const double seconds = SecondsSince(start);
  if (r->written && r->other_links > 0) {
    std::fprintf(stderr,
                 "etpack: note: %s has %llu other hard link%s, which keep%s the old contents "
                 "(update replaces the file at this path with a new one)\n",
                 path.c_str(), static_cast<unsigned long long>(r->other_links),
                 r->other_links == 1 ? "" : "s", r->other_links == 1 ? "s" : "");
  }

  if (args->Has("--json")) {
    json::Value report = UpdateReportJson(path, *r);
    report.Set("seconds", json::Value::Double(seconds));
    std::printf("%s\n", json::Print(report, 2).c_str());
    return kExitOk;
  }
  std::printf("updated:   %s (%s)\n", path.c_str(), BytesText(r->file_size).c_str());
  std::printf("  rewritten: %s, %s\n", Count(r->tensors_rewritten, "tensor").c_str(),
              BytesText(r->bytes_rewritten).c_str());
  std::printf("  unchanged: %s, %s (equal bytes, skipped)\n",
              Count(r->tensors_unchanged, "tensor").c_str(), BytesText(r->bytes_unchanged).c_str());
  if (!r->written) {
    std::printf("  nothing changed: the file was left as it was\n");
  } else if (r->cloned) {
    std::printf("  written:   %s; the other %s are shared with the old file (reflink)\n",
                BytesText(r->bytes_written).c_str(),
                BytesText(r->file_size - r->bytes_written).c_str());
  } else {
    std::printf("  written:   %s (a full copy: this file system shares no extents)\n",
                BytesText(r->bytes_written).c_str());
  }
  std::printf("time:      %.3f s\n", seconds);
  return kExitOk;
}

}  // namespace etpack::cli
