#include "plan/same_source.h"

namespace etpack {

std::optional<size_t> SameSourceIndex::FindOrAdd(const Source& source, size_t item) {
  if (auto it = by_object_.find(&source); it != by_object_.end()) return it->second;
  if (const FileRange* r = source.file_range()) {
    auto [it, fresh] = by_range_.emplace(std::tuple{r->fd, r->offset, r->length}, item);
    if (!fresh) return it->second;
  }
  // Only a new item is recorded by its address: one found by its range is
  // found by its range again.
  by_object_.emplace(&source, item);
  return std::nullopt;
}

void SameSourceIndex::Reserve(size_t items) { by_object_.reserve(by_object_.size() + items); }

}  // namespace etpack
