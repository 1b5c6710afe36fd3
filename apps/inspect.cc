// `etpack inspect FILE [--json]`: the layout of a .pte, .ptd or .bpte.

#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "digests.h"
#include "etpack/inspect.h"
#include "etpack/pte_file.h"
#include "fat_report.h"
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
    if (!digest.ok()) return UsageError("inspect: " + digest.status().message());
    if (Status s = PrintFileDigests(path); !s.ok()) return Failure(s);
    return kExitOk;
  }
  Result<json::Value> report = InspectJson(path);
  if (!report.ok()) return Failure(report.status());
  // Fat (NFAT) delegates of a .pte: listed after the layout report.
  std::unique_ptr<PteFile> pte;
  if (Result<ArtifactKind> kind = DetectArtifactKind(path);
      kind.ok() && *kind == ArtifactKind::kPte) {
    Result<std::unique_ptr<PteFile>> file = PteFile::Open(path);
    if (!file.ok()) return Failure(file.status());
    pte = std::move(file).value();
  }
  if (args->Has("--json")) {
    if (pte != nullptr) {
      Result<json::Value> fat = FatDelegatesJson(*pte);
      if (!fat.ok()) return Failure(fat.status());
      report->Set("fat_delegates", std::move(fat).value());
    }
    std::printf("%s\n", json::Print(*report, 2).c_str());
    return kExitOk;
  }
  PrintReport(*report);
  if (pte != nullptr) {
    if (Status s = PrintFatDelegates(*pte); !s.ok()) return Failure(s);
  }
  return kExitOk;
}

}  // namespace etpack::cli
