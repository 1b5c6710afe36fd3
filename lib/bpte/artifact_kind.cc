// Telling the three artifacts apart and opening each as its reader. It
// lives with the .bpte reader because this is the lowest layer that sees
// all three (lib/layers.txt): compress (archive) uses it as well as the
// reports above.

#include "etpack/artifact_kind.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

namespace etpack {

std::string ArtifactIdentifier(const uint8_t* head, uint64_t size) {
  std::string id;
  for (uint64_t i = 4; i < 8 && i < size; ++i) {
    const char c = static_cast<char>(head[i]);
    id += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return id;
}

const char* ArtifactKindName(ArtifactKind kind) {
  switch (kind) {
    case ArtifactKind::kPte: return "pte";
    case ArtifactKind::kPtd: return "ptd";
    case ArtifactKind::kBpte: return "bpte";
  }
  return "?";
}

Result<ArtifactKind> DetectArtifactKind(const std::string& name, const Source& file) {
  uint8_t head[8];
  const size_t got = static_cast<size_t>(std::min<uint64_t>(file.size(), sizeof head));
  ETPACK_RETURN_IF_ERROR(file.ReadAt(0, head, got));
  if (got < sizeof head) {
    return Corrupt(name + ": " + std::to_string(got) +
                   " bytes is too short for a .pte, .ptd or .bpte file");
  }
  if (std::memcmp(head + 4, "ET12", 4) == 0) return ArtifactKind::kPte;
  if (std::memcmp(head + 4, "FT01", 4) == 0) return ArtifactKind::kPtd;
  if (std::memcmp(head + 4, "BP08", 4) == 0) return ArtifactKind::kBpte;
  return Corrupt(name + ": file identifier '" + ArtifactIdentifier(head, sizeof head) +
                 "' at bytes 4..7 is none of ET12 (.pte), FT01 (.ptd), BP08 (.bpte)");
}

Result<std::optional<ArtifactKind>> ArtifactKindOrNone(const std::string& name,
                                                       const Source& file) {
  Result<ArtifactKind> kind = DetectArtifactKind(name, file);
  if (kind.ok()) return std::optional<ArtifactKind>(*kind);
  if (kind.status().code() == Code::kCorrupt) return std::optional<ArtifactKind>();
  return kind.status();
}

Result<ArtifactKind> DetectArtifactKind(const std::string& path, SourcePtr* opened,
                                        const Env& env) {
  // FileSource refuses anything but a regular file before reading it.
  ETPACK_ASSIGN_OR_RETURN(const SourcePtr file, FileSource(env.in(), path));
  if (opened != nullptr) *opened = file;
  return DetectArtifactKind(path, *file);
}

const ArtifactFile& OpenedArtifact::file() const {
  switch (kind) {
    case ArtifactKind::kPte: return *pte;
    case ArtifactKind::kPtd: return *ptd;
    case ArtifactKind::kBpte: return *bpte;
  }
  return *pte;
}

Result<OpenedArtifact> OpenArtifact(ArtifactKind kind, const std::string& name, SourcePtr file) {
  OpenedArtifact out;
  out.kind = kind;
  switch (kind) {
    case ArtifactKind::kPte: {
      ETPACK_ASSIGN_OR_RETURN(out.pte, PteFile::Open(name, std::move(file)));
      break;
    }
    case ArtifactKind::kPtd: {
      ETPACK_ASSIGN_OR_RETURN(out.ptd, PtdFile::Open(name, std::move(file)));
      break;
    }
    case ArtifactKind::kBpte: {
      ETPACK_ASSIGN_OR_RETURN(out.bpte, BpteFile::Open(name, std::move(file)));
      break;
    }
  }
  return out;
}

Result<OpenedArtifact> OpenArtifact(const std::string& path, const Env& env) {
  SourcePtr file;
  ETPACK_ASSIGN_OR_RETURN(const ArtifactKind kind, DetectArtifactKind(path, &file, env));
  return OpenArtifact(kind, path, std::move(file));
}

}  // namespace etpack
