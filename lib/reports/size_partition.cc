// The partition of a file into size rows (reports/size_partition.h,
// etpack/sizes.h): claims and regions to rows that cover it exactly once,
// the check that they do, and the sums of rows by kind.

#include "reports/size_partition.h"

#include <algorithm>
#include <tuple>
#include <utility>

namespace etpack {
namespace {

uint64_t End(const SizeRow& r) { return r.offset + r.size; }
uint64_t End(const SizeRegion& r) { return r.offset + r.size; }

// The rows of a file of `file_size` bytes. Claims are sorted by offset (the
// larger first at one offset); a claim inside bytes already covered joins
// the row covering its start (shared_with), one reaching past them gets a
// row for the bytes past them. Gaps take the kind of the region they are
// in; outside every region they are padding, or unreferenced after the
// last claim and region.
std::vector<SizeRow> Partition(uint64_t file_size, SizeLayout layout) {
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
  std::vector<SizeRegion>& regions = layout.regions;
  std::stable_sort(regions.begin(), regions.end(),
                   [](const SizeRegion& a, const SizeRegion& b) { return a.offset < b.offset; });
  uint64_t last = 0;  // the end of everything the file's structure describes
  for (const SizeRow& c : claims) last = std::max(last, End(c));
  for (const SizeRegion& r : regions) last = std::max(last, End(r));

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
      const SizeRegion& r = regions[i];
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

}  // namespace

// The report of `file` from its claims and regions, checked.
Result<SizeReport> FinishSizes(const ArtifactFile& file, ArtifactKind kind, SizeLayout layout) {
  SizeReport report;
  report.file = file.name();
  report.kind = kind;
  report.file_size = file.size();
  report.rows = Partition(file.size(), std::move(layout));
  ETPACK_RETURN_IF_ERROR(CheckPartition(report));
  return report;
}

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

}  // namespace etpack
