// `etpack verify FILE... [--data X.ptd ...] [--json]`: validates a .pte, .ptd or .bpte
// completely and, with --data, resolves a program's EXTERNAL tensors; a set
// of .ptd files (the shards of one) is checked as the runtime loads it. The
// checks are the library's (etpack/verify.h); this prints its report.

#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"
#include "etpack/verify.h"

namespace etpack::cli {
namespace {

// After the "ok" line: the integrity table (docs/integrity.md) when the
// file has one, and with --deep every part's XXH3-64.
void PrintIntegrity(const std::string& path, const IntegrityCheck& check) {
  if (check.has_table) {
    std::printf("%s: integrity table matches (%zu parts, XXH3-64)\n", path.c_str(),
                check.parts.size());
  }
  for (size_t i = 0; i < check.xxh3.size(); ++i) {
    std::printf("xxh3:%016" PRIx64 "  %s\n", check.xxh3[i], check.parts[i].name.c_str());
  }
}

void PrintPtd(const VerifiedFile& f) {
  std::printf("%s: ok (.ptd, %s, %s, %s)\n", f.path.c_str(),
              Count(f.entries, "entry", "entries").c_str(), Count(f.segments, "segment").c_str(),
              Count(f.size, "byte").c_str());
  PrintIntegrity(f.path, f.integrity);
}

void PrintBpte(const VerifiedFile& f) {
  std::printf("%s: ok (.bpte, %s layout, %s, %s; embedded program %s, %s)\n", f.path.c_str(),
              f.layout == BpteLayout::kStandard ? "standard" : "segmented",
              Count(f.suites, "suite").c_str(), Count(f.cases, "case").c_str(),
              Count(f.program_size, "byte").c_str(), Count(f.methods, "method").c_str());
  PrintIntegrity(f.path, f.integrity);
}

// The program's line: its data files (files[1...]) are checked, not listed.
void PrintPte(const VerifyReport& r) {
  const VerifiedFile& f = r.files[0];
  std::string external;
  if (r.external_resolved) {
    std::string files;
    for (size_t i = 1; i < r.files.size(); ++i) files += (i == 1 ? "" : ", ") + r.files[i].path;
    external = "; " + Count(r.external_tensors, "external tensor") +
               (r.external_tensors == 1 ? " resolves" : " resolve") + " in " + files;
  } else if (r.external_tensors > 0) {
    external = "; " + Count(r.external_tensors, "external tensor") +
               " not checked: give their .ptd files with --data";
  }
  std::string fat;
  if (r.fat_delegates > 0) {
    fat = "; " + std::to_string(r.fat_delegates) + " fat delegates, " +
          std::to_string(r.fat_entries) + " entries, " + std::to_string(r.fat_programs) +
          " programs, " + std::to_string(r.fat_keys_resolved) + " entry external keys resolve";
  }
  std::printf("%s: ok (%s, %s, %s%s%s)\n", f.path.c_str(), Count(f.methods, "method").c_str(),
              Count(f.segments, "segment").c_str(), Count(f.size, "byte").c_str(), external.c_str(),
              fat.c_str());
  PrintIntegrity(f.path, f.integrity);
}

}  // namespace

int Verify(const std::vector<std::string>& argv, const Env& env) {
  Result<Args> args = ParseArgs(argv, {"--data..."}, {"--deep", "--json"});
  if (!args.ok()) return UsageError("verify", args.status().message());
  if (args->positional.empty()) return UsageError("verify", "expected a FILE");
  VerifyOptions options;
  options.data = args->Values("--data");
  options.deep = args->Has("--deep");
  Result<VerifyReport> report = etpack::Verify(args->positional, options, env);
  if (!report.ok()) return UsageError("verify", report.status().message());
  const VerifyReport& r = *report;
  if (args->Has("--json")) {
    std::printf("%s\n", json::Print(VerifyReportJson(r), 2).c_str());
    return r.ok() ? kExitOk : kExitFailure;
  }
  // A set's files are each reported as they pass, before the set's verdict.
  const bool set = r.data_set;
  if (set) {
    for (const VerifiedFile& f : r.files) PrintPtd(f);
  }
  if (!r.ok()) {
    return r.unreadable ? CannotRead(r.failed, r.verdict) : Invalid(r.failed, r.verdict);
  }
  if (set) {
    uint64_t entries = 0, bytes = 0;
    for (const VerifiedFile& f : r.files) {
      entries += f.entries;
      bytes += f.size;
    }
    std::printf("set of %s: ok (%s, each key in exactly one file, %s)\n",
                Count(r.files.size(), ".ptd file").c_str(),
                Count(entries, "entry", "entries").c_str(), Count(bytes, "byte").c_str());
    return kExitOk;
  }
  switch (r.files[0].kind) {
    case ArtifactKind::kPte: PrintPte(r); break;
    case ArtifactKind::kPtd: PrintPtd(r.files[0]); break;
    case ArtifactKind::kBpte: PrintBpte(r.files[0]); break;
  }
  return kExitOk;
}

}  // namespace etpack::cli
