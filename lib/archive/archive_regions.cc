// Where an artifact's frames should break: the regions its readers report,
// and the frame plan cut from them.

#include <algorithm>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "etpack/archive.h"
#include "etpack/artifact_kind.h"

namespace etpack {
namespace {

// Pieces smaller than this share a frame with a neighbour: a frame per
// small segment would cost ratio and seek-table entries for little gain.
constexpr uint64_t kMinPiece = uint64_t{1} << 20;

// Head, segments and named tensors of a .pte whose byte 0 is at `base` in
// the file (a program inside a .bpte starts later).
void PteRegions(const PteFile& pte, uint64_t base, std::vector<ArchiveRegion>* out) {
  const PteSegmentMap& layout = pte.layout();
  const size_t first = out->size();
  uint64_t head_end = pte.size();
  for (size_t i = 0; i < layout.segments.size(); ++i) {
    const PteSegmentMap::Segment& s = layout.segments[i];
    const uint64_t offset = layout.segment_base_offset + s.offset;
    head_end = std::min(head_end, offset);
    out->push_back({RegionKind::kSegment, std::to_string(i), base + offset, s.size});
  }
  for (const PteNamedData& d : pte.named_data()) {
    const PteSegmentMap::Segment& s = layout.segments[d.segment_index];
    out->push_back(
        {RegionKind::kTensor, d.key, base + layout.segment_base_offset + s.offset, s.size});
  }
  out->insert(out->begin() + static_cast<std::ptrdiff_t>(first),
              ArchiveRegion{RegionKind::kHead, "", base, head_end});
}

void PtdRegions(const PtdFile& ptd, std::vector<ArchiveRegion>* out) {
  const PtdSegmentMap& layout = ptd.layout();
  const uint64_t base = ptd.header().segment_base_offset;
  uint64_t head_end = ptd.size();
  for (size_t i = 0; i < layout.segments.size(); ++i) {
    const PtdSegmentMap::Segment& s = layout.segments[i];
    head_end = std::min(head_end, base + s.offset);
    out->push_back({RegionKind::kSegment, std::to_string(i), base + s.offset, s.size});
  }
  for (const PtdFile::Entry& e : ptd.entries()) {
    const PtdSegmentMap::Segment& s = layout.segments[e.segment_index];
    out->push_back({RegionKind::kTensor, e.key, base + s.offset, s.size});
  }
  out->insert(out->begin(), ArchiveRegion{RegionKind::kHead, "", 0, head_end});
}

}  // namespace

Result<std::vector<ArchiveRegion>> ArtifactRegions(const std::string& name, const SourcePtr& file) {
  std::vector<ArchiveRegion> regions;
  Result<std::optional<ArtifactKind>> kind = ArtifactKindOrNone(name, *file);
  if (!kind.ok()) return kind.status().WithContext(name);
  if (!*kind) return regions;
  ETPACK_ASSIGN_OR_RETURN(const OpenedArtifact opened, OpenArtifact(**kind, name, file));
  switch (opened.kind) {
    case ArtifactKind::kPte: PteRegions(*opened.pte, 0, &regions); break;
    case ArtifactKind::kPtd: PtdRegions(*opened.ptd, &regions); break;
    case ArtifactKind::kBpte: {
      const BpteFile& bpte = *opened.bpte;
      regions.push_back({RegionKind::kHead, "", 0, bpte.program_offset()});
      PteRegions(bpte.program(), bpte.program_offset(), &regions);
      // The program's own head is a piece of the file, not the file's head.
      regions[1].kind = RegionKind::kSegment;
      regions[1].name = "program";
      regions[1].size = bpte.program_size();
      break;
    }
  }
  return regions;
}

std::vector<uint64_t> PlanFrames(uint64_t size, const std::vector<ArchiveRegion>& regions,
                                 uint64_t frame_bytes) {
  std::vector<uint64_t> cuts;
  for (const ArchiveRegion& r : regions) {
    cuts.push_back(r.offset);
    cuts.push_back(r.offset + r.size);
  }
  cuts.push_back(size);
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());

  // The open frame is [start, end). Each piece between cuts joins it when
  // one of the two is small and both fit one frame. Otherwise the open frame
  // is closed (or, when small, taken along) and the rest up to the cut is
  // split into near-equal frames, the last of which stays open.
  std::vector<uint64_t> ends;
  uint64_t start = 0;
  uint64_t end = 0;
  for (const uint64_t cut : cuts) {
    if (cut == 0 || cut > size) continue;
    const bool small_open = end - start < kMinPiece;
    if (end > start && (small_open || cut - end < kMinPiece) && cut - start <= frame_bytes) {
      end = cut;
      continue;
    }
    if (end > start && !small_open) {
      ends.push_back(end);
      start = end;
    }
    const uint64_t piece = cut - start;
    const uint64_t parts = (piece + frame_bytes - 1) / frame_bytes;
    const uint64_t q = piece / parts;
    const uint64_t r = piece % parts;
    for (uint64_t k = 1; k < parts; ++k) ends.push_back(start + q * k + r * k / parts);
    if (parts > 1) start = ends.back();
    end = cut;
  }
  if (end > start) ends.push_back(end);
  return ends;
}

}  // namespace etpack
