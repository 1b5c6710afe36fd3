// etpack/artifact_source.h — a planned artifact read as a Source, without
// writing it anywhere.
//
// An ArtifactPlan (etpack/writer.h) is a small head plus placements of other
// sources. ArtifactSource turns it back into bytes on demand: a read of any
// range copies the head bytes it covers, reads the placements it covers from
// their own sources and zero-fills the padding between them. Nothing is
// materialized, so a planned program or NFAT container of any size can be
// the payload of a delegate (PteInput::delegates) or of anything else that
// takes a SourcePtr, and is streamed when the outer artifact is written.

#ifndef ETPACK_ARTIFACT_SOURCE_H_
#define ETPACK_ARTIFACT_SOURCE_H_

#include <string>

#include "etpack/source.h"
#include "etpack/status.h"
#include "etpack/writer.h"

namespace etpack {

// A source of plan.file_size bytes equal to what WriteArtifact would write
// for `plan`. The plan is kept (its head is copied; its sources are shared).
// `name` appears in Describe() and in read errors ("nfat container
// (2304 bytes)"). Fails with kInvalidArgument when `plan` breaks the
// ArtifactPlan invariants (etpack/writer.h).
// A plan that is one source and nothing else (WholeSourcePlan) gives back that
// source itself, so a file range stays a file range for the output file.
//
// A read costs one binary search over the placements plus the reads of the
// placements it overlaps; ReadAt on distinct ranges may run concurrently
// when the placements' sources allow it.
Result<SourcePtr> ArtifactSource(ArtifactPlan plan, std::string name = "planned artifact");

}  // namespace etpack

#endif  // ETPACK_ARTIFACT_SOURCE_H_
