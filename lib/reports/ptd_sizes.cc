// Where every byte of a .ptd goes (etpack/sizes.h): its header and
// flatbuffer, and each entry's segment.

#include <algorithm>
#include <utility>

#include "etpack/ptd_file.h"
#include "etpack/sizes.h"
#include "integrity/table.h"
#include "reports/size_partition.h"

namespace etpack {
namespace {

SizeLayout PtdLayout(const PtdFile& file) {
  SizeLayout out;
  const FlatTensorHeader& h = file.header();
  const PtdSegmentMap& l = file.layout();
  SizeRow header;
  header.kind = SizeKind::kHeader;
  header.size = 8 + h.length;
  header.name = "FT01 FH01";
  out.claims.push_back(header);
  const uint64_t fb_end = l.flatbuffer_offset + l.flatbuffer_size;
  out.regions.push_back({header.size, fb_end - std::min(fb_end, header.size), SizeKind::kFlatbuffer,
                         "FlatTensor", std::nullopt});
  std::vector<bool> used(l.segments.size(), false);
  for (const PtdFile::Entry& e : file.entries()) {
    const PtdSegmentMap::Segment& s = l.segments[e.segment_index];
    used[e.segment_index] = true;
    SizeRow r;
    r.kind = IsIntegrityKey(e.key) ? SizeKind::kIntegrityTable : SizeKind::kEntry;
    r.name = e.key;
    r.key = e.key;
    r.offset = l.segment_base_offset + s.offset;
    r.size = s.size;
    r.segment = e.segment_index;
    r.tensor_layout = e.layout;
    out.claims.push_back(std::move(r));
  }
  for (uint32_t i = 0; i < l.segments.size(); ++i) {
    out.regions.push_back({l.segment_base_offset + l.segments[i].offset, l.segments[i].size,
                           used[i] ? SizeKind::kPadding : SizeKind::kUnreferenced,
                           used[i] ? std::string() : "segment " + std::to_string(i), i});
  }
  return out;
}

}  // namespace

Result<SizeReport> SizesOf(const PtdFile& file) {
  return FinishSizes(file, ArtifactKind::kPtd, PtdLayout(file));
}

}  // namespace etpack
