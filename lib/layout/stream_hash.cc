#include "layout/stream_hash.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

namespace etpack {

Result<size_t> StreamHashes::Add(uint64_t offset, uint64_t size, HashKind kind) {
  if (started_) return InvalidArgument("internal: a hashed range added after streaming began");
  ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<RunningHash> h, NewRunningHash(kind));
  ranges_.push_back({offset, offset + size, std::move(h), {}});
  return ranges_.size() - 1;
}

Status StreamHashes::Feed(uint64_t offset, const uint8_t* data, uint64_t n) {
  if (!started_) {
    started_ = true;
    order_.resize(ranges_.size());
    std::iota(order_.begin(), order_.end(), size_t{0});
    std::stable_sort(order_.begin(), order_.end(),
                     [&](size_t a, size_t b) { return ranges_[a].offset < ranges_[b].offset; });
  }
  if (offset < pos_) {
    return InvalidArgument("internal: bytes at " + std::to_string(offset) +
                           " hashed after bytes up to " + std::to_string(pos_));
  }
  if (offset > pos_) Span(pos_, nullptr, offset - pos_);
  Span(offset, data, n);
  pos_ = offset + n;
  return Status::OK();
}

void StreamHashes::Span(uint64_t offset, const uint8_t* data, uint64_t n) {
  const uint64_t end = offset + n;
  // Ranges open once the stream reaches them; an empty range at the
  // current position finishes at once.
  while (next_ < order_.size() && ranges_[order_[next_]].offset <= end) {
    active_.push_back(order_[next_++]);
  }
  for (size_t i = 0; i < active_.size();) {
    Range& r = ranges_[active_[i]];
    const uint64_t lo = std::max(offset, r.offset);
    const uint64_t hi = std::min(end, r.end);
    if (lo < hi) {
      if (data != nullptr) {
        r.hash->Update(data + (lo - offset), static_cast<size_t>(hi - lo));
      } else {
        r.hash->UpdateZeros(hi - lo);
      }
    }
    if (r.end <= end) {
      r.digest = r.hash->Finish();
      r.hash.reset();
      active_[i] = active_.back();
      active_.pop_back();
      continue;
    }
    ++i;
  }
}

}  // namespace etpack
