#include "digests.h"

#include <cstdio>
#include <memory>
#include <utility>
#include <vector>

#include "etpack/artifact_kind.h"
#include "etpack/integrity.h"

namespace etpack::cli {
namespace {

// What digests are printed for: the parts of a file and the keys that
// name one of its segments.
struct Named {
  std::vector<std::string> parts;                    // head, then segments
  std::vector<std::pair<std::string, size_t>> keys;  // key, index into parts
};

Named NamesOf(const OpenedArtifact& file, std::vector<ArtifactPart>* parts_out) {
  Named n;
  std::vector<ArtifactPart> parts;
  switch (file.kind) {
    case ArtifactKind::kPte:
      parts = PartsOf(*file.pte);
      for (const PteNamedData& d : file.pte->named_data()) {
        n.keys.push_back({d.key, d.segment_index + 1});
      }
      break;
    case ArtifactKind::kPtd:
      parts = PartsOf(*file.ptd);
      for (const PtdFile::Entry& e : file.ptd->entries()) {
        n.keys.push_back({e.key, e.segment_index + 1});
      }
      break;
    case ArtifactKind::kBpte: {
      const BpteFile& f = *file.bpte;
      // The embedded program's parts, at their place in the .bpte.
      parts = PartsOf(f.program());
      for (ArtifactPart& p : parts) {
        p.name = "program " + p.name;
        p.offset += f.program_offset();
      }
      for (const PteNamedData& d : f.program().named_data()) {
        n.keys.push_back({d.key, d.segment_index + 1});
      }
      break;
    }
  }
  for (const ArtifactPart& p : parts) n.parts.push_back(p.name);
  if (parts_out) *parts_out = std::move(parts);
  return n;
}

// "sha256:HEX  PREFIXhead", then one line per part and per key.
void Print(const Named& n, const std::vector<std::string>& hex, const std::string& prefix) {
  for (size_t i = 0; i < n.parts.size() && i < hex.size(); ++i) {
    std::printf("sha256:%s  %s%s\n", hex[i].c_str(), prefix.c_str(), n.parts[i].c_str());
  }
  for (const auto& [key, part] : n.keys) {
    if (part < hex.size()) {
      std::printf("sha256:%s  %skey '%s'\n", hex[part].c_str(), prefix.c_str(), key.c_str());
    }
  }
}

}  // namespace

Result<DigestFlags> ParseDigestFlags(const Args& args) {
  DigestFlags f;
  f.integrity_table = args.Has(kIntegrityFlag);
  if (const std::string* d = args.Value(kDigestOption)) {
    if (*d != "sha256") return InvalidArgument("--digest = '" + *d + "': only sha256 is known");
    f.sha256 = true;
  }
  return f;
}

void PrintWrittenDigests(const ArtifactFiles& files, const std::vector<ArtifactSha256>& digests,
                         const Env& env) {
  for (size_t i = 0; i < digests.size(); ++i) {
    const std::string& path = files[i].first;
    // Names come from the file just written (its head only); the bytes
    // were hashed on their way in.
    // A .bpte's plan has the .bpte's own segments, not its program's.
    Named n;
    SourcePtr file;
    Result<ArtifactKind> kind = DetectArtifactKind(path, &file, env);
    if (kind.ok() && *kind != ArtifactKind::kBpte) {
      Result<OpenedArtifact> opened = OpenArtifact(*kind, path, std::move(file));
      if (opened.ok()) n = NamesOf(*opened, nullptr);  // parts: at least the head
    }
    if (n.parts.empty()) {
      n.parts.push_back("head");
      for (size_t j = 0; j < digests[i].segments.size(); ++j) {
        n.parts.push_back("segment " + std::to_string(j));
      }
    }
    std::vector<std::string> hex = {ToHex(digests[i].head)};
    for (const auto& d : digests[i].segments) hex.push_back(ToHex(d));
    Print(n, hex, path + ": ");
  }
}

Status PrintFileDigests(const std::string& path, const Env& env) {
  ETPACK_ASSIGN_OR_RETURN(const OpenedArtifact file, OpenArtifact(path, env));
  std::vector<ArtifactPart> parts;
  const Named n = NamesOf(file, &parts);
  ETPACK_ASSIGN_OR_RETURN(std::vector<std::string> hex, Sha256OfParts(file.file(), parts));
  Print(n, hex, "");
  return Status::OK();
}

}  // namespace etpack::cli
