// ptd_selection.h (internal) — what the shard planner (ptd_shards.cc)
// needs of the .ptd planner (ptd_plan.cc): planning some of an input's
// entries, and an upper bound of the flatbuffer they make.

#ifndef ETPACK_PTD_PTD_SELECTION_H_
#define ETPACK_PTD_PTD_SELECTION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "etpack/ptd.h"
#include "etpack/status.h"

namespace etpack {

// PlanPtd of the entries input.entries[i] for i in `selection` (in that
// order; errors name them by their index in `input`). REQUIRES: every index
// < input.entries.size().
Result<PtdPlan> PlanPtdSelection(const PtdInput& input, const std::vector<size_t>& selection,
                                 const PtdOptions& options);

// How errors name input.entries[i]: its `what`, else "entries[i] 'key'".
std::string EntryName(const PtdInput& input, size_t i);

// The FlatTensor of a set of entries is at most FlatTensorBaseBound() plus
// FlatTensorEntryBound(e) for each entry e (everything an entry brings,
// its segment's table included).
uint64_t FlatTensorBaseBound();
uint64_t FlatTensorEntryBound(const PtdEntry& e);

}  // namespace etpack

#endif  // ETPACK_PTD_PTD_SELECTION_H_
