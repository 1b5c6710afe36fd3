// content_dedup.h (internal) — which items hold the same bytes, reading as
// little as possible.
//
// Items are added one at a time; each is told the first item added with
// identical bytes (itself when none). The cost model, for items of many GB:
//   - the same Source object, or the same range of the same file (file
//     sources of one file share a descriptor), is the same item without
//     reading anything;
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
// shares a whole read or two and one comparison per match; never k^2 reads. Used for .pte/.ptd
// named data and shared delegate payloads; any other store (constant tensors, .ptd tensors) can use
// it the same way.

#ifndef ETPACK_LAYOUT_CONTENT_DEDUP_H_
#define ETPACK_LAYOUT_CONTENT_DEDUP_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "etpack/source.h"
#include "etpack/status.h"

namespace etpack {

class ContentDedup {
 public:
  // The id of `source`'s content: ids are dense (0, 1, ... in order of
  // first appearance) and equal exactly when the bytes are. Read errors are
  // returned as they come; after one the object must not be used again
  // (planners stop on the error). REQUIRES: source != nullptr.
  Result<size_t> Add(const SourcePtr& source);

  // Distinct contents so far, and the first source seen with content `id`.
  size_t contents() const { return first_.size(); }
  const SourcePtr& content(size_t id) const { return items_[first_[id]].source; }

 private:
  using Digest = std::vector<uint8_t>;  // XXH3-128, canonical bytes
  struct Item {
    SourcePtr source;
    std::optional<Digest> sample;  // computed on the first same-size meeting
    std::optional<Digest> hash;    // computed on the first same-sample meeting
  };
  static Result<Digest> SampleOf(const Source& source);
  Result<const Digest*> SampleOfItem(size_t i);
  Result<const Digest*> HashOfItem(size_t i);

  std::vector<Item> items_;         // every distinct source object
  std::vector<size_t> content_of_;  // items_[i]'s content id
  std::vector<size_t> first_;       // content id -> its first item
  // Items that started a content, by size: the only candidates to compare
  // a new item with.
  std::unordered_map<uint64_t, std::vector<size_t>> firsts_by_size_;
  std::unordered_map<const Source*, size_t> item_of_object_;
  // File ranges (fd, offset, length) -> item: one range named twice.
  std::map<std::tuple<int, uint64_t, uint64_t>, size_t> item_of_range_;
};

}  // namespace etpack

#endif  // ETPACK_LAYOUT_CONTENT_DEDUP_H_
