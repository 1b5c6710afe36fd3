// `etpack inspect FILE [--json]`: the layout of a .pte, .ptd or .bpte.

#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"
#include "etpack/inspect.h"
#include "report.h"

namespace etpack::cli {

int Inspect(const std::vector<std::string>& argv) {
  Result<Args> args = ParseArgs(argv, {}, {"--json"});
  if (!args.ok()) return UsageError(args.status().message());
  if (args->positional.size() != 1) return UsageError("inspect takes exactly one FILE");
  Result<json::Value> report = InspectJson(args->positional[0]);
  if (!report.ok()) return Failure(report.status());
  if (args->Has("--json")) {
    std::printf("%s\n", json::Print(*report, 2).c_str());
  } else {
    PrintReport(*report);
  }
  return kExitOk;
}

}  // namespace etpack::cli
