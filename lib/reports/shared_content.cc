// What several files hold alike, and whether `share` moves it
// (etpack/sizes.h, SharedAcrossFiles): the one verdict that `inspect
// --sizes A B` prints and `share` follows (etpack/share.h).

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "etpack/external_data.h"
#include "etpack/inspect.h"
#include "etpack/sizes.h"
#include "plan/content_groups.h"

namespace etpack {
namespace {

bool IsData(SizeKind k) {
  return k == SizeKind::kConstant || k == SizeKind::kNamedData || k == SizeKind::kEntry ||
         k == SizeKind::kDelegate || k == SizeKind::kMutable;
}

}  // namespace

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
      meanings[r.key].insert({f, id, DescribeLayout(r.tensor_layout), r.kind == SizeKind::kEntry});
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
      if (r.tensor_layout) layouts.insert(DescribeLayout(r.tensor_layout));
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

}  // namespace etpack
