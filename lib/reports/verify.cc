// Verify: every check `etpack verify` makes, in one place, so that each
// front end (CLI, Python, C) gives the same verdict on the same files.

#include "etpack/verify.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "etpack/bpte_file.h"
#include "etpack/external_data.h"
#include "etpack/list_text.h"
#include "etpack/ptd_file.h"
#include "etpack/pte_file.h"
#include "io/publish_marker.h"

namespace etpack {
namespace {

std::string Extension(ArtifactKind kind) { return std::string(".") + ArtifactKindName(kind); }

// Records the verdict on `path`; false, so a check can `return Fail(...)`.
bool Fail(VerifyReport& r, const std::string& path, Status status, bool unreadable = false) {
  r.failed = path;
  // A file that cannot be read is not an invalid file.
  r.unreadable = unreadable || status.code() == Code::kIoError;
  r.verdict = std::move(status);
  return false;
}

// DetectArtifactKind failed: a file too short or of no known kind is
// invalid; a missing or unreadable one is unreadable.
bool Undetected(VerifyReport& r, const std::string& path, Status status) {
  const bool unreadable = status.code() != Code::kCorrupt;
  return Fail(r, path, std::move(status), unreadable);
}

// The checks of one opened file; false with the verdict set on failure.
class Checker {
 public:
  Checker(VerifyReport& r, const VerifyOptions& options, const Env& env)
      : r_(r), options_(options), env_(env) {}

  // The kind of `path`; the file opened to learn it is kept, so checking
  // the file opens it no second time.
  Result<ArtifactKind> Detect(const std::string& path) {
    SourcePtr file;
    Result<ArtifactKind> kind = DetectArtifactKind(path, &file, env_);
    if (kind.ok()) opened_[path] = std::move(file);
    return kind;
  }

  bool Ptd(const std::string& path, bool deep, std::unique_ptr<PtdFile>* out = nullptr) {
    Result<std::unique_ptr<PtdFile>> file = Open<PtdFile>(path);
    if (!file.ok()) return Fail(r_, path, file.status());
    const PtdFile& f = **file;
    VerifiedFile v = Of(path, ArtifactKind::kPtd, f.size());
    v.entries = f.entries().size();
    v.segments = f.layout().segments.size();
    if (!Integrity(path, f, deep, &v)) return false;
    r_.files.push_back(std::move(v));
    if (out != nullptr) *out = std::move(file).value();
    return true;
  }

  bool Bpte(const std::string& path) {
    Result<std::unique_ptr<BpteFile>> file = Open<BpteFile>(path);
    if (!file.ok()) return Fail(r_, path, file.status());
    const BpteFile& f = **file;
    Result<std::vector<BundledTestSuite>> suites = f.Suites();
    if (!suites.ok()) return Fail(r_, path, suites.status());
    VerifiedFile v = Of(path, ArtifactKind::kBpte, f.size());
    v.layout = f.layout();
    v.suites = suites->size();
    for (const BundledTestSuite& s : *suites) v.cases += s.test_cases.size();
    v.program_size = f.program_size();
    v.methods = f.program().methods().size();
    // The program's own table covers the program (docs/integrity.md).
    if (!Integrity(path, f.program(), options_.deep, &v)) return false;
    // Its fat delegates: valid containers and entries; their keys are a
    // matter of the data the bundle runs with, which is not given here.
    Result<std::vector<FatDelegateReport>> fat = FatDelegates(f.program());
    if (!fat.ok()) return Fail(r_, path, fat.status());
    CountFat(*fat);
    r_.files.push_back(std::move(v));
    return true;
  }

  bool Pte(const std::string& path, const std::vector<std::string>& data_paths) {
    Result<std::unique_ptr<PteFile>> file = Open<PteFile>(path);
    if (!file.ok()) return Fail(r_, path, file.status());
    const PteFile& f = **file;
    VerifiedFile v = Of(path, ArtifactKind::kPte, f.size());
    v.methods = f.methods().size();
    v.segments = f.layout().segments.size();
    if (!Integrity(path, f, options_.deep, &v)) return false;
    r_.files.push_back(std::move(v));

    std::vector<std::unique_ptr<PtdFile>> data;
    std::vector<const PtdFile*> views;
    for (const std::string& d : data_paths) {
      Result<ArtifactKind> kind = Detect(d);
      if (!kind.ok()) return Undetected(r_, d, kind.status());
      if (*kind != ArtifactKind::kPtd) {
        return Fail(r_, d,
                    InvalidArgument(d + ": a program's data must be a .ptd file; this is a " +
                                    Extension(*kind)));
      }
      std::unique_ptr<PtdFile> ptd;
      if (!Ptd(d, /*deep=*/false, &ptd)) return false;
      views.push_back(ptd.get());
      data.push_back(std::move(ptd));
    }
    for (const PteTensor& t : f.Tensors()) {
      r_.external_tensors += t.data == TensorData::kExternal ? 1 : 0;
    }
    if (!data_paths.empty()) {
      if (Status s = CheckExternalReferences(f, views); !s.ok()) return Fail(r_, path, s);
      r_.external_resolved = true;
    }
    return FatKeys(f, views);
  }

  // Several .ptd files loaded together: each valid, no key in two of them.
  bool PtdSet(const std::vector<std::string>& paths) {
    r_.data_set = true;
    std::vector<std::unique_ptr<PtdFile>> files;
    std::vector<const PtdFile*> views;
    for (const std::string& p : paths) {
      std::unique_ptr<PtdFile> f;
      if (!Ptd(p, options_.deep, &f)) return false;
      views.push_back(f.get());
      files.push_back(std::move(f));
    }
    if (Status s = CheckDataSet(views); !s.ok()) return Fail(r_, ListText(paths), s);
    return true;
  }

 private:
  // `path` as Detect() opened it (every path is detected first), or
  // opened again when it was already handed to a reader.
  template <typename File>
  Result<std::unique_ptr<File>> Open(const std::string& path) {
    // Handed over, not kept: once its reader holds it, the map need not.
    auto node = opened_.extract(path);
    if (node.empty()) return File::Open(path, env_);
    return File::Open(path, node.mapped());
  }

  static VerifiedFile Of(const std::string& path, ArtifactKind kind, uint64_t size) {
    VerifiedFile v;
    v.path = path;
    v.kind = kind;
    v.size = size;
    return v;
  }

  template <typename File>
  bool Integrity(const std::string& path, const File& f, bool deep, VerifiedFile* v) {
    Result<IntegrityCheck> check = CheckIntegrity(f, deep);
    if (!check.ok()) return Fail(r_, path, check.status());
    v->integrity = std::move(check).value();
    return true;
  }

  void CountFat(const std::vector<FatDelegateReport>& fat) {
    r_.fat_delegates = fat.size();
    for (const FatDelegateReport& d : fat) {
      r_.fat_entries += d.entries.size();
      for (const FatEntryReport& e : d.entries) r_.fat_programs += e.program ? 1 : 0;
    }
  }

  // Every fat delegate valid, and every program entry's EXTERNAL keys in
  // the delegate's named data map: the outer program's named data merged
  // with the .ptd files.
  bool FatKeys(const PteFile& file, const std::vector<const PtdFile*>& data) {
    Result<std::vector<FatDelegateReport>> fat = FatDelegates(file);
    if (!fat.ok()) return Fail(r_, file.name(), fat.status());
    std::set<std::string> keys;
    for (const PteNamedData& n : file.named_data()) keys.insert(n.key);
    for (const PtdFile* d : data) {
      for (const PtdFile::Entry& e : d->entries()) keys.insert(e.key);
    }
    for (const FatDelegateReport& d : *fat) {
      for (size_t i = 0; i < d.entries.size(); ++i) {
        const FatEntryReport& e = d.entries[i];
        for (const std::string& key : e.external_keys) {
          if (keys.count(key) == 0) {
            std::string where = "the outer program's named data";
            for (const PtdFile* f : data) where += ", " + f->name();
            return Fail(
                r_, file.name(),
                NotFound(DelegateName(file, d.delegate) + " entries[" + std::to_string(i) + "] \"" +
                         e.entry.backend_id + "\": EXTERNAL key \"" + key + "\" is not in " +
                         where + (data.empty() ? " (no .ptd file given)" : "")));
          }
          ++r_.fat_keys_resolved;
        }
      }
    }
    CountFat(*fat);
    return true;
  }

  VerifyReport& r_;
  const VerifyOptions& options_;
  const Env& env_;
  std::map<std::string, SourcePtr> opened_;  // by path, from Detect()
};

}  // namespace

Result<VerifyReport> Verify(const std::vector<std::string>& files, const VerifyOptions& options,
                            const Env& env) {
  if (files.empty()) return InvalidArgument("no file to verify");
  VerifyReport r;
  // Only .ptd files are data; any other kind is a program (one at most).
  std::vector<std::string> programs, ptds;
  ArtifactKind program_kind = ArtifactKind::kPte;
  Checker check(r, options, env);
  for (const std::string& p : files) {
    Result<ArtifactKind> kind = check.Detect(p);
    if (!kind.ok()) {
      Undetected(r, p, kind.status());
      return r;
    }
    if (*kind == ArtifactKind::kPtd) {
      ptds.push_back(p);
    } else {
      programs.push_back(p);
      program_kind = *kind;
    }
  }
  // A file beside a publishing marker may belong to a unit a killed writer
  // left half old, half new (etpack/output.h, Publish): no check of its
  // own bytes could tell.
  std::vector<std::string> all = files;
  all.insert(all.end(), options.data.begin(), options.data.end());
  for (const std::string& p : all) {
    Status s = CheckNoPublishMarker(env.in(), p);
    if (!s.ok()) {
      Fail(r, p, s);
      return r;
    }
  }
  if (programs.size() > 1) {
    return InvalidArgument("give one program (.pte) with its .ptd files, or .ptd files; got " +
                           programs[0] + " and " + programs[1]);
  }
  if (programs.empty()) {
    if (!options.data.empty()) {
      return InvalidArgument("data goes with a .pte; " + ListText(ptds) +
                             (ptds.size() == 1 ? " is a .ptd" : " are .ptd files"));
    }
    if (ptds.size() == 1) {
      check.Ptd(ptds[0], options.deep);
    } else {
      check.PtdSet(ptds);
    }
    return r;
  }
  const std::string& program = programs[0];
  std::vector<std::string> data = ptds;
  data.insert(data.end(), options.data.begin(), options.data.end());
  if (program_kind == ArtifactKind::kBpte) {
    if (!data.empty()) {
      return InvalidArgument("data goes with a .pte; " + program + " is a .bpte");
    }
    check.Bpte(program);
    return r;
  }
  check.Pte(program, data);
  return r;
}

json::Value VerifyReportJson(const VerifyReport& report) {
  using json::Value;
  std::vector<Value> files;
  for (const VerifiedFile& f : report.files) {
    Value v = Value::Object({{"file", Value::String(f.path)},
                             {"kind", Value::String(ArtifactKindName(f.kind))},
                             {"file_size", Value::UInt(f.size)},
                             {"integrity_table", Value::Bool(f.integrity.has_table)}});
    switch (f.kind) {
      case ArtifactKind::kPte:
        v.Set("methods", Value::UInt(f.methods));
        v.Set("segments", Value::UInt(f.segments));
        break;
      case ArtifactKind::kPtd:
        v.Set("entries", Value::UInt(f.entries));
        v.Set("segments", Value::UInt(f.segments));
        break;
      case ArtifactKind::kBpte:
        v.Set("layout",
              Value::String(f.layout == BpteLayout::kStandard ? "standard" : "segmented"));
        v.Set("test_suites", Value::UInt(f.suites));
        v.Set("test_cases", Value::UInt(f.cases));
        v.Set("program_size", Value::UInt(f.program_size));
        v.Set("methods", Value::UInt(f.methods));
        break;
    }
    files.push_back(std::move(v));
  }
  Value out = Value::Object(
      {{"ok", Value::Bool(report.ok())},
       {"files", Value::Array(std::move(files))},
       {"external_tensors", Value::UInt(report.external_tensors)},
       {"external_resolved", Value::Bool(report.external_resolved)},
       {"fat_delegates", Value::Object({{"delegates", Value::UInt(report.fat_delegates)},
                                        {"entries", Value::UInt(report.fat_entries)},
                                        {"programs", Value::UInt(report.fat_programs)},
                                        {"keys_resolved", Value::UInt(report.fat_keys_resolved)}})},
       {"data_set", Value::Bool(report.data_set)}});
  if (!report.ok()) {
    out.Set("failed", Value::String(report.failed));
    out.Set("unreadable", Value::Bool(report.unreadable));
    out.Set("error", Value::Object({{"code", Value::String(CodeName(report.verdict.code()))},
                                    {"message", Value::String(report.verdict.message())}}));
  }
  return out;
}

}  // namespace etpack
