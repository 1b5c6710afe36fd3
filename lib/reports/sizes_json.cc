// The JSON renderings of size reports (etpack/sizes.h): one file's rows,
// and what several hold alike.

#include "etpack/artifact_kind.h"
#include "etpack/inspect.h"
#include "etpack/sizes.h"

namespace etpack {
namespace {

using json::Value;

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
