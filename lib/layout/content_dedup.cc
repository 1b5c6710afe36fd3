#include "layout/content_dedup.h"

#include <xxhash.h>

#include <algorithm>
#include <memory>

namespace etpack {

namespace {

constexpr uint64_t kWindow = 4096;
constexpr uint64_t kSampled = 3 * kWindow;  // items up to this size are sampled whole

}  // namespace

Result<ContentDedup::Hash128> ContentDedup::HashOf(const Source& source, uint64_t offset,
                                                   uint64_t size) {
  constexpr size_t kChunk = size_t{1} << 20;
  if (const uint8_t* p = source.contiguous()) {
    const XXH128_hash_t h = XXH3_128bits(p + offset, static_cast<size_t>(size));
    return Hash128{h.low64, h.high64};
  }
  std::vector<uint8_t> buf;
  try {
    buf.resize(static_cast<size_t>(std::min<uint64_t>(size, kChunk)));
  } catch (const std::bad_alloc&) {
    return OutOfRange("cannot allocate a buffer to hash " + source.Describe());
  }
  // The state is too large for the stack in some builds; own it.
  std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> state(XXH3_createState(),
                                                                        XXH3_freeState);
  if (state == nullptr || XXH3_128bits_reset(state.get()) != XXH_OK) {
    return OutOfRange("cannot allocate a hash state for " + source.Describe());
  }
  for (uint64_t pos = 0; pos < size;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(size - pos, kChunk));
    ETPACK_RETURN_IF_ERROR(source.ReadAt(offset + pos, buf.data(), n));
    (void)XXH3_128bits_update(state.get(), buf.data(), n);
    pos += n;
  }
  const XXH128_hash_t h = XXH3_128bits_digest(state.get());
  return Hash128{h.low64, h.high64};
}

Result<ContentDedup::Hash128> ContentDedup::SampleOf(const Source& source) {
  const uint64_t size = source.size();
  if (size <= kSampled) return HashOf(source, 0, size);
  Hash128 sample;
  for (const uint64_t at : {uint64_t{0}, (size - kWindow) / 2, size - kWindow}) {
    ETPACK_ASSIGN_OR_RETURN(const Hash128 h, HashOf(source, at, kWindow));
    // Order matters (a rotation of the windows is another sample).
    sample.low = sample.low * 0x9E3779B97F4A7C15u ^ h.low;
    sample.high = sample.high * 0x9E3779B97F4A7C15u ^ h.high;
  }
  return sample;
}

Result<const ContentDedup::Hash128*> ContentDedup::SampleOfItem(size_t i) {
  Item& item = items_[i];
  if (!item.sample) {
    ETPACK_ASSIGN_OR_RETURN(item.sample, SampleOf(*item.source));
    // A small item's sample is its whole hash.
    if (item.source->size() <= kSampled) item.hash = item.sample;
  }
  return &*item.sample;
}

Result<const ContentDedup::Hash128*> ContentDedup::HashOfItem(size_t i) {
  Item& item = items_[i];
  if (!item.hash) {
    ETPACK_ASSIGN_OR_RETURN(item.hash, HashOf(*item.source, 0, item.source->size()));
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
    ETPACK_ASSIGN_OR_RETURN(const Hash128* mine, SampleOfItem(self));
    ETPACK_ASSIGN_OR_RETURN(const Hash128* theirs, SampleOfItem(other));
    if (*mine == *theirs) candidates.push_back(other);
  }
  // One candidate: comparing the bytes reads both once, where hashing first
  // would read them twice. Several: whole hashes pick the one to compare.
  const bool hash_first = candidates.size() > 1;
  for (const size_t other : candidates) {
    if (hash_first) {
      ETPACK_ASSIGN_OR_RETURN(const Hash128* mine, HashOfItem(self));
      ETPACK_ASSIGN_OR_RETURN(const Hash128* theirs, HashOfItem(other));
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
