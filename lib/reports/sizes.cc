// Where every byte of a file goes (etpack/sizes.h): each format lists the
// items it knows (claims) and the areas whose unclaimed bytes have a known
// meaning (regions: the flatbuffer, a segment); Partition() turns them into
// rows that cover the file exactly once.

#include "etpack/sizes.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <utility>

#include "bpte/bpte_header.h"
#include "bpte/bpte_values.h"
#include "etpack/artifact_kind.h"
#include "etpack/external_data.h"
#include "etpack/inspect.h"
#include "etpack/nfat.h"
#include "integrity/table.h"
#include "plan/content_groups.h"
#include "program_etpack_generated.h"

namespace etpack {
namespace {

using json::Value;

// Unclaimed bytes in [offset, offset + size) are of `kind` (padding in a
// segment that holds items, the flatbuffer's own bytes, a segment nothing
// refers to).
struct Region {
  uint64_t offset = 0;
  uint64_t size = 0;
  SizeKind kind = SizeKind::kPadding;
  std::string name;
  std::optional<uint32_t> segment;
};

struct Layout {
  std::vector<SizeRow> claims;
  std::vector<Region> regions;
};

uint64_t End(const SizeRow& r) { return r.offset + r.size; }
uint64_t End(const Region& r) { return r.offset + r.size; }

// The rows of a file of `file_size` bytes. Claims are sorted by offset (the
// larger first at one offset); a claim inside bytes already covered joins
// the row covering its start (shared_with), one reaching past them gets a
// row for the bytes past them. Gaps take the kind of the region they are
// in; outside every region they are padding, or unreferenced after the
// last claim and region.
std::vector<SizeRow> Partition(uint64_t file_size, Layout layout) {
  std::vector<SizeRow>& claims = layout.claims;
  claims.erase(
      std::remove_if(claims.begin(), claims.end(), [](const SizeRow& c) { return c.size == 0; }),
      claims.end());
  // Sorted through indices: a stable sort of the rows themselves would
  // hold a second copy of them (a .ptd of 10^5 entries has 10^5 claims).
  std::vector<uint32_t> order(claims.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const SizeRow &x = claims[a], &y = claims[b];
    return std::tie(x.offset, y.size, a) < std::tie(y.offset, x.size, b);
  });
  std::vector<Region>& regions = layout.regions;
  std::stable_sort(regions.begin(), regions.end(),
                   [](const Region& a, const Region& b) { return a.offset < b.offset; });
  uint64_t last = 0;  // the end of everything the file's structure describes
  for (const SizeRow& c : claims) last = std::max(last, End(c));
  for (const Region& r : regions) last = std::max(last, End(r));

  std::vector<SizeRow> rows;
  // Most items are followed by padding: one allocation for the usual case.
  rows.reserve(2 * claims.size() + 2);
  size_t next_region = 0;
  auto plain = [&](uint64_t from, uint64_t to, SizeKind kind) {
    if (to <= from) return;
    SizeRow row;
    row.offset = from;
    row.size = to - from;
    row.kind = kind;
    rows.push_back(std::move(row));
  };
  // Unclaimed bytes [from, to): region by region, padding between them.
  auto gap = [&](uint64_t from, uint64_t to) {
    while (next_region < regions.size() && End(regions[next_region]) <= from) ++next_region;
    for (size_t i = next_region; i < regions.size() && regions[i].offset < to && from < to; ++i) {
      const Region& r = regions[i];
      if (End(r) <= from) continue;
      plain(from, std::min(r.offset, to), SizeKind::kPadding);
      const uint64_t start = std::max(from, r.offset), stop = std::min(to, End(r));
      if (stop > start) {
        plain(start, stop, r.kind);
        rows.back().name = r.name;
        rows.back().segment = r.segment;
      }
      from = std::max(from, stop);
    }
    if (from < to) {
      plain(from, std::min(to, std::max(from, last)), SizeKind::kPadding);
      plain(std::max(from, last), to, SizeKind::kUnreferenced);
    }
  };
  uint64_t end = 0;  // bytes [0, end) have rows
  for (const uint32_t i : order) {
    SizeRow& c = claims[i];
    if (c.offset >= end) {
      gap(end, c.offset);
      end = End(c);
      rows.push_back(std::move(c));
      continue;
    }
    // Inside bytes that have rows: the row holding its first byte.
    auto holder = std::upper_bound(rows.begin(), rows.end(), c.offset,
                                   [](uint64_t at, const SizeRow& r) { return at < r.offset; });
    (holder - 1)->shared_with.push_back(c.name);
    if (End(c) > end) {
      c.size = End(c) - end;
      c.offset = end;
      c.shared_with.clear();
      end = End(c);
      rows.push_back(std::move(c));
    }
  }
  gap(end, file_size);
  return rows;
}

// The claims and regions of a .pte. Fails (kCorrupt) only on a delegate
// payload that starts like an NFAT container but is not a valid one.
Result<Layout> PteLayout(const PteFile& file) {
  Layout out;
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

Layout PtdLayout(const PtdFile& file) {
  Layout out;
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

// The report of `file` from its claims and regions, checked.
Result<SizeReport> Finish(const ArtifactFile& file, ArtifactKind kind, Layout layout) {
  SizeReport report;
  report.file = file.name();
  report.kind = kind;
  report.file_size = file.size();
  report.rows = Partition(file.size(), std::move(layout));
  ETPACK_RETURN_IF_ERROR(CheckPartition(report));
  return report;
}

bool IsData(SizeKind k) {
  return k == SizeKind::kConstant || k == SizeKind::kNamedData || k == SizeKind::kEntry ||
         k == SizeKind::kDelegate || k == SizeKind::kMutable;
}

std::string LayoutText(const std::optional<TensorLayout>& l) {
  return l ? DescribeLayout(*l) : std::string();
}

Value Indices(const std::vector<uint32_t>& v) {
  std::vector<Value> items;
  for (uint32_t i : v) items.push_back(Value::UInt(i));
  return Value::Array(std::move(items));
}

Value GroupsJson(const std::vector<SizeGroup>& groups) {
  std::vector<Value> items;
  for (const SizeGroup& g : groups) {
    items.push_back(Value::Object({{"kind", Value::String(SizeKindName(g.kind))},
                                   {"rows", Value::UInt(g.rows)},
                                   {"size", Value::UInt(g.size)}}));
  }
  return Value::Array(std::move(items));
}

}  // namespace

const char* SizeKindName(SizeKind kind) {
  switch (kind) {
    case SizeKind::kHeader: return "header";
    case SizeKind::kFlatbuffer: return "flatbuffer";
    case SizeKind::kConstant: return "constant";
    case SizeKind::kMutable: return "mutable";
    case SizeKind::kDelegate: return "delegate";
    case SizeKind::kNamedData: return "named_data";
    case SizeKind::kEntry: return "entry";
    case SizeKind::kIntegrityTable: return "integrity_table";
    case SizeKind::kTestData: return "test_data";
    case SizeKind::kPadding: return "padding";
    case SizeKind::kUnreferenced: return "unreferenced";
  }
  return "unknown";
}

Status CheckPartition(const SizeReport& report) {
  uint64_t at = 0;
  for (size_t i = 0; i < report.rows.size(); ++i) {
    const SizeRow& r = report.rows[i];
    if (r.offset != at || r.size == 0 ||
        r.size > report.file_size - std::min(at, report.file_size)) {
      return InvalidArgument("internal error: " + report.file + ": sizes row " + std::to_string(i) +
                             " (" + SizeKindName(r.kind) + " '" + r.name + "' [" +
                             std::to_string(r.offset) + ", +" + std::to_string(r.size) +
                             ")) does not start where the rows before it end (" +
                             std::to_string(at) + ") or runs past the end of the " +
                             std::to_string(report.file_size) + "-byte file");
    }
    at += r.size;
  }
  if (at != report.file_size) {
    return InvalidArgument("internal error: " + report.file + ": sizes rows sum to " +
                           std::to_string(at) + " bytes, not the file's " +
                           std::to_string(report.file_size));
  }
  return Status::OK();
}

Result<SizeReport> SizesOf(const PteFile& file) {
  ETPACK_ASSIGN_OR_RETURN(Layout layout, PteLayout(file));
  return Finish(file, ArtifactKind::kPte, std::move(layout));
}

Result<SizeReport> SizesOf(const PtdFile& file) {
  return Finish(file, ArtifactKind::kPtd, PtdLayout(file));
}

Result<SizeReport> SizesOf(const BpteFile& file) {
  Layout out;
  const bpte_fb::BundledProgram& root = file.bundled();
  // Validated on open, so the header parses as it did then.
  ETPACK_ASSIGN_OR_RETURN(const bpte::Header h, bpte::ParseHeader(file.head(), file.head_size()));
  const uint64_t fb_end = h.present ? h.flatbuffer_size : file.size();
  SizeRow header;
  header.kind = SizeKind::kHeader;
  header.size = 8 + (h.present ? h.length : 0);
  header.name = h.present ? "BP08 bh00" : "BP08";
  out.claims.push_back(header);
  // The embedded program: its own rows, moved to where it lies. Outer
  // regions stop at its bounds, so it is only ever its own rows.
  const uint64_t po = file.program_offset(), pe = po + file.program_size();
  auto region = [&](uint64_t from, uint64_t to, SizeKind kind, const std::string& name,
                    std::optional<uint32_t> segment) {
    if (std::min(to, po) > from)
      out.regions.push_back({from, std::min(to, po) - from, kind, name, segment});
    if (to > std::max(from, pe)) {
      out.regions.push_back({std::max(from, pe), to - std::max(from, pe), kind, name, segment});
    }
  };
  region(header.size, fb_end, SizeKind::kFlatbuffer, "BundledProgram", std::nullopt);
  ETPACK_ASSIGN_OR_RETURN(SizeReport program, SizesOf(file.program()));
  for (SizeRow& r : program.rows) {
    r.offset += po;
    r.in_program = true;
    out.claims.push_back(std::move(r));
  }
  // Test values, and which segments they use.
  const uint32_t nseg = root.segments() ? root.segments()->size() : 0;
  std::vector<bool> used(nseg, false);
  if (root.program_segment() >= 0) used[static_cast<uint32_t>(root.program_segment())] = true;
  ETPACK_RETURN_IF_ERROR(
      bpte::ForEachValue(root, [&](const bpte_fb::Value& v, const std::string& path) -> Status {
        const bpte_fb::Tensor* t = v.val_as_Tensor();
        if (t == nullptr) return Status::OK();
        SizeRow r;
        r.kind = SizeKind::kTestData;
        r.name = path;
        r.tensor_layout = bpte::LayoutOf(*t);
        if (t->data_segment() < 0) {
          if (t->data() == nullptr) return Status::OK();
          r.offset = static_cast<uint64_t>(t->data()->data() - file.head());
          r.size = t->data()->size();
        } else {
          const uint32_t ds = static_cast<uint32_t>(t->data_segment());
          used[ds] = true;
          r.offset = h.segment_base_offset + root.segments()->Get(ds)->offset();
          r.size = root.segments()->Get(ds)->size();
          r.segment = ds;
        }
        out.claims.push_back(std::move(r));
        return Status::OK();
      }));
  if (h.present) {
    for (uint32_t i = 0; i < nseg; ++i) {
      const auto* seg = root.segments()->Get(i);
      region(h.segment_base_offset + seg->offset(),
             h.segment_base_offset + seg->offset() + seg->size(),
             used[i] ? SizeKind::kPadding : SizeKind::kUnreferenced,
             used[i] ? std::string() : "segment " + std::to_string(i), i);
    }
  }
  return Finish(file, ArtifactKind::kBpte, std::move(out));
}

namespace {

template <typename File>
Result<SizedFile> Sized(std::unique_ptr<File> file) {
  ETPACK_ASSIGN_OR_RETURN(SizeReport report, SizesOf(*file));
  return SizedFile{std::move(file), std::move(report)};
}

}  // namespace

Result<SizedFile> OpenSized(const std::string& path, const Env& env) {
  ETPACK_ASSIGN_OR_RETURN(OpenedArtifact file, OpenArtifact(path, env));
  switch (file.kind) {
    case ArtifactKind::kPte: return Sized(std::move(file.pte));
    case ArtifactKind::kPtd: return Sized(std::move(file.ptd));
    case ArtifactKind::kBpte: return Sized(std::move(file.bpte));
  }
  return InvalidArgument(path + ": unknown artifact kind");
}

Result<SizeReport> SizesOf(const std::string& path, const Env& env) {
  ETPACK_ASSIGN_OR_RETURN(SizedFile sized, OpenSized(path, env));
  return std::move(sized.report);
}

Result<FileSizes> SizesOfFiles(const std::vector<std::string>& paths, const SharedOptions& options,
                               const Env& env) {
  std::vector<std::unique_ptr<ArtifactFile>> open;
  std::vector<const ArtifactFile*> files;
  FileSizes out;
  for (const std::string& path : paths) {
    ETPACK_ASSIGN_OR_RETURN(SizedFile sized, OpenSized(path, env));
    files.push_back(sized.file.get());
    open.push_back(std::move(sized.file));
    out.reports.push_back(std::move(sized.report));
  }
  if (paths.size() > 1) {
    ETPACK_ASSIGN_OR_RETURN(out.shared, SharedAcrossFiles(files, out.reports, options));
  }
  return out;
}

uint64_t SmallRowBytes(const SizeReport& report) {
  return report.rows.size() > kFewRows ? report.file_size / 1000 : 0;
}

std::vector<SizeGroup> SmallRows(const SizeReport& report, uint64_t below) {
  std::vector<SizeGroup> by_kind(kSizeKinds);
  for (const SizeRow& r : report.rows) {
    if (r.size >= below) continue;
    SizeGroup& g = by_kind[static_cast<int>(r.kind)];
    g.kind = r.kind;
    ++g.rows;
    g.size += r.size;
  }
  by_kind.erase(std::remove_if(by_kind.begin(), by_kind.end(),
                               [](const SizeGroup& g) { return g.rows == 0; }),
                by_kind.end());
  return by_kind;
}

std::vector<SizeGroup> KindTotals(const SizeReport& report) {
  return SmallRows(report, UINT64_MAX);
}

Result<SharedReport> SharedAcrossFiles(const std::vector<const ArtifactFile*>& files,
                                       const std::vector<SizeReport>& reports,
                                       const SharedOptions& options) {
  if (files.size() != reports.size()) {
    return InvalidArgument("SharedAcrossFiles: " + std::to_string(files.size()) + " files but " +
                           std::to_string(reports.size()) + " reports");
  }
  SharedReport out;
  // Every data row, and its bytes: all compared at once (content_groups.h),
  // so that an item held by k files is read once, not once per match.
  std::vector<std::pair<uint32_t, size_t>> data_rows;
  std::vector<SourcePtr> sources;
  for (uint32_t f = 0; f < files.size(); ++f) {
    out.files.push_back(reports[f].file);
    const std::vector<SizeRow>& rows = reports[f].rows;
    for (size_t i = 0; i < rows.size(); ++i) {
      // A program's record of its named-data order is its own, like its
      // integrity table (etpack/external_data.h).
      if (!IsData(rows[i].kind) || rows[i].key == kNamedDataOrderKey) continue;
      data_rows.push_back({f, i});
      sources.push_back(files[f]->RangeSource(rows[i].offset, rows[i].size));
    }
  }
  ETPACK_ASSIGN_OR_RETURN(const ContentGroups contents, GroupByContent(sources));
  // Every data row by content: (file, row).
  std::vector<std::vector<std::pair<uint32_t, size_t>>> holders;
  // Keys by (file, content, layout): a key meaning two things is a conflict.
  // Per meaning also whether a .ptd entry holds it.
  std::map<std::string, std::set<std::tuple<uint32_t, size_t, std::string, bool>>> meanings;
  for (size_t d = 0; d < data_rows.size(); ++d) {
    const auto [f, i] = data_rows[d];
    const SizeRow& r = reports[f].rows[i];
    const size_t id = contents.content_of[d];
    if (id >= holders.size()) holders.resize(id + 1);
    holders[id].push_back({f, i});
    if (!r.key.empty() && (r.kind == SizeKind::kNamedData || r.kind == SizeKind::kEntry)) {
      meanings[r.key].insert({f, id, LayoutText(r.tensor_layout), r.kind == SizeKind::kEntry});
    }
  }
  std::set<std::string> conflicting;
  for (const auto& [key, seen] : meanings) {
    std::set<std::pair<size_t, std::string>> distinct, distinct_entries;
    std::set<uint32_t> in, entries_in;
    for (const auto& [f, id, layout, entry] : seen) {
      distinct.insert({id, layout});
      in.insert(f);
      if (entry) {
        distinct_entries.insert({id, layout});
        entries_in.insert(f);
      }
    }
    if (distinct.size() > 1 && in.size() > 1) {
      KeyConflict k{key, std::vector<uint32_t>(in.begin(), in.end()), {}};
      if (distinct_entries.size() > 1 && entries_in.size() > 1) {
        k.entry_files.assign(entries_in.begin(), entries_in.end());
      }
      out.conflicts.push_back(std::move(k));
      conflicting.insert(key);
    }
  }
  for (const auto& list : holders) {
    std::set<uint32_t> in;
    for (const auto& [f, i] : list) in.insert(f);
    if (in.size() < 2) continue;
    SharedContent c;
    c.files.assign(in.begin(), in.end());
    c.copies = list.size();
    std::set<std::string> layouts;
    bool delegate = false, mutable_data = false, unread = false, conflict = false;
    for (const auto& [f, i] : list) {
      const SizeRow& r = reports[f].rows[i];
      c.size = r.size;
      c.items.push_back({f, r.kind, r.name, r.key, r.offset, r.tensor_layout});
      if (r.tensor_layout) layouts.insert(LayoutText(r.tensor_layout));
      delegate = delegate || r.kind == SizeKind::kDelegate;
      mutable_data = mutable_data || r.kind == SizeKind::kMutable;
      // A constant row has a layout exactly when a tensor reads it.
      unread = unread || (r.kind == SizeKind::kConstant && !r.tensor_layout);
      conflict = conflict || (conflicting.count(r.key) &&
                              (r.kind == SizeKind::kNamedData || r.kind == SizeKind::kEntry));
    }
    if (delegate) {
      c.reason = "delegate payloads have no external form";
    } else if (mutable_data) {
      c.reason = "mutable data has no external form";
    } else if (unread) {
      c.reason = "no tensor reads it";
    } else if (layouts.size() > 1) {
      c.reason = "tensor layouts differ";
    } else if (conflict) {
      c.reason = "its key names different bytes in another file";
    } else if (c.size < options.min_bytes) {
      c.reason = "below min_bytes";
    } else {
      c.shareable = true;
      c.bytes_saved = (c.copies - 1) * c.size;
    }
    if (c.shareable) {
      out.bytes_saved += c.bytes_saved;
    } else {
      out.bytes_not_saved += (c.copies - 1) * c.size;
    }
    out.contents.push_back(std::move(c));
  }
  std::stable_sort(out.contents.begin(), out.contents.end(),
                   [](const SharedContent& a, const SharedContent& b) {
                     return a.size * a.copies > b.size * b.copies;
                   });
  return out;
}

Value SizeReportJson(const SizeReport& report, uint64_t small_row_bytes) {
  std::vector<Value> rows;
  for (const SizeRow& r : report.rows) {
    if (r.size < small_row_bytes) continue;
    std::vector<Value::Member> m = {{"offset", Value::UInt(r.offset)},
                                    {"size", Value::UInt(r.size)},
                                    {"kind", Value::String(SizeKindName(r.kind))}};
    if (!r.name.empty()) m.emplace_back("name", Value::String(r.name));
    if (!r.key.empty()) m.emplace_back("key", Value::String(r.key));
    if (!r.method.empty()) m.emplace_back("method", Value::String(r.method));
    if (!r.backend.empty()) m.emplace_back("backend", Value::String(r.backend));
    if (r.segment) m.emplace_back("segment", Value::UInt(*r.segment));
    if (r.tensor_layout) m.emplace_back("tensor_layout", LayoutJson(*r.tensor_layout));
    if (!r.shared_with.empty()) {
      std::vector<Value> names;
      for (const std::string& n : r.shared_with) names.push_back(Value::String(n));
      m.emplace_back("shared_with", Value::Array(std::move(names)));
    }
    if (r.in_program) m.emplace_back("in_program", Value::Bool(true));
    rows.push_back(Value::Object(std::move(m)));
  }
  return Value::Object({{"file", Value::String(report.file)},
                        {"kind", Value::String(ArtifactKindName(report.kind))},
                        {"file_size", Value::UInt(report.file_size)},
                        {"small_row_bytes", Value::UInt(small_row_bytes)},
                        {"rows", Value::Array(std::move(rows))},
                        {"grouped", GroupsJson(SmallRows(report, small_row_bytes))},
                        {"by_kind", GroupsJson(KindTotals(report))}});
}

Value SharedReportJson(const SharedReport& report) {
  std::vector<Value> files, contents, conflicts;
  for (const std::string& f : report.files) files.push_back(Value::String(f));
  for (const SharedContent& c : report.contents) {
    std::vector<Value> items;
    for (const SharedItem& i : c.items) {
      std::vector<Value::Member> m = {{"file", Value::UInt(i.file)},
                                      {"kind", Value::String(SizeKindName(i.kind))},
                                      {"name", Value::String(i.name)}};
      if (!i.key.empty()) m.emplace_back("key", Value::String(i.key));
      m.emplace_back("offset", Value::UInt(i.offset));
      if (i.tensor_layout) m.emplace_back("tensor_layout", LayoutJson(*i.tensor_layout));
      items.push_back(Value::Object(std::move(m)));
    }
    contents.push_back(Value::Object({{"size", Value::UInt(c.size)},
                                      {"copies", Value::UInt(c.copies)},
                                      {"files", Indices(c.files)},
                                      {"shareable", Value::Bool(c.shareable)},
                                      {"reason", Value::String(c.reason)},
                                      {"bytes_saved", Value::UInt(c.bytes_saved)},
                                      {"items", Value::Array(std::move(items))}}));
  }
  for (const KeyConflict& k : report.conflicts) {
    conflicts.push_back(Value::Object({{"key", Value::String(k.key)},
                                       {"files", Indices(k.files)},
                                       {"entry_files", Indices(k.entry_files)}}));
  }
  return Value::Object({{"files", Value::Array(std::move(files))},
                        {"contents", Value::Array(std::move(contents))},
                        {"conflicts", Value::Array(std::move(conflicts))},
                        {"bytes_saved", Value::UInt(report.bytes_saved)},
                        {"bytes_not_saved", Value::UInt(report.bytes_not_saved)}});
}

}  // namespace etpack
