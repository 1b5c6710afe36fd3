// Size reports by path (etpack/sizes.h): a file opened as its kind and
// reported, alone or with what several hold alike.

#include "etpack/sizes.h"

#include <memory>
#include <utility>

#include "etpack/artifact_kind.h"

namespace etpack {
namespace {

template <typename File>
Result<SizedFile> Sized(std::unique_ptr<File> file) {
  ETPACK_ASSIGN_OR_RETURN(SizeReport report, SizesOf(*file));
  return SizedFile{std::move(file), std::move(report)};
}

}  // namespace

Result<SizedFile> OpenSized(const std::string& path, const Env& env) {
  ETPACK_ASSIGN_OR_RETURN(OpenedArtifact file, OpenArtifact(path, env));
  switch (file.kind) {
    case ArtifactKind::kPte: return Sized(std::move(file.pte));
    case ArtifactKind::kPtd: return Sized(std::move(file.ptd));
    case ArtifactKind::kBpte: return Sized(std::move(file.bpte));
  }
  return InvalidArgument(path + ": unknown artifact kind");
}

Result<SizeReport> SizesOf(const std::string& path, const Env& env) {
  ETPACK_ASSIGN_OR_RETURN(SizedFile sized, OpenSized(path, env));
  return std::move(sized.report);
}

Result<FileSizes> SizesOfFiles(const std::vector<std::string>& paths, const SharedOptions& options,
                               const Env& env) {
  std::vector<std::unique_ptr<ArtifactFile>> open;
  std::vector<const ArtifactFile*> files;
  FileSizes out;
  for (const std::string& path : paths) {
    ETPACK_ASSIGN_OR_RETURN(SizedFile sized, OpenSized(path, env));
    files.push_back(sized.file.get());
    open.push_back(std::move(sized.file));
    out.reports.push_back(std::move(sized.report));
  }
  if (paths.size() > 1) {
    ETPACK_ASSIGN_OR_RETURN(out.shared, SharedAcrossFiles(files, out.reports, options));
  }
  return out;
}

}  // namespace etpack
