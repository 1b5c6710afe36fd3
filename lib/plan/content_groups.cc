#include "plan/content_groups.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "etpack/input.h"
#include "integrity/hash.h"
#include "plan/content_dedup.h"
#include "plan/same_source.h"

namespace etpack {
namespace {

// Bytes read per member per step: large enough that a cold read runs at
// the disk's pace, small enough that the three buffers stay a few MiB.
constexpr uint64_t kChunk = uint64_t{4} << 20;
// Below this an item is read rather than mapped: a FIEMAP call costs
// about what reading a few pages does.
constexpr uint64_t kMapAtLeast = uint64_t{1} << 20;

Result<std::vector<uint8_t>> Digest(const uint8_t* bytes, size_t n, HashKind kind) {
  ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<RunningHash> h, NewRunningHash(kind));
  h->Update(bytes, n);
  return h->Finish();
}

class Grouper {
 public:
  explicit Grouper(const std::vector<SourcePtr>& sources)
      : sources_(sources), same_as_(sources.size()) {
    for (size_t i = 0; i < same_as_.size(); ++i) same_as_[i] = i;
  }

  Result<ContentGroups> Run() {
    std::vector<std::vector<size_t>> groups;
    for (std::vector<size_t>& by_size : SplitBySize(Distinct())) {
      if (sources_[by_size[0]]->size() == 0) {
        Merge(by_size);
        continue;
      }
      ETPACK_ASSIGN_OR_RETURN(std::vector<std::vector<size_t>> by_sample, SplitBySample(by_size));
      for (std::vector<size_t>& g : by_sample) groups.push_back(std::move(g));
    }
    // In the order of their first items, so each file is read front to back.
    std::sort(
        groups.begin(), groups.end(),
        [](const std::vector<size_t>& a, const std::vector<size_t>& b) { return a[0] < b[0]; });
    for (std::vector<size_t>& g : groups) {
      ETPACK_RETURN_IF_ERROR(CompareInLockstep(SplitByExtents(std::move(g))));
    }
    ContentGroups out;
    out.content_of.resize(sources_.size());
    std::vector<size_t> id_of_first(sources_.size(), SIZE_MAX);
    size_t ids = 0;
    for (size_t i = 0; i < sources_.size(); ++i) {
      const size_t first = Root(i);
      if (id_of_first[first] == SIZE_MAX) id_of_first[first] = ids++;
      out.content_of[i] = id_of_first[first];
    }
    out.bytes_compared = bytes_compared_;
    out.bytes_by_extents = bytes_by_extents_;
    return out;
  }

 private:
  size_t Root(size_t i) const {
    while (same_as_[i] != i) i = same_as_[i];
    return i;
  }
  // Every later item of `same` is the first one's bytes.
  void Merge(const std::vector<size_t>& same) {
    for (size_t k = 1; k < same.size(); ++k) same_as_[same[k]] = same[0];
  }

  // The items that are not the same object or file range as an earlier one.
  std::vector<size_t> Distinct() {
    SameSourceIndex same;
    std::vector<size_t> out;
    for (size_t i = 0; i < sources_.size(); ++i) {
      if (std::optional<size_t> earlier = same.FindOrAdd(*sources_[i], i)) {
        same_as_[i] = *earlier;
        continue;
      }
      out.push_back(i);
    }
    return out;
  }

  // Groups of two or more items of one size, in order of first appearance.
  std::vector<std::vector<size_t>> SplitBySize(const std::vector<size_t>& items) const {
    std::unordered_map<uint64_t, size_t> group_of;
    std::vector<std::vector<size_t>> groups;
    for (const size_t i : items) {
      auto [it, fresh] = group_of.emplace(sources_[i]->size(), groups.size());
      if (fresh) groups.emplace_back();
      groups[it->second].push_back(i);
    }
    return KeepShared(std::move(groups));
  }

  Result<std::vector<std::vector<size_t>>> SplitBySample(const std::vector<size_t>& items) const {
    std::map<std::vector<uint8_t>, size_t> group_of;
    std::vector<std::vector<size_t>> groups;
    for (const size_t i : items) {
      Result<std::vector<uint8_t>> sample = SampleDigest(*sources_[i]);
      if (!sample.ok()) return sample.status();
      auto [it, fresh] = group_of.emplace(std::move(sample).value(), groups.size());
      if (fresh) groups.emplace_back();
      groups[it->second].push_back(i);
    }
    return KeepShared(std::move(groups));
  }

  static std::vector<std::vector<size_t>> KeepShared(std::vector<std::vector<size_t>> groups) {
    groups.erase(std::remove_if(groups.begin(), groups.end(),
                                [](const std::vector<size_t>& g) { return g.size() < 2; }),
                 groups.end());
    return groups;
  }

  // Merges the items of `group` that lie on the same physical blocks as an
  // earlier one; returns the others, to be compared by reading.
  std::vector<size_t> SplitByExtents(std::vector<size_t> group) {
    const uint64_t size = sources_[group[0]]->size();
    if (size < kMapAtLeast) return group;
    std::map<std::pair<uint64_t, std::vector<std::pair<uint64_t, uint64_t>>>, size_t> first_on;
    std::vector<size_t> rest;
    for (const size_t i : group) {
      const FileRange* r = sources_[i]->file_range();
      PhysicalExtents e;
      if (r != nullptr && r->file != nullptr) e = r->file->Extents(r->offset, r->length);
      if (e.known()) {
        auto [it, fresh] = first_on.emplace(std::pair{e.device, std::move(e.runs)}, i);
        if (!fresh) {
          same_as_[i] = it->second;
          bytes_by_extents_ += size;
          continue;
        }
      }
      rest.push_back(i);
    }
    return rest;
  }

  Status ReadChunk(size_t item, uint64_t at, uint8_t* dst, size_t n) {
    bytes_compared_ += n;
    return sources_[item]->ReadAt(at, dst, n);
  }

  Status CompareInLockstep(std::vector<size_t> group) {
    if (group.size() < 2) return Status::OK();
    const uint64_t size = sources_[group[0]]->size();
    const size_t chunk = static_cast<size_t>(std::min(size, kChunk));
    std::vector<uint8_t> lead(chunk), other(chunk), again(chunk);
    std::vector<std::vector<size_t>> classes = {std::move(group)};
    for (uint64_t at = 0; at < size && !classes.empty();) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(size - at, chunk));
      std::vector<std::vector<size_t>> next;
      for (const std::vector<size_t>& c : classes) {
        ETPACK_RETURN_IF_ERROR(ReadChunk(c[0], at, lead.data(), n));
        std::vector<size_t> kept = {c[0]};
        // Members that differ from c[0] here, by class, with the class's
        // chunk hash: members differing alike stay together.
        std::vector<std::vector<size_t>> split;
        std::vector<std::vector<uint8_t>> split_hash;
        for (size_t k = 1; k < c.size(); ++k) {
          ETPACK_RETURN_IF_ERROR(ReadChunk(c[k], at, other.data(), n));
          if (std::memcmp(lead.data(), other.data(), n) == 0) {
            kept.push_back(c[k]);
            continue;
          }
          ETPACK_ASSIGN_OR_RETURN(std::vector<uint8_t> h,
                                  Digest(other.data(), n, HashKind::kXxh3_64));
          bool joined = false;
          for (size_t s = 0; s < split.size() && !joined; ++s) {
            if (split_hash[s] != h) continue;
            ETPACK_RETURN_IF_ERROR(ReadChunk(split[s][0], at, again.data(), n));
            if (std::memcmp(again.data(), other.data(), n) != 0) continue;
            split[s].push_back(c[k]);
            joined = true;
          }
          if (!joined) {
            split.push_back({c[k]});
            split_hash.push_back(std::move(h));
          }
        }
        next.push_back(std::move(kept));
        for (std::vector<size_t>& s : split) next.push_back(std::move(s));
      }
      classes = KeepShared(std::move(next));
      at += n;
    }
    for (const std::vector<size_t>& c : classes) Merge(c);
    return Status::OK();
  }

  const std::vector<SourcePtr>& sources_;
  std::vector<size_t> same_as_;  // an earlier item with the same bytes, or itself
  uint64_t bytes_compared_ = 0;
  uint64_t bytes_by_extents_ = 0;
};

}  // namespace

Result<ContentGroups> GroupByContent(const std::vector<SourcePtr>& sources) {
  return Grouper(sources).Run();
}

}  // namespace etpack
