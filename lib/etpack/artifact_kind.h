// etpack/artifact_kind.h — what kind of artifact a file is (.pte, .ptd or
// .bpte, from its identifier at bytes 4..7), and the file opened as the
// reader of its kind: the one place either is decided, for every entry
// point that takes "any artifact" (inspect, sizes, share, update, compress,
// the CLI and the Python module).

#ifndef ETPACK_ARTIFACT_KIND_H_
#define ETPACK_ARTIFACT_KIND_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "etpack/bpte_file.h"
#include "etpack/env.h"
#include "etpack/ptd_file.h"
#include "etpack/pte_file.h"
#include "etpack/source.h"
#include "etpack/status.h"

namespace etpack {

// What a file is, from its identifier at bytes 4..7.
enum class ArtifactKind { kPte, kPtd, kBpte };
// "pte", "ptd", "bpte": the "kind" member of every report that names a
// file's kind (inspect, verify, sizes, share).
const char* ArtifactKindName(ArtifactKind kind);
// Bytes 4..7 of `head` (`size` bytes, fewer when it is shorter) as text,
// '?' for a byte that is not printable ASCII: an identifier as reports and
// errors show it.
std::string ArtifactIdentifier(const uint8_t* head, uint64_t size);

// The kind of `file`, named `name` in errors. kCorrupt exactly when the
// file is no artifact: shorter than 8 bytes, or carrying none of ET12,
// FT01, BP08 (so a caller may take kCorrupt to mean "some other file");
// a read error as the source returns it.
Result<ArtifactKind> DetectArtifactKind(const std::string& name, const Source& file);
// The same with "no artifact" as nullopt, not an error: for a caller that
// takes other files too. Fails only on a read error.
Result<std::optional<ArtifactKind>> ArtifactKindOrNone(const std::string& name, const Source& file);
// DetectArtifactKind(path, file) for the file at `path`, opened through
// `env.input` (etpack/env.h), as by every call below that takes a path;
// also kNotFound or kIoError when it cannot be read. `file`, when not null,
// receives the file opened, so the kind's reader opens it once:
// File::Open(path, *file) or OpenArtifact(kind, path, *file).
Result<ArtifactKind> DetectArtifactKind(const std::string& path, SourcePtr* file = nullptr,
                                        const Env& env = {});

// An artifact opened as the reader of its kind (etpack/artifact_file.h):
// exactly the pointer of `kind` is set.
struct OpenedArtifact {
  ArtifactKind kind = ArtifactKind::kPte;
  std::unique_ptr<PteFile> pte;
  std::unique_ptr<PtdFile> ptd;
  std::unique_ptr<BpteFile> bpte;

  // The reader that is set, as what every reader is.
  const ArtifactFile& file() const;
};

// `file` (named `name` in errors) opened as the reader of `kind`, which
// validates it (File::Open(name, file)).
// REQUIRES: file is a file source (or a slice of one).
Result<OpenedArtifact> OpenArtifact(ArtifactKind kind, const std::string& name, SourcePtr file);
// The file at `path`, opened once through `env.input`: its kind
// (DetectArtifactKind), then its reader. Errors: DetectArtifactKind's,
// then the reader's.
Result<OpenedArtifact> OpenArtifact(const std::string& path, const Env& env = {});

}  // namespace etpack

#endif  // ETPACK_ARTIFACT_KIND_H_
