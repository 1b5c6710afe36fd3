// `etpack inspect FILE... [--json]`: the layout of a .pte, .ptd or .bpte;
// of each, for several (the shards of a .ptd, a program and its data).

#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"
#include "digests.h"
#include "etpack/inspect.h"
#include "report.h"

namespace etpack::cli {

int Inspect(const std::vector<std::string>& argv) {
  Result<Args> args = ParseArgs(argv, {kDigestOption}, {"--json"});
  if (!args.ok()) return UsageError("inspect", args.status().message());
  if (args->positional.empty()) return UsageError("inspect", "expected a FILE");
  const std::vector<std::string>& paths = args->positional;
  if (args->Value(kDigestOption) != nullptr) {
    // The digests instead of the layout report.
    Result<DigestFlags> digest = ParseDigestFlags(*args);
    if (!digest.ok()) return UsageError("inspect", digest.status().message());
    for (const std::string& path : paths) {
      if (Status s = PrintFileDigests(path); !s.ok()) return Failure(s);
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
      if (Status s = Inspect(paths[i], sink); !s.ok()) {
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
    if (Status s = PrintReport(paths[i]); !s.ok()) return Failure(s);
  }
  return kExitOk;
}

}  // namespace etpack::cli
