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
#include "flatbuffer/verifier_limits.h"

namespace etpack {

// PlanPtd of the entries input.entries[i] for i in `selection` (in that
// order; errors name them by their index in `input`). REQUIRES: every index
// < input.entries.size().
Result<PtdPlan> PlanPtdSelection(const PtdInput& input, const std::vector<size_t>& selection,
                                 const PtdOptions& options);

// How errors name input.entries[i]: its `what`, else "entries[i] 'key'".
std::string EntryName(const PtdInput& input, size_t i);

// The FlatTensor of a set of entries is at most FlatTensorBaseBound() plus
// FlatTensorEntryBound(e, new_segment) for each entry e, new_segment
// telling whether e brings a segment of its own (its table and slot).
uint64_t FlatTensorBaseBound();
uint64_t FlatTensorEntryBound(const PtdEntry& e, bool new_segment = true);
// What an entry adds to the FlatTensor at least: its key, its table and
// layout, and (`new_segment`) its segment's table.
uint64_t FlatTensorEntryLowerBound(const PtdEntry& e, bool new_segment);

// The FlatBuffers tables of a FlatTensor of `entries` entries (the
// integrity table's included), `segments` segments and `layouts` tensor
// layouts: what CheckTableCount is given.
uint64_t FlatTensorTables(uint64_t entries, uint64_t segments, uint64_t layouts);

// What one shard's FlatTensor may take: the verifier's table limit and the
// FlatBuffers size limit (tests lower them to make shards of a few entries).
struct ShardLimits {
  uint64_t max_tables = kVerifierMaxTables;
  uint64_t max_flatbuffer_bytes = FLATBUFFERS_MAX_BUFFER_SIZE;
};

// PlanPtdFiles with options.max_shard_bytes != 0, under `limits`.
Result<std::vector<PtdFilePlan>> PlanPtdShards(const std::string& path, const PtdInput& input,
                                               const PtdOptions& options,
                                               const ShardLimits& limits);

}  // namespace etpack

#endif  // ETPACK_PTD_PTD_SELECTION_H_
