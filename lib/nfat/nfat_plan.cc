// PlanNfat: the container is a head (preamble and entry table) followed by
// one segment per entry, laid out and placed by the common assembler; only
// the table's offsets are NFAT's own arithmetic.

#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "etpack/nfat.h"
#include "nfat/nfat_format.h"
#include "plan/assembler.h"
#include "plan/header_insert.h"
#include "plan/segments.h"
#include "writer/input_files.h"

namespace etpack {

NfatEntryInput NfatBytes(std::string backend_id, SourcePtr bytes) {
  NfatEntryInput entry;
  entry.backend_id = std::move(backend_id);
  entry.payload = WholeSourcePlan(std::move(bytes));
  return entry;
}

Result<NfatPlan> PlanNfat(const std::vector<NfatEntryInput>& entries, const NfatOptions& options) {
  const uint64_t align = options.payload_alignment;
  ETPACK_RETURN_IF_ERROR(CheckPowerOfTwo(align, "NFAT payload_alignment"));
  if (entries.empty()) {
    return InvalidArgument(
        "NFAT container: no entries (a delegate without specializations is its bare "
        "program, not a container)");
  }
  if (entries.size() > UINT32_MAX) {
    return OutOfRange("NFAT container: " + std::to_string(entries.size()) +
                      " entries do not fit the u32 count");
  }
  const uint64_t count = entries.size();
  const uint64_t table_end = nfat::kPreambleSize + nfat::kEntrySize * count;  // < 2^38

  std::vector<Segment> segments;
  segments.reserve(count);
  std::unordered_map<std::string, size_t> index_of_id;
  for (size_t i = 0; i < count; ++i) {
    const NfatEntryInput& e = entries[i];
    auto what = [&] {
      return "NFAT entries[" + std::to_string(i) + "] " + nfat::ShownId(e.backend_id);
    };
    const std::string problem = nfat::BackendIdProblem(e.backend_id);
    if (!problem.empty()) return InvalidArgument(what() + ": backend_id " + problem);
    // The runtime picks an entry by id: a second one could never be chosen.
    auto [first, added] = index_of_id.emplace(e.backend_id, i);
    if (!added) {
      return InvalidArgument(what() + ": backend_id is already entries[" +
                             std::to_string(first->second) + "]'s");
    }
    // Empty payloads take no padding: they would only push later ones on.
    Result<Segment> s = NestedSegment(e.payload, e.payload.file_size > 0 ? align : 1);
    if (!s.ok()) return s.status().WithContext(what() + " payload");
    segments.push_back(std::move(s).value());
  }
  ETPACK_ASSIGN_OR_RETURN(SegmentOffsets layout, LayoutSegments(segments, 1, "NFAT entry"));
  Result<Assembly> assembled =
      Assemble(std::vector<uint8_t>(table_end, 0), nullptr, align, segments, layout);
  if (!assembled.ok()) return assembled.status().WithContext("NFAT container");
  Assembly& assembly = assembled.value();

  NfatPlan out;
  std::vector<uint8_t>& head = assembly.artifact.head;
  std::memcpy(head.data(), nfat::kMagic, sizeof(nfat::kMagic));
  StoreLE32(head.data() + 4, kNfatVersion);
  StoreLE32(head.data() + 8, static_cast<uint32_t>(count));
  out.entries.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    // Without any payload bytes there is no segment base: every entry sits
    // at the end of the table, where the reference packer puts it.
    const uint64_t position =
        layout.data_size == 0 ? table_end : assembly.head.segment_base_offset + layout.offsets[i];
    NfatEntry e;
    e.backend_id = entries[i].backend_id;
    e.offset = position - table_end;
    e.length = entries[i].payload.file_size;
    e.position = position;
    e.alignment = AlignmentOf(position);
    uint8_t* row = head.data() + nfat::kPreambleSize + nfat::kEntrySize * i;
    std::memcpy(row, e.backend_id.data(), e.backend_id.size());  // the rest stays NUL
    StoreLE64(row + nfat::kIdSize, e.offset);
    StoreLE64(row + nfat::kIdSize + 8, e.length);
    out.entries.push_back(std::move(e));
  }
  InputFiles inputs;
  for (const NfatEntryInput& e : entries) inputs.Add(e.payload);
  out.artifact = FinishedArtifact(std::move(assembly.artifact), inputs.Take(), false);
  return out;
}

}  // namespace etpack
