// The JSON rendering of a share's report (etpack/share.h, ShareReportJson).

#include "etpack/inspect.h"
#include "etpack/share.h"

namespace etpack {

using json::Value;

Value ShareReportJson(const ShareReport& report, const WriteStats* written) {
  auto strings = [](const std::vector<std::string>& v) {
    std::vector<Value> items;
    for (const std::string& s : v) items.push_back(Value::String(s));
    return Value::Array(std::move(items));
  };
  auto indices = [](const std::vector<uint32_t>& v) {
    std::vector<Value> items;
    for (uint32_t i : v) items.push_back(Value::UInt(i));
    return Value::Array(std::move(items));
  };
  std::vector<Value> files, entries, stayed, conflicts;
  for (const ShareFileReport& f : report.files) {
    files.push_back(Value::Object({{"input", Value::String(f.input)},
                                   {"kind", Value::String(ArtifactKindName(f.kind))},
                                   {"output", Value::String(f.output)},
                                   {"bytes_before", Value::UInt(f.bytes_before)},
                                   {"bytes_after", Value::UInt(f.bytes_after)},
                                   {"bytes_moved", Value::UInt(f.bytes_moved)},
                                   {"items_moved", Value::UInt(f.items_moved)},
                                   {"items_taken", Value::UInt(f.items_taken)},
                                   {"bytes_taken", Value::UInt(f.bytes_taken)},
                                   {"taken_from", strings(f.taken_from)},
                                   {"data", strings(f.data)},
                                   {"into", strings(f.into)}}));
  }
  for (const ShareEntry& e : report.entries) {
    std::vector<Value::Member> m = {{"key", Value::String(e.key)}, {"size", Value::UInt(e.size)}};
    if (e.tensor_layout) m.emplace_back("tensor_layout", LayoutJson(*e.tensor_layout));
    m.emplace_back("files", indices(e.files));
    entries.push_back(Value::Object(std::move(m)));
  }
  for (const SharedContent& c : report.analysis.contents) {
    if (c.shareable) continue;
    std::vector<Value> items;
    for (const SharedItem& i : c.items) {
      items.push_back(Value::Object({{"file", Value::UInt(i.file)},
                                     {"kind", Value::String(SizeKindName(i.kind))},
                                     {"name", Value::String(i.name)}}));
    }
    stayed.push_back(Value::Object({{"size", Value::UInt(c.size)},
                                    {"copies", Value::UInt(c.copies)},
                                    {"files", indices(c.files)},
                                    {"reason", Value::String(c.reason)},
                                    {"items", Value::Array(std::move(items))}}));
  }
  for (const KeyConflict& k : report.analysis.conflicts) {
    conflicts.push_back(Value::Object({{"key", Value::String(k.key)},
                                       {"files", indices(k.files)},
                                       {"entry_files", indices(k.entry_files)}}));
  }
  Value out = Value::Object({{"files", Value::Array(std::move(files))},
                             {"shared_files", strings(report.shared_files)},
                             {"shared_bytes", Value::UInt(report.shared_bytes)},
                             {"entries", Value::Array(std::move(entries))},
                             {"bytes_before", Value::UInt(report.bytes_before)},
                             {"bytes_after", Value::UInt(report.bytes_after)},
                             {"bytes_saved", Value::Int(static_cast<int64_t>(report.bytes_before) -
                                                        static_cast<int64_t>(report.bytes_after))},
                             {"stayed", Value::Array(std::move(stayed))},
                             {"conflicts", Value::Array(std::move(conflicts))},
                             {"dry_run", Value::Bool(written == nullptr)}});
  if (written != nullptr) {
    // The order they are written in (SharePlan::files): data files first.
    std::vector<std::string> paths = report.shared_files;
    for (const ShareFileReport& f : report.files) {
      if (f.kind == ArtifactKind::kPte) paths.push_back(f.output);
    }
    SetWriteStatsJson(paths, *written, &out);
  }
  return out;
}

Value ShareReportJson(const ShareResult& result) {
  return ShareReportJson(result.plan.report, result.written ? &*result.written : nullptr);
}

}  // namespace etpack
