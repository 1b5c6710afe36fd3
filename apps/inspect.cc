// `etpack inspect FILE [--json]`: the layout of a .pte, .ptd or .bpte.

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "etpack/bpte_file.h"
#include "etpack/json.h"
#include "etpack/ptd_file.h"
#include "etpack/pte_file.h"
#include "file_kind.h"
#include "report.h"

namespace etpack::cli {
namespace {

int PrintJson(const json::Value& report) {
  std::printf("%s\n", json::Print(report, 2).c_str());
  return kExitOk;
}

int InspectPte(const std::string& path, bool as_json) {
  Result<std::unique_ptr<PteFile>> file = PteFile::Open(path);
  if (!file.ok()) return Failure(file.status());
  if (as_json) return PrintJson(PteReportJson(**file));
  PrintPteReport(**file);
  return kExitOk;
}

int InspectPtd(const std::string& path, bool as_json) {
  Result<std::unique_ptr<PtdFile>> file = PtdFile::Open(path);
  if (!file.ok()) return Failure(file.status());
  if (as_json) return PrintJson(PtdReportJson(**file));
  PrintPtdReport(**file);
  return kExitOk;
}

int InspectBpte(const std::string& path, bool as_json) {
  Result<std::unique_ptr<BpteFile>> file = BpteFile::Open(path);
  if (!file.ok()) return Failure(file.status());
  if (as_json) {
    Result<json::Value> report = BpteReportJson(**file);
    if (!report.ok()) return Failure(report.status());
    return PrintJson(*report);
  }
  if (Status s = PrintBpteReport(**file); !s.ok()) return Failure(s);
  return kExitOk;
}

}  // namespace

int Inspect(const std::vector<std::string>& argv) {
  Result<Args> args = ParseArgs(argv, {}, {"--json"});
  if (!args.ok()) return UsageError("inspect", args.status().message());
  if (args->positional.size() != 1) {
    return UsageError("inspect",
                      "expected exactly one FILE, got " + std::to_string(args->positional.size()));
  }
  const std::string& path = args->positional[0];
  const bool as_json = args->Has("--json");
  Result<FileKind> kind = DetectFileKind(path);
  if (!kind.ok()) return Failure(kind.status());
  switch (*kind) {
    case FileKind::kPte: return InspectPte(path, as_json);
    case FileKind::kPtd: return InspectPtd(path, as_json);
    case FileKind::kBpte: return InspectBpte(path, as_json);
  }
  return kExitFailure;
}

}  // namespace etpack::cli
