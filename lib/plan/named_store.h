// named_store.h (internal) — the named-data store of .pte and .ptd files:
// keys mapped to buffers, every distinct content stored once.
//
// The rules (docs/formats.md §2.7, §5.2), as the reference NamedDataStore keeps
// them:
//   - the same key added again with the same bytes is the same entry;
//   - the same key with different bytes is an error naming both entries;
//   - different keys with the same bytes share one buffer (one segment);
//   - buffers and keys keep the order of their first appearance.
// Contents are compared by ContentDedup (content_dedup.h): only buffers of
// equal size are ever read.
//
// Alignment of a shared buffer: the reference keeps the alignment of the
// first key that brought the content and silently ignores a stricter one
// asked for by a later key (kFirstKey, the default, so output matches it
// byte for byte). kStrictest gives the buffer the least common multiple of
// the alignments its keys asked for, so every key gets what it asked.

#ifndef ETPACK_PLAN_NAMED_STORE_H_
#define ETPACK_PLAN_NAMED_STORE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "etpack/plan.h"
#include "etpack/source.h"
#include "etpack/status.h"
#include "plan/content_dedup.h"
#include "plan/segments.h"

namespace etpack {

enum class SharedAlignment { kFirstKey, kStrictest };

class NamedDataStore {
 public:
  // How the entry with `tag` (the caller's number for it, given to Add) is
  // named in errors, e.g. "named_data[3]": called only to build an error,
  // so that many entries cost no names.
  using Namer = std::function<std::string(size_t tag)>;
  explicit NamedDataStore(SharedAlignment rule, Namer what) : rule_(rule), what_(std::move(what)) {}

  struct Key {
    std::string_view key;  // the caller's string (see Add)
    size_t buffer = 0;     // into buffers()
    size_t tag = 0;        // of the entry that added it
  };
  struct Buffer {
    SourcePtr source;  // the first source seen with these bytes
    uint64_t alignment = 1;
  };

  // Adds `key` -> `source`. Returns the index into keys() and whether the
  // key is new (false: the same key with the same bytes was there). Fails
  // with kInvalidArgument naming the entry (what(tag)) for a null source or
  // an alignment of 0 or above kMaxAlignment, and naming both entries when
  // the key already holds different bytes. REQUIRES: the characters of
  // `key` stay where they are while the store lives (keys are not copied:
  // a planner of many entries would hold each key three times).
  struct Added {
    size_t key = 0;
    bool fresh = false;
  };
  Result<Added> Add(std::string_view key, const SourcePtr& source, uint64_t alignment, size_t tag);

  // Room for `entries` more entries (see ContentDedup::Reserve).
  void Reserve(size_t entries);

  const std::vector<Key>& keys() const { return keys_; }
  const std::vector<Buffer>& buffers() const { return buffers_; }
  // How key `k`'s entry is named in errors.
  std::string What(const Key& k) const { return what_(k.tag); }
  // One segment per buffer, in buffers() order, at the buffer's alignment.
  std::vector<Segment> Segments() const;

 private:
  SharedAlignment rule_;
  Namer what_;
  ContentDedup dedup_;
  std::vector<Key> keys_;
  std::vector<Buffer> buffers_;  // index = ContentDedup content id
  std::unordered_map<std::string_view, size_t> key_index_;
};

}  // namespace etpack

#endif  // ETPACK_PLAN_NAMED_STORE_H_
