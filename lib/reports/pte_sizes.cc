// Where every byte of a .pte goes (etpack/sizes.h): its header, flatbuffer
// and segments as regions; constants, mutable data, delegates (a fat one
// entry by entry) and named data as claims.

#include <algorithm>
#include <utility>

#include "etpack/nfat.h"
#include "etpack/pte_file.h"
#include "etpack/sizes.h"
#include "integrity/table.h"
#include "program_etpack_generated.h"
#include "reports/size_partition.h"

namespace etpack {
namespace {

// The claims and regions of a .pte. Fails (kCorrupt) only on a delegate
// payload that starts like an NFAT container but is not a valid one.
Result<SizeLayout> PteLayout(const PteFile& file) {
  SizeLayout out;
  const ExtendedHeader& h = file.header();
  const PteSegmentMap& layout = file.layout();
  const pte_fb::Program& program = file.program();
  const uint64_t base = h.segment_base_offset;

  SizeRow header;
  header.kind = SizeKind::kHeader;
  header.size = 8 + (h.present ? h.length : 0);
  header.name = h.present ? "ET12 eh00" : "ET12";
  out.claims.push_back(header);
  out.regions.push_back({header.size,
                         layout.program_size - std::min(layout.program_size, header.size),
                         SizeKind::kFlatbuffer, "Program", std::nullopt});
  for (uint32_t i = 0; i < layout.segments.size(); ++i) {
    const PteSegmentMap::Segment& s = layout.segments[i];
    const bool used = s.role != SegmentRole::kUnreferenced;
    out.regions.push_back({base + s.offset, s.size,
                           used ? SizeKind::kPadding : SizeKind::kUnreferenced,
                           used ? std::string() : "segment " + std::to_string(i), i});
  }

  // Constants and initial values: a row per buffer, as many bytes as the
  // tensors reading it read; a buffer none reads up to the next offset.
  const std::vector<PteTensor> tensors = file.Tensors();
  const auto* cs = program.constant_segment();
  const bool constant_segment = cs && cs->offsets() && cs->offsets()->size() > 1;
  const auto* mds = program.mutable_data_segments();
  auto buffers = [&](const std::vector<ByteRange>& ranges, TensorData data, SizeKind kind,
                     const char* what, bool inline_storage, std::optional<uint32_t> segment) {
    std::vector<SizeRow> rows(ranges.size());
    std::vector<bool> read(ranges.size(), false);
    for (const PteTensor& t : tensors) {
      if (t.data != data || t.buffer_index == 0 || t.buffer_index >= ranges.size()) continue;
      SizeRow& r = rows[t.buffer_index];
      const uint64_t n = t.nbytes.value_or(0);
      if (!read[t.buffer_index] || n > r.size) {
        r.size = n;
        r.tensor_layout = t.layout;
      }
      if (!read[t.buffer_index]) r.method = file.methods()[t.method].name;
      if (r.key.empty()) r.key = t.key;
      read[t.buffer_index] = true;
    }
    for (uint32_t k = 1; k < ranges.size(); ++k) {
      SizeRow& r = rows[k];
      r.kind = kind;
      r.offset = ranges[k].offset;
      // Inline storage is exactly the buffer; in a segment, the bytes read.
      if (inline_storage || !read[k]) r.size = ranges[k].size;
      r.name = r.key.empty() ? std::string(what) + "[" + std::to_string(k) + "]" : r.key;
      if (!read[k]) r.name += " (no tensor reads it)";
      r.segment = segment;
      out.claims.push_back(std::move(r));
    }
  };
  if (constant_segment) {
    buffers(file.constant_buffers(), TensorData::kConstant, SizeKind::kConstant, "constant_buffer",
            false, cs->segment_index());
  } else {
    buffers(file.constant_buffers(), TensorData::kConstant, SizeKind::kConstant, "constant_buffer",
            true, std::nullopt);
  }
  if (mds && mds->size() > 0) {
    buffers(file.mutable_buffers(), TensorData::kMutable, SizeKind::kMutable, "mutable_buffer",
            false, mds->Get(0)->segment_index());
  }

  const auto* inline_data = program.backend_delegate_data();
  for (const PteMethod& m : file.methods()) {
    for (size_t i = 0; i < m.delegates.size(); ++i) {
      const PteDelegate& d = m.delegates[i];
      SizeRow r;
      r.kind = SizeKind::kDelegate;
      r.name = m.name + "[" + std::to_string(i) + "]";
      r.method = m.name;
      r.backend = d.backend;
      if (d.in_segment) {
        r.offset = base + layout.segments[d.index].offset;
        r.size = layout.segments[d.index].size;
        r.segment = d.index;
      } else if (const auto* data = inline_data->Get(d.index)->data()) {
        r.offset = static_cast<uint64_t>(data->data() - file.head());
        r.size = data->size();
      }
      // A fat delegate (etpack/nfat.h): a row per entry with its own
      // backend id; the container's table and padding fill the rest.
      const SourcePtr payload = file.DelegateSource(d);
      ETPACK_ASSIGN_OR_RETURN(const bool fat, HasNfatMagic(*payload));
      if (fat) {
        ETPACK_ASSIGN_OR_RETURN(NfatContainer c,
                                NfatContainer::Open(payload, file.name() + ": delegate " + r.name));
        // Entries by position (validated not to overlap); the bytes between
        // them (the table, padding) are the container's own.
        std::vector<size_t> order(c.entries().size());
        for (size_t k = 0; k < order.size(); ++k) order[k] = k;
        std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
          return c.entries()[a].position < c.entries()[b].position;
        });
        uint64_t at = 0;
        auto container = [&](uint64_t from, uint64_t to) {
          if (to <= from) return;
          SizeRow own = r;
          own.name = r.name + " NFAT container";
          own.backend.clear();
          own.offset = r.offset + from;
          own.size = to - from;
          out.claims.push_back(std::move(own));
        };
        for (const size_t k : order) {
          const NfatEntry& e = c.entries()[k];
          if (e.length == 0) continue;
          container(at, e.position);
          SizeRow entry = r;
          entry.name = r.name + " entries[" + std::to_string(k) + "]";
          entry.backend = e.backend_id;
          entry.offset = r.offset + e.position;
          entry.size = e.length;
          out.claims.push_back(std::move(entry));
          at = std::max(at, e.position + e.length);
        }
        container(at, r.size);
        continue;
      }
      out.claims.push_back(std::move(r));
    }
  }
  for (const PteNamedData& n : file.named_data()) {
    SizeRow r;
    r.kind = IsIntegrityKey(n.key) ? SizeKind::kIntegrityTable : SizeKind::kNamedData;
    r.name = n.key;
    r.key = n.key;
    r.offset = base + layout.segments[n.segment_index].offset;
    r.size = layout.segments[n.segment_index].size;
    r.segment = n.segment_index;
    out.claims.push_back(std::move(r));
  }
  return out;
}

}  // namespace

Result<SizeReport> SizesOf(const PteFile& file) {
  ETPACK_ASSIGN_OR_RETURN(SizeLayout layout, PteLayout(file));
  return FinishSizes(file, ArtifactKind::kPte, std::move(layout));
}

}  // namespace etpack
