// input_files.h (internal) — what a planner keeps in ArtifactPlan::inputs:
// the files its input was read from, so that the writer can refuse to
// replace any of them (CheckNotInputs, etpack/output.h), including those
// whose bytes went into the head or were stored once for several items
// and so appear in no placement.

#ifndef ETPACK_WRITER_INPUT_FILES_H_
#define ETPACK_WRITER_INPUT_FILES_H_

#include <set>
#include <vector>

#include "etpack/plan.h"
#include "etpack/source.h"

namespace etpack {

class InputFiles {
 public:
  // Keeps `source` when it reads a file no kept source reads (sources of one
  // file share a descriptor, so this costs one entry per file, not per
  // item); a planned artifact (ArtifactSource) adds what its plan reads.
  // Memory and generated sources read no file and are not kept.
  void Add(const SourcePtr& source);
  void Add(const std::vector<SourcePtr>& sources);
  // What `plan` reads: its placements and its inputs.
  void Add(const ArtifactPlan& plan);

  std::vector<SourcePtr> Take() { return std::move(kept_); }

 private:
  std::set<int> fds_;
  std::vector<SourcePtr> kept_;
};

// Every source the writer must not overwrite for `plan`: its placements'
// and its inputs' (CheckNotInputs skips those that read no file).
std::vector<const Source*> SourcesRead(const ArtifactPlan& plan);

}  // namespace etpack

#endif  // ETPACK_WRITER_INPUT_FILES_H_
