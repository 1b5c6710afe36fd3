// content_groups.h (internal) — which of a whole list of items hold the
// same bytes, reading each byte at most once.
//
// What ContentDedup (content_dedup.h) answers one item at a time, for a
// list known up front (SharedAcrossFiles: every data item of a family of
// files), where ContentDedup would read an item that matches k others
// once per match. The cost model:
//   - the same Source object, or the same range of the same file, is the
//     same item without reading anything (same_source.h);
//   - an item whose size no other item has is never read; items of one
//     size are sampled (FeedSample: 12 KiB each), and an item whose sample
//     no other item of its size has is not read further;
//   - the items of one size and sample that lie on exactly the same
//     physical blocks (InputFile::Extents: reflink copies on XFS or btrfs)
//     are the same bytes without reading them;
//   - the rest of each such group is read once, all its members in
//     lockstep, chunk by chunk, each chunk compared byte for byte with the
//     chunk of its class's first member; a member that differs starts a
//     class of its own (members differing alike join one class, found by a
//     chunk hash and confirmed byte for byte). A class of one is not read
//     further. Memory: three chunks, whatever the number of items.
// No digest decides alone: every merge of two items that are not the same
// range or the same blocks is a byte comparison of all their bytes.

#ifndef ETPACK_PLAN_CONTENT_GROUPS_H_
#define ETPACK_PLAN_CONTENT_GROUPS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "etpack/source.h"
#include "etpack/status.h"

namespace etpack {

struct ContentGroups {
  // Per item, the id of its content: equal exactly when the bytes are;
  // dense, in order of first appearance (as ContentDedup::Add numbers them).
  std::vector<size_t> content_of;
  // Bytes read to compare items (samples not counted), and bytes of items
  // found equal to another by their physical blocks, not read.
  uint64_t bytes_compared = 0;
  uint64_t bytes_by_extents = 0;
};

// The contents of `sources`. A read error is returned as it comes.
// REQUIRES: no source is null.
Result<ContentGroups> GroupByContent(const std::vector<SourcePtr>& sources);

}  // namespace etpack

#endif  // ETPACK_PLAN_CONTENT_GROUPS_H_
