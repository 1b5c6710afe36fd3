// A .ptd set under a size cap (PlanPtdFiles): entries packed into shards in
// input order, then every shard planned exactly, which also checks the cap.
//
// What a shard holds is counted as the planner will store it: each distinct
// content once (ContentDedup over the entries in order, as NamedDataStore
// does it per shard), its FlatBuffers tables exactly (FlatTensorTables, the
// count the verifier limit is checked on), its flatbuffer and file bytes by
// an upper bound that needs no plan. A shard ends when the next entry would
// take it past the verifier's table limit, the FlatBuffers size limit, or
// the cap. For the cap, the bound is loose by up to a few hundred bytes per
// entry, so where it says "full" the shard is planned exactly and, when the
// room left could hold the next entry, filled on from its exact size; that
// plan is the shard's plan when nothing joins it afterwards.

#include <xxhash.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "etpack/ptd.h"
#include "integrity/table.h"
#include "plan/content_dedup.h"
#include "plan/segments.h"
#include "ptd/ptd_header.h"
#include "ptd/ptd_selection.h"

namespace etpack {

namespace {

constexpr size_t kNoContent = static_cast<size_t>(-1);
// Exact plans of one shard while filling the room its bound left: each
// costs a pass over the shard; past this many the shard ends where it is.
constexpr int kMaxExactPlans = 8;

// What a shard costs as entries join it.
struct Cost {
  uint64_t bytes = 0;       // the file: an upper bound
  uint64_t tables = 0;      // FlatBuffers tables: exact
  uint64_t flatbuffer = 0;  // the FlatTensor's bytes: an upper bound
};

// The cost of one shard as entries join it. Every byte term is an upper
// bound whatever the order segments land in: a segment starts at most (its
// alignment - 1) after the previous one ends.
class ShardBound {
 public:
  // `content[i]`: entry i's content id (kNoContent for an entry planning
  // will refuse), set before With(i) or Take(i) is called.
  ShardBound(const PtdInput& input, const PtdOptions& options, const std::vector<size_t>& content)
      : input_(input), options_(options), content_(content) {
    Clear();
  }

  void Clear() {
    now_ = Sums{};
    now_.head = ptd::kPaddedHeaderLength + FlatTensorBaseBound();
    at_plan_ = now_;
    exact_ = 0;
    max_align_ = options_.segment_alignment;
    contents_.clear();
  }

  // The cost with entry `i` added (saturating: a sum past 2^64 is "too big"
  // all the same).
  Cost With(size_t i) const {
    Sums s = now_;
    Add(i, &s);
    return CostOf(s);
  }
  void Take(size_t i) {
    Add(i, &now_);
    max_align_ = LcmOf(max_align_, input_.entries[i].alignment);
    if (content_[i] != kNoContent) contents_.insert(content_[i]);
  }
  // What entry `i` adds to the file at least: its content when the shard
  // does not hold it yet (what it adds to the flatbuffer may go into the
  // padding before the segments).
  uint64_t LowerBound(size_t i) const {
    const bool fresh = content_[i] != kNoContent && contents_.count(content_[i]) == 0;
    return fresh ? input_.buffers[input_.entries[i].buffer_index]->size() : 0;
  }
  // The shard as it is now plans to exactly `file_size` bytes: bytes count
  // from there on.
  void Rebase(uint64_t file_size) {
    exact_ = file_size;
    at_plan_ = now_;
  }

 private:
  struct Sums {
    uint64_t head = 0;  // header and flatbuffer
    uint64_t data = 0;  // segments and their padding
    uint64_t segments = 0, entries = 0, layouts = 0;
  };

  static uint64_t Sum(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
  // What a segment of both alignments is placed at a multiple of
  // (saturating, as Sum). A 0 (refused when the shard is planned) counts as 1.
  static uint64_t LcmOf(uint64_t a, uint64_t b) {
    if (a == 0 || b == 0) return std::max(a, b);
    Result<uint64_t> l = Lcm(a, b, "");
    return l.ok() ? *l : UINT64_MAX;
  }

  void Add(size_t i, Sums* s) const {
    const PtdEntry& e = input_.entries[i];
    const uint64_t align = LcmOf(options_.segment_alignment, e.alignment);
    // An invalid buffer counts no bytes here: planning the shard reports it.
    const size_t content = content_[i];
    const bool fresh = content != kNoContent && contents_.count(content) == 0;
    s->head = Sum(s->head, FlatTensorEntryBound(e, fresh));
    ++s->entries;
    s->layouts += e.layout ? 1 : 0;
    if (content == kNoContent) return;
    if (fresh) {
      s->data = Sum(s->data, Sum(input_.buffers[e.buffer_index]->size(), align - 1));
      ++s->segments;
    } else if (options_.strictest_shared_alignment) {
      // This entry may raise its segment's alignment, which moves the
      // segment by up to that alignment - 1 and every later one by up to
      // the largest alignment in the shard.
      s->data = Sum(s->data, LcmOf(max_align_, align));
    }
  }

  Cost CostOf(const Sums& s) const {
    const uint64_t align = options_.segment_alignment;
    const bool table = options_.integrity_table;
    Cost c;
    c.tables =
        FlatTensorTables(s.entries + (table ? 1 : 0), s.segments + (table ? 1 : 0), s.layouts);
    // The integrity table: one more entry (its key is the prefix and 16 hex
    // digits) and one more segment, the last, covering the head and every
    // other segment.
    PtdEntry table_entry;
    table_entry.key.assign(kIntegrityKeyPrefix.size() + 16, 'k');
    c.flatbuffer =
        Sum(s.head - ptd::kPaddedHeaderLength, table ? FlatTensorEntryBound(table_entry) : 0);
    if (exact_ == 0) {
      c.bytes = Sum(Sum(Sum(s.head, align - 1), s.data),
                    table ? Sum(FlatTensorEntryBound(table_entry),
                                Sum(IntegrityTableSize(s.segments + 1), align - 1))
                          : 0);
      return c;
    }
    // From the exact size: what joined since, the segment base moving by
    // up to (alignment - 1) more than the flatbuffer grew, and the table
    // moving likewise and growing by a row per segment.
    c.bytes = Sum(exact_, Sum(Sum(s.head - at_plan_.head, align - 1), s.data - at_plan_.data));
    if (table) {
      c.bytes = Sum(c.bytes, Sum(align - 1, IntegrityTableSize(s.segments + 1) -
                                                IntegrityTableSize(at_plan_.segments + 1)));
    }
    return c;
  }

  const PtdInput& input_;
  const PtdOptions& options_;
  const std::vector<size_t>& content_;
  Sums now_, at_plan_;
  uint64_t exact_ = 0;      // 0: no exact plan yet
  uint64_t max_align_ = 1;  // lcm of every alignment in the shard
  std::unordered_set<size_t> contents_;
};

// "dir/model.ptd" -> "dir/model" (the shards' names begin with it), or
// kInvalidArgument for a name with nothing before ".ptd" (".ptd", "dir/"),
// whose shards would be named "-<16 hex>.ptd".
Result<std::string> ShardStem(const std::string& path) {
  constexpr std::string_view kExt = ".ptd";
  std::string stem = path;
  if (stem.size() >= kExt.size() &&
      stem.compare(stem.size() - kExt.size(), kExt.size(), kExt) == 0) {
    stem.resize(stem.size() - kExt.size());
  }
  if (stem.empty() || stem.back() == '/') {
    return InvalidArgument("'" + path +
                           "': shards are named after the output's file name without .ptd "
                           "('model.ptd' gives 'model-<16 hex>.ptd'), and this one has none; "
                           "name the output (e.g. model.ptd)");
  }
  return stem;
}

// "dir/model" -> "dir/model-<16 hex>.ptd" for the shard holding `keys`.
std::string ShardName(const std::string& stem, std::vector<std::string_view> keys) {
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
  return stem + "-" + hex + ".ptd";
}

// One shard being packed: its entries, and its exact plan when one was
// made of exactly those entries.
struct Shard {
  std::vector<size_t> entries;
  std::optional<PtdPlan> plan;
  size_t planned = 0;  // entries.size() when `plan` was made
  int plans = 0;       // exact plans made of it
};

// The exact plan of the whole input when a lower bound of its file size is
// within the cap and its tables within the limit (nullopt otherwise, or
// when planning fails: packing then reports the error where it belongs).
std::optional<PtdPlan> PlanIfOneShard(const PtdInput& input, const std::vector<size_t>& content,
                                      const PtdOptions& exact, const ShardLimits& limits,
                                      uint64_t cap) {
  std::unordered_set<std::string_view> keys;
  std::vector<bool> stored;
  uint64_t lower = ptd::kPaddedHeaderLength, segments = 0, layouts = 0;
  for (size_t i = 0; i < input.entries.size() && lower <= cap; ++i) {
    const PtdEntry& e = input.entries[i];
    if (!keys.insert(e.key).second) continue;
    layouts += e.layout ? 1 : 0;
    bool fresh = false;
    if (content[i] != kNoContent) {
      if (content[i] >= stored.size()) stored.resize(content[i] + 1, false);
      fresh = !stored[content[i]];
      stored[content[i]] = true;
    }
    segments += fresh ? 1 : 0;
    const uint64_t add =
        FlatTensorEntryLowerBound(e, fresh) + (fresh ? input.buffers[e.buffer_index]->size() : 0);
    lower = add > UINT64_MAX - lower ? UINT64_MAX : lower + add;
  }
  if (lower > cap || FlatTensorTables(keys.size(), segments, layouts) > limits.max_tables) {
    return std::nullopt;
  }
  std::vector<size_t> all(input.entries.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  Result<PtdPlan> plan = PlanPtdSelection(input, all, exact);
  if (!plan.ok()) return std::nullopt;
  return std::move(plan).value();
}

}  // namespace

Result<std::vector<PtdFilePlan>> PlanPtdShards(const std::string& path, const PtdInput& input,
                                               const PtdOptions& options,
                                               const ShardLimits& limits) {
  ETPACK_RETURN_IF_ERROR(CheckAlignment(options.segment_alignment, "segment_alignment"));
  ETPACK_ASSIGN_OR_RETURN(const std::string stem, ShardStem(path));
  const uint64_t cap = options.max_shard_bytes;

  // Pass one: which entries go to which shard. A key seen before goes to
  // the shard of its first entry, whose planning then decides whether it
  // is the same entry again (no cost) or an error naming both.
  std::vector<Shard> shards(1);
  std::map<std::string_view, size_t> shard_of_key;
  // The contents and their dedup end with pass one (each shard's planning
  // dedups its own entries again).
  {
    const PtdOptions exact = [&] {
      PtdOptions o = options;
      o.max_shard_bytes = 0;
      return o;
    }();
    std::vector<size_t> content(input.entries.size(), kNoContent);
    {
      ContentDedup dedup;
      dedup.Reserve(input.entries.size());
      for (size_t i = 0; i < input.entries.size(); ++i) {
        const PtdEntry& e = input.entries[i];
        if (e.buffer_index < input.buffers.size() && input.buffers[e.buffer_index] != nullptr) {
          ETPACK_ASSIGN_OR_RETURN(content[i], dedup.Add(input.buffers[e.buffer_index]));
        }
      }
    }
    // A cap the whole input may fit under (by a lower bound of its size)
    // is tried first, exactly: the bound alone would end a shard early
    // where the input fits as one file.
    if (std::optional<PtdPlan> one = PlanIfOneShard(input, content, exact, limits, cap)) {
      if (one->artifact.file_size <= cap) {
        std::vector<size_t> all(input.entries.size());
        for (size_t i = 0; i < all.size(); ++i) all[i] = i;
        shards[0].entries = std::move(all);
        shards[0].plan = std::move(one);
        shards[0].planned = shards[0].entries.size();
      }
    }
    ShardBound bound(input, options, content);
    auto fits = [&](const Cost& c) {
      return c.bytes <= cap && c.tables <= limits.max_tables &&
             c.flatbuffer < limits.max_flatbuffer_bytes;
    };
    for (size_t i = shards[0].entries.size(); i < input.entries.size(); ++i) {
      const PtdEntry& e = input.entries[i];
      if (auto it = shard_of_key.find(e.key); it != shard_of_key.end()) {
        shards[it->second].entries.push_back(i);
        continue;
      }
      Cost cost = bound.With(i);
      Shard* shard = &shards.back();
      if (!shard->entries.empty() && !fits(cost) && cost.tables <= limits.max_tables &&
          cost.flatbuffer < limits.max_flatbuffer_bytes) {
        // Only the bytes are over, and only by the bound: exact plans say
        // whether the room left holds this entry.
        if (shard->planned != shard->entries.size() && shard->plans < kMaxExactPlans) {
          ETPACK_ASSIGN_OR_RETURN(PtdPlan plan, PlanPtdSelection(input, shard->entries, exact));
          shard->plan = std::move(plan);
          shard->planned = shard->entries.size();
          ++shard->plans;
          if (shard->plan->artifact.file_size <= cap) bound.Rebase(shard->plan->artifact.file_size);
          cost = bound.With(i);
        }
        const uint64_t size = shard->plan ? shard->plan->artifact.file_size : UINT64_MAX;
        if (!fits(cost) && shard->planned == shard->entries.size() &&
            shard->plans < kMaxExactPlans && size <= cap && bound.LowerBound(i) <= cap - size) {
          shard->entries.push_back(i);
          ETPACK_ASSIGN_OR_RETURN(PtdPlan plan, PlanPtdSelection(input, shard->entries, exact));
          ++shard->plans;
          if (plan.artifact.file_size <= cap) {
            bound.Take(i);
            bound.Rebase(plan.artifact.file_size);
            shard->plan = std::move(plan);
            shard->planned = shard->entries.size();
            shard_of_key.emplace(e.key, shards.size() - 1);
            continue;
          }
          shard->entries.pop_back();
        }
      }
      if (!shard->entries.empty() && !fits(cost)) {
        shard = &shards.emplace_back();
        bound.Clear();
        cost = bound.With(i);
      }
      if (shard->entries.empty() && !fits(cost)) {
        // The bound is loose; only the exact size of a shard of this entry
        // alone says whether it can fit.
        Result<PtdPlan> alone = PlanPtdSelection(input, {i}, exact);
        if (!alone.ok()) return alone.status();
        if (alone->artifact.file_size > cap) {
          const uint64_t size =
              e.buffer_index < input.buffers.size() && input.buffers[e.buffer_index]
                  ? input.buffers[e.buffer_index]->size()
                  : 0;
          return InvalidArgument(EntryName(input, i) + " (" + std::to_string(size) +
                                 " bytes) cannot fit in a shard of at most max_shard_bytes = " +
                                 std::to_string(cap) + " bytes: a .ptd holding it alone is " +
                                 std::to_string(alone->artifact.file_size) + " bytes");
        }
      }
      shard->entries.push_back(i);
      bound.Take(i);
      shard_of_key.emplace(e.key, shards.size() - 1);
    }
  }

  // Pass two: plan each shard exactly (PlanPtd checks the cap again), or
  // keep the exact plan pass one made of it.
  std::vector<PtdFilePlan> files;
  std::set<std::string> names;
  for (Shard& shard : shards) {
    std::vector<std::string_view> keys;
    std::set<std::string_view> distinct;
    for (const size_t i : shard.entries) {
      if (distinct.insert(input.entries[i].key).second) keys.push_back(input.entries[i].key);
    }
    std::string name = ShardName(stem, std::move(keys));
    if (!shard.plan || shard.planned != shard.entries.size() ||
        shard.plan->artifact.file_size > cap) {
      Result<PtdPlan> plan = PlanPtdSelection(input, shard.entries, options);
      if (!plan.ok()) return plan.status().WithContext("shard " + name);
      shard.plan = std::move(plan).value();
    }
    if (!names.insert(name).second) {
      return InvalidArgument("two shards would both be named " + name);
    }
    files.push_back({std::move(name), std::move(*shard.plan), distinct.size()});
  }
  return files;
}

Result<std::vector<PtdFilePlan>> PlanPtdFiles(const std::string& path, const PtdInput& input,
                                              const PtdOptions& options) {
  if (options.max_shard_bytes == 0) {
    Result<PtdPlan> plan = PlanPtd(input, options);
    if (!plan.ok()) return plan.status();
    std::vector<PtdFilePlan> files;
    files.push_back({path, std::move(plan).value(), input.entries.size()});
    return files;
  }
  return PlanPtdShards(path, input, options, ShardLimits{});
}

ArtifactFiles PtdFiles(const std::vector<PtdFilePlan>& plans) {
  ArtifactFiles files;
  files.reserve(plans.size());
  for (const PtdFilePlan& p : plans) files.emplace_back(p.path, &p.plan.artifact);
  return files;
}

Result<std::vector<std::string>> WritePtd(const std::string& path, const PtdInput& input,
                                          const PtdOptions& options, const WriteOptions& write,
                                          const Env& env) {
  ETPACK_ASSIGN_OR_RETURN(std::vector<PtdFilePlan> plans, PlanPtdFiles(path, input, options));
  ETPACK_RETURN_IF_ERROR(WriteArtifactFiles(PtdFiles(plans), write, env));
  std::vector<std::string> paths;
  for (const PtdFilePlan& p : plans) paths.push_back(p.path);
  return paths;
}

}  // namespace etpack
