// plan_behind.h (internal) — the plan a ArtifactSource (etpack/artifact_source.h)
// reads from, so a planner that takes sources can nest a planned artifact
// (NestedSegment) instead of reading it through the source: its placements
// then reach the output as they are (a file range stays a file range, for
// in-kernel copies), and nothing of it passes through memory twice.

#ifndef ETPACK_WRITER_PLAN_BEHIND_H_
#define ETPACK_WRITER_PLAN_BEHIND_H_

#include "etpack/plan.h"
#include "etpack/source.h"

namespace etpack {

// The plan behind `source` when it was made by ArtifactSource, else nullptr.
// The plan lives as long as the source.
const ArtifactPlan* PlanBehind(const Source& source);

}  // namespace etpack

#endif  // ETPACK_WRITER_PLAN_BEHIND_H_
