// A .ptd set under a size cap (PlanPtdFiles): entries packed into shards in
// input order against an upper bound of each shard's file size that needs
// no bytes read, then every shard planned exactly, which also checks the
// cap. The bound, not the exact size, decides where a shard ends, so that
// packing reads nothing and plans each shard once; it overestimates by a
// few hundred bytes per entry, which a cap worth sharding under dwarfs.

#include <xxhash.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "etpack/ptd.h"
#include "integrity/table.h"
#include "plan/segments.h"
#include "ptd/ptd_header.h"
#include "ptd/ptd_selection.h"

namespace etpack {

namespace {

// The file size bound of one shard as entries join it. Every term is an
// upper bound whatever the order segments land in: a segment starts at most
// (its alignment - 1) after the previous one ends.
class ShardBound {
 public:
  ShardBound(const PtdInput& input, const PtdOptions& options) : input_(input), options_(options) {
    Clear();
  }

  void Clear() {
    head_ = ptd::kPaddedHeaderLength + FlatTensorBaseBound();
    data_ = 0;
    segments_ = 0;
    buffers_.clear();
  }

  // The bound with entry `i` added (saturating: a sum past 2^64 is "too
  // big" all the same).
  uint64_t With(size_t i) const {
    uint64_t head = head_, data = data_, segments = segments_;
    Add(i, &head, &data, &segments);
    return Total(head, data, segments);
  }
  void Take(size_t i) {
    Add(i, &head_, &data_, &segments_);
    buffers_.insert(input_.entries[i].buffer_index);
  }

 private:
  static uint64_t Sum(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

  void Add(size_t i, uint64_t* head, uint64_t* data, uint64_t* segments) const {
    const PtdEntry& e = input_.entries[i];
    const uint64_t align = std::max(options_.segment_alignment, e.alignment);
    *head = Sum(*head, FlatTensorEntryBound(e));
    // A buffer already in the shard shares its segment, which this entry's
    // alignment may raise (SharedAlignment::kStrictest). An invalid buffer
    // counts nothing here: planning the shard reports it.
    uint64_t size = 0;
    if (buffers_.count(e.buffer_index) == 0 && e.buffer_index < input_.buffers.size() &&
        input_.buffers[e.buffer_index] != nullptr) {
      size = input_.buffers[e.buffer_index]->size();
      ++*segments;
    }
    *data = Sum(*data, Sum(size, align - 1));
  }

  uint64_t Total(uint64_t head, uint64_t data, uint64_t segments) const {
    uint64_t total = Sum(Sum(head, options_.segment_alignment - 1), data);
    if (options_.integrity_table) {
      // The table: one more entry (its key is the prefix and 16 hex digits)
      // and one more segment covering the head and every other segment.
      PtdEntry table;
      table.key.assign(kIntegrityKeyPrefix.size() + 16, 'k');
      total = Sum(total, FlatTensorEntryBound(table));
      total = Sum(total, Sum(IntegrityTableSize(segments + 1), options_.segment_alignment - 1));
    }
    return total;
  }

  const PtdInput& input_;
  const PtdOptions& options_;
  uint64_t head_ = 0;
  uint64_t data_ = 0;
  uint64_t segments_ = 0;
  std::set<uint32_t> buffers_;
};

// "dir/model.ptd" -> "dir/model-<16 hex>.ptd" for the shard holding `keys`.
std::string ShardName(const std::string& path, std::vector<std::string_view> keys) {
  std::sort(keys.begin(), keys.end());
  // Each key with a terminating NUL (keys have none), so ("ab", "c") and
  // ("a", "bc") differ.
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  for (std::string_view k : keys) {
    XXH3_64bits_update(state, k.data(), k.size());
    XXH3_64bits_update(state, "", 1);
  }
  const unsigned long long h = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", h);
  constexpr std::string_view kExt = ".ptd";
  std::string stem = path;
  if (stem.size() >= kExt.size() &&
      stem.compare(stem.size() - kExt.size(), kExt.size(), kExt) == 0) {
    stem.resize(stem.size() - kExt.size());
  }
  return stem + "-" + hex + std::string(kExt);
}

}  // namespace

Result<std::vector<PtdFilePlan>> PlanPtdFiles(const std::string& path, const PtdInput& input,
                                              const PtdOptions& options) {
  std::vector<PtdFilePlan> files;
  if (options.max_shard_bytes == 0) {
    Result<PtdPlan> plan = PlanPtd(input, options);
    if (!plan.ok()) return plan.status();
    files.push_back({path, std::move(plan).value(), input.entries.size()});
    return files;
  }
  ETPACK_RETURN_IF_ERROR(CheckAlignment(options.segment_alignment, "segment_alignment"));

  // Pass one: which entries go to which shard. A key seen before goes to
  // the shard of its first entry, whose planning then decides whether it
  // is the same entry again (no cost) or an error naming both.
  std::vector<std::vector<size_t>> shards(1);
  std::map<std::string_view, size_t> shard_of_key;
  ShardBound bound(input, options);
  const PtdOptions exact = [&] {
    PtdOptions o = options;
    o.max_shard_bytes = 0;
    return o;
  }();
  for (size_t i = 0; i < input.entries.size(); ++i) {
    const PtdEntry& e = input.entries[i];
    if (auto it = shard_of_key.find(e.key); it != shard_of_key.end()) {
      shards[it->second].push_back(i);
      continue;
    }
    if (!shards.back().empty() && bound.With(i) > options.max_shard_bytes) {
      shards.emplace_back();
      bound.Clear();
    }
    if (shards.back().empty() && bound.With(i) > options.max_shard_bytes) {
      // The bound is loose; only the exact size of a shard of this entry
      // alone says whether it can fit.
      Result<PtdPlan> alone = PlanPtdSelection(input, {i}, exact);
      if (!alone.ok()) return alone.status();
      if (alone->artifact.file_size > options.max_shard_bytes) {
        const uint64_t size = e.buffer_index < input.buffers.size() && input.buffers[e.buffer_index]
                                  ? input.buffers[e.buffer_index]->size()
                                  : 0;
        return InvalidArgument(EntryName(input, i) + " (" + std::to_string(size) +
                               " bytes) cannot fit in a shard of at most max_shard_bytes = " +
                               std::to_string(options.max_shard_bytes) +
                               " bytes: a .ptd holding it alone is " +
                               std::to_string(alone->artifact.file_size) + " bytes");
      }
    }
    shards.back().push_back(i);
    bound.Take(i);
    shard_of_key.emplace(e.key, shards.size() - 1);
  }

  // Pass two: plan each shard exactly (PlanPtd checks the cap again).
  std::set<std::string> names;
  for (const std::vector<size_t>& shard : shards) {
    std::vector<std::string_view> keys;
    std::set<std::string_view> distinct;
    for (const size_t i : shard) {
      if (distinct.insert(input.entries[i].key).second) keys.push_back(input.entries[i].key);
    }
    std::string name = ShardName(path, std::move(keys));
    Result<PtdPlan> plan = PlanPtdSelection(input, shard, options);
    if (!plan.ok()) return plan.status().WithContext("shard " + name);
    if (!names.insert(name).second) {
      return InvalidArgument("two shards would both be named " + name);
    }
    files.push_back({std::move(name), std::move(plan).value(), distinct.size()});
  }
  return files;
}

ArtifactFiles PtdFiles(const std::vector<PtdFilePlan>& plans) {
  ArtifactFiles files;
  files.reserve(plans.size());
  for (const PtdFilePlan& p : plans) files.emplace_back(p.path, &p.plan.artifact);
  return files;
}

Status WritePtd(const std::string& path, const PtdInput& input, const PtdOptions& options,
                const ProgressFn& progress, std::vector<std::string>* paths) {
  ETPACK_ASSIGN_OR_RETURN(std::vector<PtdFilePlan> plans, PlanPtdFiles(path, input, options));
  ETPACK_RETURN_IF_ERROR(WriteArtifactFiles(PtdFiles(plans), OutputOptions{}, progress));
  if (paths != nullptr) {
    paths->clear();
    for (const PtdFilePlan& p : plans) paths->push_back(p.path);
  }
  return Status::OK();
}

}  // namespace etpack
