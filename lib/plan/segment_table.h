// segment_table.h (internal) — validation of a DataSegment table, shared by
// the .pte and .ptd readers (each schema has its own DataSegment type with
// the same offset/size fields).

#ifndef ETPACK_SEGMENT_TABLE_H_
#define ETPACK_SEGMENT_TABLE_H_

#include <cstdint>
#include <string>

#include "etpack/status.h"

namespace etpack {

// Every segment lies inside [0, data_size), and segments are sorted and do
// not overlap (zero-length ones may share an offset). A non-empty segment
// needs segment data at all (base != 0). Errors name segments[i].
template <typename Segments>
Status CheckSegmentTable(const Segments* segments, uint64_t base, uint64_t data_size) {
  if (segments == nullptr) return Status::OK();
  uint64_t prev_end = 0;
  for (uint32_t i = 0; i < segments->size(); ++i) {
    const auto* s = segments->Get(i);
    const std::string what = "segments[" + std::to_string(i) + "]";
    if (s->size() > 0 && base == 0) {
      return Corrupt(what + ".size = " + std::to_string(s->size()) +
                     " but the file has no segment data (no header, or segment_base_offset 0)");
    }
    if (s->offset() > data_size || s->size() > data_size - s->offset()) {
      return Corrupt(what + " = [" + std::to_string(s->offset()) + ", +" +
                     std::to_string(s->size()) + ") runs past the segment data (" +
                     std::to_string(data_size) + " bytes)");
    }
    if (s->offset() < prev_end) {
      return Corrupt(what + ".offset = " + std::to_string(s->offset()) +
                     " overlaps the previous segment, which ends at " + std::to_string(prev_end));
    }
    prev_end = s->offset() + s->size();
  }
  return Status::OK();
}

}  // namespace etpack

#endif  // ETPACK_SEGMENT_TABLE_H_
