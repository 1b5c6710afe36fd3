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
  if (args->Has("--json")) {
    // Printed as it is produced: a report of a million entries never
    // exists whole.
    JsonSink sink([](std::string_view text) { std::fwrite(text.data(), 1, text.size(), stdout); },
                  2);
    if (Status s = Inspect(path, sink); !s.ok()) return Failure(s);
    sink.Finish();
    std::printf("\n");
    return kExitOk;
  }
  if (Status s = PrintReport(path); !s.ok()) return Failure(s);
  return kExitOk;
}

}  // namespace etpack::cli
