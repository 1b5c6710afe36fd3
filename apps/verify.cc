// `etpack verify FILE... [--data X.ptd ...]`: validates a .pte, .ptd or .bpte
// completely and, with --data, resolves a program's EXTERNAL tensors; a set
// of .ptd files (the shards of one) is checked as the runtime loads it.

#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "etpack/bpte_file.h"
#include "etpack/external_data.h"
#include "etpack/inspect.h"
#include "etpack/integrity.h"
#include "etpack/ptd_file.h"
#include "etpack/pte_file.h"
#include "fat_report.h"

namespace etpack::cli {
namespace {

const char* LayoutName(BpteLayout layout) {
  return layout == BpteLayout::kStandard ? "standard" : "segmented";
}

// DetectArtifactKind failed: a file that is too short or of no known kind is
// invalid; a missing or unreadable one is not.
int Unreadable(const std::string& path, const Status& status) {
  return status.code() == Code::kCorrupt ? Invalid(path, status) : CannotRead(path, status);
}

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

int VerifyPtd(const std::string& path, bool deep) {
  Result<std::unique_ptr<PtdFile>> file = PtdFile::Open(path);
  if (!file.ok()) return Invalid(path, file.status());
  const PtdFile& f = **file;
  Result<IntegrityCheck> check = CheckIntegrity(f, deep);
  if (!check.ok()) return Invalid(path, check.status());
  std::printf("%s: ok (.ptd, %s, %s, %s)\n", path.c_str(),
              Count(f.entries().size(), "entry", "entries").c_str(),
              Count(f.layout().segments.size(), "segment").c_str(),
              Count(f.size(), "byte").c_str());
  PrintIntegrity(path, *check);
  return kExitOk;
}

int VerifyBpte(const std::string& path, bool deep) {
  Result<std::unique_ptr<BpteFile>> file = BpteFile::Open(path);
  if (!file.ok()) return Invalid(path, file.status());
  const BpteFile& f = **file;
  Result<std::vector<BundledTestSuite>> suites = f.Suites();
  if (!suites.ok()) return Invalid(path, suites.status());
  uint64_t cases = 0;
  for (const BundledTestSuite& s : *suites) cases += s.test_cases.size();
  // The program's own table covers the program (docs/integrity.md).
  Result<IntegrityCheck> check = CheckIntegrity(f.program(), deep);
  if (!check.ok()) return Invalid(path, check.status());
  std::printf("%s: ok (.bpte, %s layout, %s, %s; embedded program %s, %s)\n", path.c_str(),
              LayoutName(f.layout()), Count(suites->size(), "suite").c_str(),
              Count(cases, "case").c_str(), Count(f.program_size(), "byte").c_str(),
              Count(f.program().methods().size(), "method").c_str());
  PrintIntegrity(path, *check);
  return kExitOk;
}

int VerifyPte(const std::string& path, const std::vector<std::string>& data_paths, bool deep) {
  Result<std::unique_ptr<PteFile>> file = PteFile::Open(path);
  if (!file.ok()) return Invalid(path, file.status());
  const PteFile& f = **file;
  Result<IntegrityCheck> check = CheckIntegrity(f, deep);
  if (!check.ok()) return Invalid(path, check.status());

  std::vector<std::unique_ptr<PtdFile>> data;
  std::vector<const PtdFile*> views;
  for (const std::string& d : data_paths) {
    Result<ArtifactKind> dk = DetectArtifactKind(d);
    if (!dk.ok()) return Unreadable(d, dk.status());
    if (*dk != ArtifactKind::kPtd) {
      return Invalid(d, Corrupt("--data expects a .ptd file; this is a .pte"));
    }
    Result<std::unique_ptr<PtdFile>> ptd = PtdFile::Open(d);
    if (!ptd.ok()) return Invalid(d, ptd.status());
    if (Result<IntegrityCheck> c = CheckIntegrity(**ptd, false); !c.ok()) {
      return Invalid(d, c.status());
    }
    views.push_back(ptd->get());
    data.push_back(std::move(ptd).value());
  }

  std::string external;
  if (!data_paths.empty()) {
    uint64_t resolved = 0;
    if (Status s = CheckExternalReferences(f, views, &resolved); !s.ok()) return Invalid(path, s);
    std::string files;
    for (const std::string& d : data_paths) files += (files.empty() ? "" : ", ") + d;
    external = "; " + Count(resolved, "external tensor") +
               (resolved == 1 ? " resolves" : " resolve") + " in " + files;
  } else {
    uint64_t count = 0;
    for (const PteTensor& t : f.Tensors()) count += t.data == TensorData::kExternal ? 1 : 0;
    if (count > 0) {
      external = "; " + Count(count, "external tensor") +
                 " not checked: give their .ptd files with --data";
    }
  }
  std::string fat;
  if (Status s = VerifyFatDelegates(f, views, &fat); !s.ok()) return Invalid(path, s);
  std::printf("%s: ok (%s, %s, %s%s%s)\n", path.c_str(),
              Count(f.methods().size(), "method").c_str(),
              Count(f.layout().segments.size(), "segment").c_str(), Count(f.size(), "byte").c_str(),
              external.c_str(), fat.c_str());
  PrintIntegrity(path, *check);
  return kExitOk;
}

// Several .ptd files loaded together: each valid, no key in two of them.
int VerifyPtdSet(const std::vector<std::string>& paths, bool deep) {
  std::vector<std::unique_ptr<PtdFile>> files;
  std::vector<const PtdFile*> views;
  uint64_t entries = 0, bytes = 0;
  for (const std::string& p : paths) {
    if (int rc = VerifyPtd(p, deep); rc != kExitOk) return rc;
    Result<std::unique_ptr<PtdFile>> f = PtdFile::Open(p);
    if (!f.ok()) return Invalid(p, f.status());
    entries += (*f)->entries().size();
    bytes += (*f)->size();
    views.push_back(f->get());
    files.push_back(std::move(f).value());
  }
  std::string set;
  for (const std::string& p : paths) set += (set.empty() ? "" : ", ") + p;
  if (Status s = CheckDataSet(views); !s.ok()) return Invalid(set, s);
  std::printf("set of %s: ok (%s, each key in exactly one file, %s)\n",
              Count(paths.size(), ".ptd file").c_str(), Count(entries, "entry", "entries").c_str(),
              Count(bytes, "byte").c_str());
  return kExitOk;
}

}  // namespace

int Verify(const std::vector<std::string>& argv) {
  Result<Args> args = ParseArgs(argv, {"--data..."}, {"--deep"});
  if (!args.ok()) return UsageError("verify", args.status().message());
  if (args->positional.empty()) return UsageError("verify", "expected a FILE");
  std::vector<std::string> data_paths = args->Values("--data");
  const bool deep = args->Has("--deep");
  // Several files: one program (.pte) and .ptd files, which are its data as
  // with --data (`verify model.pte model-*.ptd`), or only .ptd files, a set.
  std::vector<std::string> programs, ptds;
  for (const std::string& p : args->positional) {
    Result<ArtifactKind> k = DetectArtifactKind(p);
    if (!k.ok()) return Unreadable(p, k.status());
    (*k == ArtifactKind::kPtd ? ptds : programs).push_back(p);
  }
  if (args->positional.size() > 1) {
    if (programs.size() > 1) {
      return UsageError("verify",
                        "give one program (.pte) with its .ptd files, or .ptd files; got " +
                            programs[0] + " and " + programs[1]);
    }
    if (programs.empty()) {
      if (!data_paths.empty()) return UsageError("verify", "--data goes with a .pte");
      return VerifyPtdSet(ptds, deep);
    }
    data_paths.insert(data_paths.begin(), ptds.begin(), ptds.end());
  }
  const std::string& path = programs.empty() ? ptds[0] : programs[0];
  Result<ArtifactKind> kind = DetectArtifactKind(path);
  if (!kind.ok()) return Unreadable(path, kind.status());
  if (*kind == ArtifactKind::kPte) return VerifyPte(path, data_paths, deep);
  const char* ext = *kind == ArtifactKind::kPtd ? ".ptd" : ".bpte";
  if (!data_paths.empty()) {
    return UsageError("verify", "--data goes with a .pte; " + path + " is a " + ext);
  }
  return *kind == ArtifactKind::kPtd ? VerifyPtd(path, deep) : VerifyBpte(path, deep);
}

}  // namespace etpack::cli
