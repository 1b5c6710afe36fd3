// same_source.h (internal) — the rule by which two items are the same
// bytes without reading either: the same Source object, or the same range
// of the same file (file sources of one file share a descriptor).
// ContentDedup (content_dedup.h) and GroupByContent (content_groups.h) both
// apply it before they read anything.

#ifndef ETPACK_PLAN_SAME_SOURCE_H_
#define ETPACK_PLAN_SAME_SOURCE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "etpack/source.h"

namespace etpack {

class SameSourceIndex {
 public:
  // The earlier item `source` is the same as, or nullopt when there is
  // none: then `source` is recorded as item `item`. The index keeps only
  // the address: the caller keeps every recorded source alive.
  std::optional<size_t> FindOrAdd(const Source& source, size_t item);
  // Room for `items` more items without rehashing.
  void Reserve(size_t items);

 private:
  std::unordered_map<const Source*, size_t> by_object_;
  // File ranges (fd, offset, length) -> item: one range named twice.
  std::map<std::tuple<int, uint64_t, uint64_t>, size_t> by_range_;
};

}  // namespace etpack

#endif  // ETPACK_PLAN_SAME_SOURCE_H_
