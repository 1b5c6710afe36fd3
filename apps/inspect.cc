// `etpack inspect FILE [--json]`: the layout of a .pte, .ptd or .bpte.

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
  if (args->positional.size() != 1) {
    return UsageError("inspect",
                      "expected exactly one FILE, got " + std::to_string(args->positional.size()));
  }
  const std::string& path = args->positional[0];
  if (args->Value(kDigestOption) != nullptr) {
    // The digests instead of the layout report.
    Result<DigestFlags> digest = ParseDigestFlags(*args);
    if (!digest.ok()) return UsageError("inspect", digest.status().message());
    if (Status s = PrintFileDigests(path); !s.ok()) return Failure(s);
    return kExitOk;
  }
  Result<json::Value> report = InspectJson(path);
  if (!report.ok()) return Failure(report.status());
  if (args->Has("--json")) {
    std::printf("%s\n", json::Print(*report, 2).c_str());
    return kExitOk;
  }
  PrintReport(*report);
  return kExitOk;
}

}  // namespace etpack::cli
