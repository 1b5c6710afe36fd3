// `etpack inspect FILE... [--json]`: the layout of a .pte, .ptd or .bpte;
// of each, for several (the shards of a .ptd, a program and its data).
// `--sizes [--all]`: where every byte goes, and for several files the bytes
// they hold alike (etpack/sizes.h).

#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"
#include "digests.h"
#include "etpack/inspect.h"
#include "etpack/sizes.h"
#include "report.h"
#include "sizes_report.h"

namespace etpack::cli {

int Inspect(const std::vector<std::string>& argv, const Env& env) {
  Result<Args> args = ParseArgs(argv, {kDigestOption}, {"--json", "--sizes", "--all"});
  if (!args.ok()) return UsageError("inspect", args.status().message());
  if (args->positional.empty()) return UsageError("inspect", "expected a FILE");
  const std::vector<std::string>& paths = args->positional;
  if (args->Has("--sizes")) {
    if (args->Value(kDigestOption) != nullptr) {
      return UsageError("inspect", "--sizes and --digest are different reports; give one");
    }
    Result<FileSizes> sizes = SizesOfFiles(paths, {}, env);
    if (!sizes.ok()) return Failure(sizes.status());
    const bool all = args->Has("--all");
    if (!args->Has("--json")) {
      PrintSizes(*sizes, all);
      return kExitOk;
    }
    auto report = [&](const SizeReport& r) {
      return SizeReportJson(r, all ? 0 : SmallRowBytes(r));
    };
    json::Value out;
    if (paths.size() == 1) {
      out = report(sizes->reports[0]);
    } else {
      std::vector<json::Value> files;
      for (const SizeReport& r : sizes->reports) files.push_back(report(r));
      out = json::Value::Object({{"files", json::Value::Array(std::move(files))},
                                 {"shared", SharedReportJson(sizes->shared)}});
    }
    std::printf("%s\n", json::Print(out, 2).c_str());
    return kExitOk;
  }
  if (args->Has("--all")) return UsageError("inspect", "--all goes with --sizes");
  if (args->Value(kDigestOption) != nullptr) {
    // The digests instead of the layout report.
    Result<DigestFlags> digest = ParseDigestFlags(*args);
    if (!digest.ok()) return UsageError("inspect", digest.status().message());
    for (const std::string& path : paths) {
      if (Status s = PrintFileDigests(path, env); !s.ok()) return Failure(s);
    }
    return kExitOk;
  }
  const bool several = paths.size() > 1;
  if (args->Has("--json")) {
    // Printed as it is produced: a report of a million entries never
    // exists whole. Several files are an array of their reports.
    if (several) std::printf("[");
    for (size_t i = 0; i < paths.size(); ++i) {
      // The separator goes out with the report's first bytes, so that a
      // file that cannot be read leaves no dangling comma.
      bool comma = i > 0;
      JsonSink sink(
          [&comma](std::string_view text) {
            if (comma) std::fputc(',', stdout);
            comma = false;
            std::fwrite(text.data(), 1, text.size(), stdout);
          },
          2);
      if (Status s = Inspect(paths[i], sink, env); !s.ok()) {
        // Nothing of this file was printed: close the array so that stdout
        // stays valid JSON (the reports before it), and fail.
        if (several) std::printf("]\n");
        return Failure(s);
      }
      sink.Finish();
    }
    std::printf(several ? "]\n" : "\n");
    return kExitOk;
  }
  for (size_t i = 0; i < paths.size(); ++i) {
    if (i > 0) std::printf("\n");
    if (Status s = PrintReport(paths[i], env); !s.ok()) return Failure(s);
  }
  return kExitOk;
}

}  // namespace etpack::cli
