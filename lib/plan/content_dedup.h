// content_dedup.h (internal) — which items hold the same bytes, reading as
// little as possible.
//
// Items are added one at a time; each is told the first item added with
// identical bytes (itself when none). The cost model, for items of many GB:
//   - the same Source object, or the same range of the same file, is the
//     same item without reading anything (same_source.h);
//   - items are candidates for each other only when their sizes agree, so
//     an item whose size no other item has is never read;
//   - on its first meeting with another item of its size, an item is
//     sampled: XXH3-128 of three 4 KiB windows (its start, middle and end),
//     kept. Weights of one shape (every layer of a transformer) differ
//     there, so telling them apart costs 12 KiB each, not a read of the
//     whole checkpoint while planning;
//   - an item whose sample matches one earlier content's is compared with
//     it byte for byte; one that matches several is hashed whole (XXH3-128,
//     once, kept) and compared only with the content of equal hash, so a
//     collision can never merge different contents.
// k items of one size cost k samples, plus for items whose sample another
// shares a whole read or two and one comparison per match; never k^2 reads.
// Candidates are found by lookup (size, then sample, then whole hash), never
// by a scan of the earlier items, so n items cost O(n) lookups whatever their
// sizes and contents. Used for .pte/.ptd named data and shared delegate
// payloads; any other store (constant tensors, .ptd tensors) can use it the
// same way.

#ifndef ETPACK_PLAN_CONTENT_DEDUP_H_
#define ETPACK_PLAN_CONTENT_DEDUP_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "etpack/source.h"
#include "etpack/status.h"
#include "integrity/hash.h"
#include "plan/same_source.h"

namespace etpack {

// Feeds `source`'s sample to `hash`: all of it when it is at most 12 KiB,
// else the 4 KiB windows at its start, at (size - 4096) / 2 and at its end.
// Equal contents always have equal samples: ContentDedup's first test, and
// what `share` makes content keys from (etpack/share.h).
Status FeedSample(const Source& source, RunningHash& hash);

// The XXH3-128 digest (16 bytes) of `source`'s sample (FeedSample).
Result<std::vector<uint8_t>> SampleDigest(const Source& source);

class ContentDedup {
 public:
  // The id of `source`'s content: ids are dense (0, 1, ... in order of
  // first appearance) and equal exactly when the bytes are. Read errors are
  // returned as they come; after one the object must not be used again
  // (planners stop on the error). REQUIRES: source != nullptr.
  Result<size_t> Add(const SourcePtr& source);
  // Room for `items` more items without rehashing (a planner that knows its
  // count says so first).
  void Reserve(size_t items);

  // Distinct contents so far, and the first source seen with content `id`.
  size_t contents() const { return first_.size(); }
  const SourcePtr& content(size_t id) const { return items_[first_[id]].source; }
  // Digest lookups so far (at most three per Add): the planner's cost
  // beyond its reads, which a scan of earlier items would make n^2.
  uint64_t digests_compared() const { return digests_compared_; }

 private:
  // XXH3-128 as two words: a key of the maps below.
  struct Digest {
    uint64_t high = 0, low = 0;
    bool operator==(const Digest& o) const { return high == o.high && low == o.low; }
  };
  // A digest of the items of one size.
  struct SizedDigest {
    uint64_t size = 0;
    Digest digest;
    bool operator==(const SizedDigest& o) const { return size == o.size && digest == o.digest; }
  };
  struct SizedDigestHash {
    size_t operator()(const SizedDigest& k) const {
      return static_cast<size_t>(k.digest.low ^ (k.size * 0x9E3779B97F4A7C15ull));
    }
  };
  struct Item {
    SourcePtr source;
    std::optional<Digest> sample;  // computed on the first same-size meeting
    std::optional<Digest> hash;    // computed when its sample group needs it
  };
  // The contents (by first item) that share one size and sample. Up to two
  // are compared byte for byte; from the third on, every member's whole hash
  // is in hashes_ and only equal hashes are compared.
  struct SampleGroup {
    size_t first = 0, second = 0;
    size_t count = 0;
    bool hashed = false;
  };
  static constexpr size_t kNone = static_cast<size_t>(-1);

  static Result<Digest> SampleOf(const Source& source);
  Result<Digest> SampleOfItem(size_t i);
  Result<Digest> HashOfItem(size_t i);
  // Sends `item` (a new content) to its sample group.
  Result<SampleGroup*> GroupOf(size_t item);
  size_t NewContent(size_t item);

  uint64_t digests_compared_ = 0;
  std::vector<Item> items_;         // every distinct source object
  std::vector<size_t> content_of_;  // items_[i]'s content id
  std::vector<size_t> first_;       // content id -> its first item
  // Size -> the first item of the one content of that size not yet sampled
  // (kNone once a second content of the size came and both were sampled).
  std::unordered_map<uint64_t, size_t> unsampled_of_size_;
  std::unordered_map<SizedDigest, SampleGroup, SizedDigestHash> groups_;
  // Whole hashes of the members of groups in hashed mode -> their first items.
  std::unordered_multimap<SizedDigest, size_t, SizedDigestHash> hashes_;
  SameSourceIndex same_source_;  // item by object and by file range
};

}  // namespace etpack

#endif  // ETPACK_PLAN_CONTENT_DEDUP_H_
