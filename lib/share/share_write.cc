// Writing a share (etpack/share.h, WriteShare): the plan's files built in a
// hidden folder beside out_dir, which one rename then puts in place
// (io/folder_unit.h).

#include "share/share_write.h"

#include <memory>
#include <string>
#include <vector>

#include "etpack/path_text.h"
#include "io/folder_unit.h"
#include "io/posix_output.h"

namespace etpack {
namespace {

// `s` with the hidden folder's path replaced by out_dir's, so that errors
// name the files where the user will look for them.
Status InOutDir(const Status& s, const FolderUnit& unit) {
  if (s.ok()) return s;
  std::string message = s.message();
  for (size_t at; (at = message.find(unit.staging())) != std::string::npos;) {
    message.replace(at, unit.staging().size(), unit.dir());
  }
  return Status(s.code(), message);
}

}  // namespace

Status WriteShareWith(const SharePlan& plan, const WriteOptions& options, OutputFs* fs,
                      PosixCalls* calls) {
  std::vector<SourcePtr> read;
  std::vector<const Source*> inputs;
  for (const auto& in : plan.inputs) {
    read.push_back(in->RangeSource(0, in->size()));
    inputs.push_back(read.back().get());
  }
  ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<FolderUnit> unit,
                          FolderUnit::Begin(plan.out_dir, inputs, options.cancel, calls));
  ArtifactFiles staged;
  std::vector<std::string> names;
  for (const auto& [path, artifact] : plan.files()) {
    names.push_back(PathFileName(path));
    staged.emplace_back(unit->Staged(names.back()), artifact);
  }
  std::unique_ptr<OutputFs> posix;
  if (fs == nullptr) {
    posix = NewPosixOutputFs(options.output, calls);
    fs = posix.get();
  }
  ETPACK_RETURN_IF_ERROR(InOutDir(WriteArtifactFiles(*fs, staged, options), *unit));
  return InOutDir(unit->Commit(names, options.cancel), *unit);
}

Status WriteShare(const SharePlan& plan, const WriteOptions& options, const Env& env) {
  return WriteShareWith(plan, options, env.output, DefaultPosixCalls());
}

}  // namespace etpack
