#include "sizes_report.h"

#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "etpack/list_text.h"
#include "units.h"

namespace etpack::cli {
namespace {

// "segment 3, forward, XnnpackBackend, FLOAT[4, 3] dim_order [0, 1], also 'b', 'c'".
std::string Details(const SizeRow& r) {
  std::vector<std::string> parts;
  if (r.in_program) parts.push_back("in program");
  if (r.segment) parts.push_back("segment " + std::to_string(*r.segment));
  if (!r.method.empty() && r.name.rfind(r.method, 0) != 0) parts.push_back(r.method);
  if (!r.backend.empty()) parts.push_back(r.backend);
  if (r.tensor_layout) parts.push_back(DescribeLayout(*r.tensor_layout));
  if (!r.shared_with.empty()) {
    std::string also = "also";
    for (size_t i = 0; i < r.shared_with.size(); ++i) {
      also += (i == 0 ? " '" : ", '") + r.shared_with[i] + "'";
    }
    parts.push_back(also);
  }
  return ListText(parts);
}

std::string Percent(uint64_t part, uint64_t whole) {
  char s[16];
  std::snprintf(s, sizeof s, "%5.1f%%", whole == 0 ? 0.0 : 100.0 * part / whole);
  return s;
}

void PrintReport(const SizeReport& r, bool all) {
  const uint64_t below = all ? 0 : SmallRowBytes(r);
  std::printf("%s: %s, %s\n", r.file.c_str(), ArtifactKindName(r.kind),
              BytesText(r.file_size).c_str());
  std::printf("  %14s %14s  %-15s %s\n", "offset", "size", "kind", "name");
  for (const SizeRow& row : r.rows) {
    if (row.size < below) continue;
    const std::string details = Details(row);
    std::string what = row.name;
    if (!details.empty()) what += (what.empty() ? "(" : " (") + details + ")";
    std::printf("  %14" PRIu64 " %14" PRIu64 "  %-15s %s\n", row.offset, row.size,
                SizeKindName(row.kind), what.c_str());
  }
  for (const SizeGroup& g : SmallRows(r, below)) {
    std::printf("  %14s %14" PRIu64 "  %-15s %s under %s (--all lists them)\n", "-", g.size,
                SizeKindName(g.kind), Count(g.rows, "row").c_str(), HumanBytes(below).c_str());
  }
  std::printf("  %14s %14" PRIu64 "  (the file's size)\n", "total", r.file_size);
  std::printf("\n  by kind:\n");
  for (const SizeGroup& g : KindTotals(r)) {
    std::printf("    %-15s %14" PRIu64 "  %s  %s\n", SizeKindName(g.kind), g.size,
                Percent(g.size, r.file_size).c_str(), Count(g.rows, "row").c_str());
  }
}

void PrintShared(const SharedReport& s, bool all) {
  std::printf("\nheld by several files (by content):\n");
  for (size_t i = 0; i < s.files.size(); ++i) {
    std::printf("  [%zu] %s\n", i, s.files[i].c_str());
  }
  uint64_t hidden = 0, hidden_bytes = 0;
  for (const SharedContent& c : s.contents) {
    if (!all && !c.shareable && c.reason == "below min_bytes") {
      ++hidden;
      hidden_bytes += (c.copies - 1) * c.size;
      continue;
    }
    std::string files;
    for (uint32_t f : c.files) files += (files.empty() ? "[" : ", [") + std::to_string(f) + "]";
    std::printf("  %s x %" PRIu64 " in %s: %s\n", BytesText(c.size).c_str(), c.copies,
                files.c_str(),
                c.shareable ? ("shareable, saves " + BytesText(c.bytes_saved)).c_str()
                            : ("not shareable: " + c.reason).c_str());
    for (const SharedItem& item : c.items) {
      std::printf("      [%u] %-15s %s%s%s\n", item.file, SizeKindName(item.kind),
                  item.name.c_str(), item.tensor_layout ? "  " : "",
                  item.tensor_layout ? DescribeLayout(*item.tensor_layout).c_str() : "");
    }
  }
  if (hidden > 0) {
    std::printf("  %s below min_bytes, %s held more than once (--all lists them)\n",
                Count(hidden, "content").c_str(), BytesText(hidden_bytes).c_str());
  }
  for (const KeyConflict& k : s.conflicts) {
    std::string files;
    for (uint32_t f : k.files) files += (files.empty() ? "[" : ", [") + std::to_string(f) + "]";
    std::printf("  key '%s' means different bytes or layouts in %s: not shareable\n", k.key.c_str(),
                files.c_str());
  }
  std::printf("  a cross-file share would save %s; %s held more than once stay so\n",
              BytesText(s.bytes_saved).c_str(), BytesText(s.bytes_not_saved).c_str());
}

}  // namespace

void PrintSizes(const FileSizes& sizes, bool all) {
  for (size_t i = 0; i < sizes.reports.size(); ++i) {
    if (i > 0) std::printf("\n");
    PrintReport(sizes.reports[i], all);
  }
  if (sizes.reports.size() > 1) PrintShared(sizes.shared, all);
}

}  // namespace etpack::cli
