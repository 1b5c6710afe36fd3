// etpack/verify.h — whether artifacts are valid, checked completely: the one
// verdict `etpack verify`, etpack.verify() in Python and etpack_verify() in C
// all give.
//
// What is checked, for every file: it opens (its flatbuffer verified, every
// structural rule of its kind), and its integrity table, when it has one,
// matches its bytes (etpack/integrity.h). Then by what is given:
//   - one .pte: its fat (NFAT) delegates, every container and program entry
//     valid and every program entry's EXTERNAL keys found in the outer
//     program's named data or its data files; with data files (.ptd), each
//     valid and every EXTERNAL tensor resolving in them
//     (CheckExternalReferences, which refuses a key in two of them);
//   - one .ptd;
//   - several .ptd files alone: a set loaded together, each valid and each
//     key in exactly one of them (CheckDataSet);
//   - one .bpte: its test suites readable, its embedded program's integrity
//     table and fat delegates.

#ifndef ETPACK_VERIFY_H_
#define ETPACK_VERIFY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "etpack/bpte.h"
#include "etpack/env.h"
#include "etpack/inspect.h"
#include "etpack/integrity.h"
#include "etpack/json.h"
#include "etpack/status.h"

namespace etpack {

struct VerifyOptions {
  // More .ptd files holding a .pte's data, checked as the .ptd files among
  // the files verified are (`etpack verify --data`, etpack.verify(data=)).
  std::vector<std::string> data;
  // Hash every part of the files verified (not of data files) with XXH3-64,
  // with or without an integrity table (IntegrityCheck::xxh3).
  bool deep = false;
};

// One valid file: what `verify` says of it.
struct VerifiedFile {
  std::string path;
  ArtifactKind kind = ArtifactKind::kPte;
  uint64_t size = 0;      // bytes
  uint64_t methods = 0;   // .pte; .bpte: of the embedded program
  uint64_t segments = 0;  // .pte, .ptd
  uint64_t entries = 0;   // .ptd
  // .bpte only.
  BpteLayout layout = BpteLayout::kStandard;
  uint64_t suites = 0;
  uint64_t cases = 0;
  uint64_t program_size = 0;  // bytes of the embedded program
  // Its integrity table (a .bpte's: the embedded program's).
  IntegrityCheck integrity;
};

struct VerifyReport {
  // The files found valid, in the order checked: the .pte (or the one .ptd,
  // the .bpte), then the .ptd files holding its data; or each .ptd of a set.
  // Checking stops at the first invalid file.
  std::vector<VerifiedFile> files;

  // A .pte: its EXTERNAL tensors; resolved when data files were given (else
  // not checked: a program alone says nothing of data it does not hold).
  uint64_t external_tensors = 0;
  bool external_resolved = false;
  // A .pte (a .bpte's program): its fat delegates, their entries, the
  // entries that are programs and the EXTERNAL keys those resolve.
  uint64_t fat_delegates = 0;
  uint64_t fat_entries = 0;
  uint64_t fat_programs = 0;
  uint64_t fat_keys_resolved = 0;
  // Several .ptd files alone, checked as one set: `files` are those of
  // them found valid; the verdict is on the first invalid one, or on the
  // set ("a.ptd, b.ptd") for a key in two of them.
  bool data_set = false;

  // OK when everything given is valid. Otherwise why `failed` — the path of
  // the file, or of a set "a.ptd, b.ptd" — is not: the library's error,
  // naming the file, the field and the value.
  Status verdict;
  std::string failed;
  // `failed` could not be read (missing, not a regular file, an I/O
  // error): nothing is known of whether it is valid.
  bool unreadable = false;

  bool ok() const { return verdict.ok(); }
};

// Verifies `files`: one .pte, .ptd or .bpte; a .pte and .ptd files (its
// data, as options.data); or .ptd files only (a set). An invalid or
// unreadable file is the report's verdict, not an error. Fails
// (kInvalidArgument) only for a request that names no such combination:
// no file, two programs, data files beside a .ptd or a .bpte. Every file
// (and data file) is opened through env.input (etpack/env.h).
Result<VerifyReport> Verify(const std::vector<std::string>& files,
                            const VerifyOptions& options = {}, const Env& env = {});

// The report as JSON: {"ok", "files": [{"file", "kind", "file_size", ...}],
// "external_tensors", "external_resolved", "fat_delegates": {"delegates",
// "entries", "programs", "keys_resolved"}, "data_set"}, and when not ok
// "failed", "unreadable", "error": {"code", "message"}.
json::Value VerifyReportJson(const VerifyReport& report);

}  // namespace etpack

#endif  // ETPACK_VERIFY_H_
