#include "layout/content_dedup.h"

#include <algorithm>
#include <memory>

#include "integrity/hash.h"

namespace etpack {

namespace {

constexpr uint64_t kWindow = 4096;
constexpr uint64_t kSampled = 3 * kWindow;  // items up to this size are sampled whole

}  // namespace

// The three windows fed to one running hash, in order.
Result<ContentDedup::Digest> ContentDedup::SampleOf(const Source& source) {
  const uint64_t size = source.size();
  if (size <= kSampled) return HashSource(source, HashKind::kXxh3_128);
  ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<RunningHash> h, NewRunningHash(HashKind::kXxh3_128));
  const uint8_t* bytes = source.contiguous();
  uint8_t window[kWindow];
  for (const uint64_t at : {uint64_t{0}, (size - kWindow) / 2, size - kWindow}) {
    if (bytes != nullptr) {
      h->Update(bytes + at, kWindow);
    } else {
      ETPACK_RETURN_IF_ERROR(source.ReadAt(at, window, kWindow));
      h->Update(window, kWindow);
    }
  }
  return h->Finish();
}

Result<const ContentDedup::Digest*> ContentDedup::SampleOfItem(size_t i) {
  Item& item = items_[i];
  if (!item.sample) {
    ETPACK_ASSIGN_OR_RETURN(item.sample, SampleOf(*item.source));
    // A small item's sample is its whole hash.
    if (item.source->size() <= kSampled) item.hash = item.sample;
  }
  return &*item.sample;
}

Result<const ContentDedup::Digest*> ContentDedup::HashOfItem(size_t i) {
  Item& item = items_[i];
  if (!item.hash) {
    ETPACK_ASSIGN_OR_RETURN(item.hash, HashSource(*item.source, HashKind::kXxh3_128));
  }
  return &*item.hash;
}

Result<size_t> ContentDedup::Add(const SourcePtr& source) {
  if (auto it = item_of_object_.find(source.get()); it != item_of_object_.end()) {
    return content_of_[it->second];
  }
  const size_t self = items_.size();
  if (const FileRange* r = source->file_range()) {
    auto [it, fresh] = item_of_range_.emplace(std::tuple{r->fd, r->offset, r->length}, self);
    if (!fresh) return content_of_[it->second];
  }
  items_.push_back({source, std::nullopt, std::nullopt});
  item_of_object_.emplace(source.get(), self);
  std::vector<size_t>& same_size = firsts_by_size_[source->size()];
  auto same_as = [&](size_t other) {
    content_of_.push_back(content_of_[other]);
    return content_of_[other];
  };
  // Empty items are all equal: nothing to read.
  if (source->size() == 0 && !same_size.empty()) return same_as(same_size.front());
  std::vector<size_t> candidates;  // same size and same sample
  for (const size_t other : same_size) {
    ETPACK_ASSIGN_OR_RETURN(const Digest* mine, SampleOfItem(self));
    ETPACK_ASSIGN_OR_RETURN(const Digest* theirs, SampleOfItem(other));
    if (*mine == *theirs) candidates.push_back(other);
  }
  // One candidate: comparing the bytes reads both once, where hashing first
  // would read them twice. Several: whole hashes pick the one to compare.
  const bool hash_first = candidates.size() > 1;
  for (const size_t other : candidates) {
    if (hash_first) {
      ETPACK_ASSIGN_OR_RETURN(const Digest* mine, HashOfItem(self));
      ETPACK_ASSIGN_OR_RETURN(const Digest* theirs, HashOfItem(other));
      if (!(*mine == *theirs)) continue;
    }
    ETPACK_ASSIGN_OR_RETURN(const bool same, SameBytes(*items_[other].source, *source));
    if (same) return same_as(other);
  }
  content_of_.push_back(first_.size());
  first_.push_back(self);
  same_size.push_back(self);
  return content_of_.back();
}

}  // namespace etpack
