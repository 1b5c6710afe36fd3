#include "plan/content_dedup.h"

#include <algorithm>
#include <memory>

#include "integrity/hash.h"

namespace etpack {

namespace {

constexpr uint64_t kWindow = 4096;
constexpr uint64_t kSampled = 3 * kWindow;  // items up to this size are sampled whole

uint64_t Word(const std::vector<uint8_t>& bytes, size_t at) {
  uint64_t w = 0;
  for (size_t i = 0; i < 8; ++i) w = (w << 8) | bytes[at + i];
  return w;
}

}  // namespace

Status FeedSample(const Source& source, RunningHash& hash) {
  const uint64_t size = source.size();
  const uint8_t* bytes = source.contiguous();
  uint8_t window[kWindow];
  auto feed = [&](uint64_t at, uint64_t n) -> Status {
    if (bytes != nullptr) {
      hash.Update(bytes + at, n);
      return Status::OK();
    }
    ETPACK_RETURN_IF_ERROR(source.ReadAt(at, window, n));
    hash.Update(window, n);
    return Status::OK();
  };
  if (size <= kSampled) {
    for (uint64_t at = 0; at < size; at += kWindow) {
      ETPACK_RETURN_IF_ERROR(feed(at, std::min(kWindow, size - at)));
    }
    return Status::OK();
  }
  for (const uint64_t at : {uint64_t{0}, (size - kWindow) / 2, size - kWindow}) {
    ETPACK_RETURN_IF_ERROR(feed(at, kWindow));
  }
  return Status::OK();
}

Result<std::vector<uint8_t>> SampleDigest(const Source& source) {
  ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<RunningHash> h, NewRunningHash(HashKind::kXxh3_128));
  ETPACK_RETURN_IF_ERROR(FeedSample(source, *h));
  return h->Finish();
}

Result<ContentDedup::Digest> ContentDedup::SampleOf(const Source& source) {
  ETPACK_ASSIGN_OR_RETURN(const std::vector<uint8_t> digest, SampleDigest(source));
  return Digest{Word(digest, 0), Word(digest, 8)};
}

Result<ContentDedup::Digest> ContentDedup::SampleOfItem(size_t i) {
  Item& item = items_[i];
  if (!item.sample) {
    ETPACK_ASSIGN_OR_RETURN(item.sample, SampleOf(*item.source));
    // A small item's sample is its whole hash.
    if (item.source->size() <= kSampled) item.hash = item.sample;
  }
  return *item.sample;
}

Result<ContentDedup::Digest> ContentDedup::HashOfItem(size_t i) {
  Item& item = items_[i];
  if (!item.hash) {
    ETPACK_ASSIGN_OR_RETURN(std::vector<uint8_t> h, HashSource(*item.source, HashKind::kXxh3_128));
    item.hash = Digest{Word(h, 0), Word(h, 8)};
  }
  return *item.hash;
}

Result<ContentDedup::SampleGroup*> ContentDedup::GroupOf(size_t item) {
  ETPACK_ASSIGN_OR_RETURN(const Digest sample, SampleOfItem(item));
  ++digests_compared_;  // one lookup
  return &groups_[SizedDigest{items_[item].source->size(), sample}];
}

void ContentDedup::Reserve(size_t items) {
  items_.reserve(items_.size() + items);
  content_of_.reserve(content_of_.size() + items);
  same_source_.Reserve(items);
  groups_.reserve(groups_.size() + items);
}

size_t ContentDedup::NewContent(size_t item) {
  content_of_.push_back(first_.size());
  first_.push_back(item);
  return content_of_.back();
}

Result<size_t> ContentDedup::Add(const SourcePtr& source) {
  const size_t self = items_.size();
  if (std::optional<size_t> same = same_source_.FindOrAdd(*source, self)) {
    return content_of_[*same];
  }
  items_.push_back({source, std::nullopt, std::nullopt});
  auto same_as = [&](size_t other) {
    content_of_.push_back(content_of_[other]);
    return content_of_[other];
  };
  const uint64_t size = source->size();
  // The first item of its size is not read; the second content of a size
  // samples both.
  auto [lone, first_of_size] = unsampled_of_size_.emplace(size, self);
  if (first_of_size) return NewContent(self);
  // Empty items are all equal: nothing to read.
  if (size == 0) return same_as(lone->second);
  if (lone->second != kNone) {
    ETPACK_ASSIGN_OR_RETURN(SampleGroup * group, GroupOf(lone->second));
    *group = SampleGroup{lone->second, kNone, 1, false};
    lone->second = kNone;
  }
  ETPACK_ASSIGN_OR_RETURN(SampleGroup * group, GroupOf(self));
  if (group->count == 0) {
    *group = SampleGroup{self, kNone, 1, false};
    return NewContent(self);
  }
  // One candidate: comparing the bytes reads both once, where hashing first
  // would read them twice. Several: whole hashes pick the one to compare.
  if (group->count == 1) {
    ETPACK_ASSIGN_OR_RETURN(const bool same, SameBytes(*items_[group->first].source, *source));
    if (same) return same_as(group->first);
    group->second = self;
    group->count = 2;
    return NewContent(self);
  }
  if (!group->hashed) {
    for (const size_t member : {group->first, group->second}) {
      ETPACK_ASSIGN_OR_RETURN(const Digest h, HashOfItem(member));
      hashes_.emplace(SizedDigest{size, h}, member);
    }
    group->hashed = true;
  }
  ETPACK_ASSIGN_OR_RETURN(const Digest mine, HashOfItem(self));
  const SizedDigest key{size, mine};
  ++digests_compared_;  // one lookup
  for (auto [it, end] = hashes_.equal_range(key); it != end; ++it) {
    ETPACK_ASSIGN_OR_RETURN(const bool same, SameBytes(*items_[it->second].source, *source));
    if (same) return same_as(it->second);
  }
  ++group->count;
  hashes_.emplace(key, self);
  return NewContent(self);
}

}  // namespace etpack
