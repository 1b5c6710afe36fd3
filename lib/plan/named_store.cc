#include "plan/named_store.h"

#include <algorithm>
#include <utility>

#include "core/json_document.h"
#include "core/utf8.h"
#include "integrity/table.h"

namespace etpack {

Status CheckKeyText(std::string_view key, const std::string& what) {
  if (key.empty()) return InvalidArgument(what + ": empty key");
  if (key.find('\0') != std::string_view::npos) {
    return InvalidArgument(what + ": key " + QuotedText(key) +
                           " contains a NUL byte (the runtime would look it up as " +
                           QuotedText(key.substr(0, key.find('\0'))) + ")");
  }
  if (!IsValidUtf8(key))
    return InvalidArgument(what + ": key " + QuotedText(key) + " is not valid UTF-8");
  return Status::OK();
}

Status CheckDataKey(std::string_view key, const std::string& what) {
  ETPACK_RETURN_IF_ERROR(CheckKeyText(key, what));
  return CheckNotIntegrityKey(key, what + " " + QuotedText(key));
}

Result<NamedDataStore::Added> NamedDataStore::Add(std::string_view key, const SourcePtr& source,
                                                  uint64_t alignment, size_t tag) {
  if (source == nullptr) return InvalidArgument(what_(tag) + ": the data source is null");
  if (alignment == 0 || alignment > kMaxAlignment) {  // named only on failure
    return CheckAlignment(alignment, what_(tag) + ": alignment");
  }
  ETPACK_ASSIGN_OR_RETURN(const size_t content, dedup_.Add(source));
  if (content == buffers_.size()) {
    buffers_.push_back({source, alignment});
  } else if (rule_ == SharedAlignment::kStrictest) {
    uint64_t& shared = buffers_[content].alignment;
    ETPACK_ASSIGN_OR_RETURN(shared, Lcm(shared, alignment, what_(tag) + ": alignment"));
  }
  if (auto it = key_index_.find(key); it != key_index_.end()) {
    const Key& first = keys_[it->second];
    if (first.buffer != content) {
      return InvalidArgument(what_(tag) + ": key \"" + std::string(key) + "\" (" +
                             std::to_string(source->size()) + " bytes) is already " + What(first) +
                             " with different bytes (" +
                             std::to_string(buffers_[first.buffer].source->size()) +
                             " bytes); one key can hold only one content");
    }
    return Added{it->second, false};
  }
  key_index_.emplace(key, keys_.size());
  keys_.push_back({key, content, tag});
  return Added{keys_.size() - 1, true};
}

void NamedDataStore::Reserve(size_t entries) {
  dedup_.Reserve(entries);
  keys_.reserve(keys_.size() + entries);
  key_index_.reserve(key_index_.size() + entries);
}

std::vector<Segment> NamedDataStore::Segments() const {
  std::vector<Segment> out;
  out.reserve(buffers_.size());
  for (const Buffer& b : buffers_) out.push_back(SourceSegment(b.source, b.alignment));
  return out;
}

}  // namespace etpack
