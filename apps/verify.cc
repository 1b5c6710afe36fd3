// `etpack verify FILE [--data X.ptd ...]`: validates a .pte, .ptd or .bpte
// completely and, with --data, resolves a program's EXTERNAL tensors.

#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "etpack/bpte_file.h"
#include "etpack/external_data.h"
#include "etpack/ptd_file.h"
#include "etpack/pte_file.h"
#include "file_kind.h"

namespace etpack::cli {
namespace {

const char* LayoutName(BpteLayout layout) {
  return layout == BpteLayout::kStandard ? "standard" : "segmented";
}

// DetectFileKind failed: a file that is too short or of no known kind is
// invalid; a missing or unreadable one is not.
int Unreadable(const std::string& path, const Status& status) {
  return status.code() == Code::kCorrupt ? Invalid(path, status) : CannotRead(path, status);
}

int VerifyPtd(const std::string& path) {
  Result<std::unique_ptr<PtdFile>> file = PtdFile::Open(path);
  if (!file.ok()) return Invalid(path, file.status());
  const PtdFile& f = **file;
  std::printf("%s: ok (.ptd, %s, %s, %s)\n", path.c_str(),
              Count(f.entries().size(), "entry", "entries").c_str(),
              Count(f.layout().segments.size(), "segment").c_str(),
              Count(f.size(), "byte").c_str());
  return kExitOk;
}

int VerifyBpte(const std::string& path) {
  Result<std::unique_ptr<BpteFile>> file = BpteFile::Open(path);
  if (!file.ok()) return Invalid(path, file.status());
  const BpteFile& f = **file;
  Result<std::vector<BundledTestSuite>> suites = f.Suites();
  if (!suites.ok()) return Invalid(path, suites.status());
  uint64_t cases = 0;
  for (const BundledTestSuite& s : *suites) cases += s.test_cases.size();
  std::printf("%s: ok (.bpte, %s layout, %s, %s; embedded program %s, %s)\n", path.c_str(),
              LayoutName(f.layout()), Count(suites->size(), "suite").c_str(),
              Count(cases, "case").c_str(), Count(f.program_size(), "byte").c_str(),
              Count(f.program().methods().size(), "method").c_str());
  return kExitOk;
}

int VerifyPte(const std::string& path, const std::vector<std::string>& data_paths) {
  Result<std::unique_ptr<PteFile>> file = PteFile::Open(path);
  if (!file.ok()) return Invalid(path, file.status());
  const PteFile& f = **file;

  std::vector<std::unique_ptr<PtdFile>> data;
  std::vector<const PtdFile*> views;
  for (const std::string& d : data_paths) {
    Result<FileKind> dk = DetectFileKind(d);
    if (!dk.ok()) return Unreadable(d, dk.status());
    if (*dk != FileKind::kPtd) {
      return Invalid(d, Corrupt("--data expects a .ptd file; this is a .pte"));
    }
    Result<std::unique_ptr<PtdFile>> ptd = PtdFile::Open(d);
    if (!ptd.ok()) return Invalid(d, ptd.status());
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
  std::printf("%s: ok (%s, %s, %s%s)\n", path.c_str(), Count(f.methods().size(), "method").c_str(),
              Count(f.layout().segments.size(), "segment").c_str(), Count(f.size(), "byte").c_str(),
              external.c_str());
  return kExitOk;
}

}  // namespace

int Verify(const std::vector<std::string>& argv) {
  Result<Args> args = ParseArgs(argv, {"--data..."}, {});
  if (!args.ok()) return UsageError("verify", args.status().message());
  if (args->positional.size() != 1) {
    return UsageError("verify",
                      "expected exactly one FILE, got " + std::to_string(args->positional.size()));
  }
  const std::string& path = args->positional[0];
  const std::vector<std::string> data_paths = args->Values("--data");
  Result<FileKind> kind = DetectFileKind(path);
  if (!kind.ok()) return Unreadable(path, kind.status());
  if (*kind == FileKind::kPte) return VerifyPte(path, data_paths);
  const char* ext = *kind == FileKind::kPtd ? ".ptd" : ".bpte";
  if (!data_paths.empty()) {
    return UsageError("verify", "--data goes with a .pte; " + path + " is a " + ext);
  }
  return *kind == FileKind::kPtd ? VerifyPtd(path) : VerifyBpte(path);
}

}  // namespace etpack::cli
