// reports/size_partition.h (internal to reports) — how a SizeReport is
// made (etpack/sizes.h): each format's reader lists the items it knows
// (claims) and the areas whose unclaimed bytes have a known meaning
// (regions: the flatbuffer, a segment); FinishSizes() turns them into rows
// that cover the file exactly once, and checks that they do.

#ifndef ETPACK_REPORTS_SIZE_PARTITION_H_
#define ETPACK_REPORTS_SIZE_PARTITION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "etpack/artifact_file.h"
#include "etpack/sizes.h"
#include "etpack/status.h"

namespace etpack {

// Unclaimed bytes in [offset, offset + size) are of `kind` (padding in a
// segment that holds items, the flatbuffer's own bytes, a segment nothing
// refers to).
struct SizeRegion {
  uint64_t offset = 0;
  uint64_t size = 0;
  SizeKind kind = SizeKind::kPadding;
  std::string name;
  std::optional<uint32_t> segment;
};

// What one file's format says of its bytes.
struct SizeLayout {
  std::vector<SizeRow> claims;
  std::vector<SizeRegion> regions;
};

// The report of `file` (of `kind`) from its claims and regions: rows by
// offset covering the file once, checked (CheckPartition).
Result<SizeReport> FinishSizes(const ArtifactFile& file, ArtifactKind kind, SizeLayout layout);

}  // namespace etpack

#endif  // ETPACK_REPORTS_SIZE_PARTITION_H_
