#include "etpack/inspect.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "etpack/source.h"
#include "plan/segments.h"
#include "program_etpack_generated.h"

namespace etpack {
namespace {

using json::Value;

Value U(uint64_t v) { return Value::UInt(v); }

const char* LayoutName(BpteLayout layout) {
  return layout == BpteLayout::kStandard ? "standard" : "segmented";
}

// What shared storage saves, from where each entry's bytes are in the file.
// By offset (the longer entry first at one offset), an entry that starts
// inside the bytes covered so far shares them; the bytes saved are the
// entries' total size less the bytes they cover together.
DedupSummary DedupOf(std::vector<ByteRange> ranges) {
  ranges.erase(
      std::remove_if(ranges.begin(), ranges.end(), [](const ByteRange& r) { return r.size == 0; }),
      ranges.end());
  std::sort(ranges.begin(), ranges.end(), [](const ByteRange& a, const ByteRange& b) {
    return a.offset != b.offset ? a.offset < b.offset : a.size > b.size;
  });
  uint64_t shared = 0, total = 0, covered = 0, end = 0;
  for (const ByteRange& r : ranges) {
    // Each range lies inside the file (validated on open).
    const uint64_t r_end = r.offset + r.size;
    total += r.size;
    if (r.offset < end) ++shared;
    if (r_end > end) {
      covered += r_end - std::max(r.offset, end);
      end = r_end;
    }
  }
  return DedupSummary{shared, total - covered};
}

// Where the bytes of a .pte's entries are: constants (the bytes their
// tensors read: `need` by buffer index), delegate calls (their payload) and
// named-data keys.
std::vector<ByteRange> EntryRanges(const PteFile& file, const std::vector<uint64_t>& need) {
  const PteSegmentMap& layout = file.layout();
  const uint64_t base = file.header().segment_base_offset;
  auto segment = [&](uint32_t i) {
    return ByteRange{base + layout.segments[i].offset, layout.segments[i].size};
  };
  std::vector<ByteRange> out;
  for (size_t k = 0; k < need.size(); ++k) {
    out.push_back({file.constant_buffers()[k].offset, need[k]});
  }
  const auto* inline_data = file.program().backend_delegate_data();
  for (const PteDelegate* d : AllDelegates(file)) {
    if (d->in_segment) {
      out.push_back(segment(d->index));
    } else if (const auto* data = inline_data->Get(d->index)->data()) {
      out.push_back({static_cast<uint64_t>(data->data() - file.head()), data->size()});
    }
  }
  for (const PteNamedData& n : file.named_data()) out.push_back(segment(n.segment_index));
  return out;
}

}  // namespace

TreeSink::TreeSink() { open_.emplace_back(std::string(), Value::Object()); }

void TreeSink::Member(std::string_view key, Value value) {
  open_.back().second.members().emplace_back(std::string(key), std::move(value));
}

void TreeSink::BeginObject(std::string_view key) {
  open_.emplace_back(std::string(key), Value::Object());
}

void TreeSink::BeginArray(std::string_view key, size_t size) {
  std::vector<Value> items;
  items.reserve(size);
  open_.emplace_back(std::string(key), Value::Array(std::move(items)));
}

void TreeSink::Element(Value value) { open_.back().second.items().push_back(std::move(value)); }

void TreeSink::End() {
  Value::Member done = std::move(open_.back());
  open_.pop_back();
  open_.back().second.members().push_back(std::move(done));
}

Value TreeSink::Take() && { return std::move(open_.front().second); }

JsonSink::JsonSink(json::StreamPrinter::Write write, int indent)
    : printer_(std::move(write), indent) {
  printer_.BeginObject();
}

void JsonSink::Member(std::string_view key, Value value) {
  printer_.Key(key);
  printer_.Put(value);
}

void JsonSink::BeginObject(std::string_view key) {
  printer_.Key(key);
  printer_.BeginObject();
}

void JsonSink::BeginArray(std::string_view key, size_t) {
  printer_.Key(key);
  printer_.BeginArray();
}

void JsonSink::Element(Value value) { printer_.Put(value); }
void JsonSink::End() { printer_.End(); }
void JsonSink::Finish() { printer_.End(); }

const char* ReportListName(ReportList list) {
  switch (list) {
    case ReportList::kMethods: return "methods";
    case ReportList::kSegments: return "segments";
    case ReportList::kDelegates: return "delegates";
    case ReportList::kNamedData: return "named_data";
    case ReportList::kExternalTensors: return "external_tensors";
    case ReportList::kEntries: return "entries";
    case ReportList::kTestSuites: return "test_suites";
  }
  return "?";
}

Status ReportPte(const PteFile& file, InspectSink& sink) {
  ETPACK_ASSIGN_OR_RETURN(std::vector<FatDelegateReport> fat, FatDelegates(file));
  const ExtendedHeader& header = file.header();
  const PteSegmentMap& layout = file.layout();
  sink.Head(PteReportHead{file.name(), file.size(),
                          ArtifactIdentifier(file.head(), file.head_size()), header});
  size_t delegate_count = 0;
  sink.BeginList(ReportList::kMethods, file.methods().size());
  for (const PteMethod& m : file.methods()) {
    delegate_count += m.delegates.size();
    sink.Row(MethodRow{m.name, m.value_count, m.inputs.size(), m.outputs.size(),
                       m.instruction_count, m.delegates.size()});
  }
  sink.EndList();

  sink.BeginList(ReportList::kSegments, layout.segments.size());
  for (size_t i = 0; i < layout.segments.size(); ++i) {
    const PteSegmentMap::Segment& s = layout.segments[i];
    const uint64_t absolute = header.segment_base_offset + s.offset;
    sink.Row(SegmentRow{i, SegmentRoleName(s.role), s.offset, absolute, s.size,
                        OffsetAlignment(absolute)});
  }
  sink.EndList();

  uint64_t constant_tensors = 0, constant_bytes = 0, external_count = 0;
  // By constant buffer: the most bytes a tensor reads from it, and whether
  // one does.
  std::vector<uint64_t> need(file.constant_buffers().size(), 0);
  std::vector<bool> used(file.constant_buffers().size(), false);
  const std::vector<PteTensor> tensors = file.Tensors();
  for (const PteTensor& t : tensors) {
    if (t.data == TensorData::kExternal) {
      ++external_count;
    } else if (t.data == TensorData::kConstant) {
      ++constant_tensors;
      if (t.buffer_index < need.size()) {
        need[t.buffer_index] = std::max(need[t.buffer_index], t.nbytes.value_or(0));
        used[t.buffer_index] = true;
      }
    }
  }
  for (size_t idx = 0; idx < used.size(); ++idx) {
    if (used[idx]) constant_bytes += file.constant_buffers()[idx].size;
  }
  sink.Constants(ConstantsSummary{constant_tensors, constant_bytes});

  sink.BeginList(ReportList::kDelegates, delegate_count);
  for (const PteMethod& m : file.methods()) {
    for (size_t i = 0; i < m.delegates.size(); ++i) {
      const PteDelegate& d = m.delegates[i];
      sink.Row(DelegateRow{m.name, i, d.backend,
                           (d.in_segment ? "segment " : "inline ") + std::to_string(d.index),
                           d.size});
    }
  }
  sink.EndList();

  sink.BeginList(ReportList::kNamedData, file.named_data().size());
  for (const PteNamedData& n : file.named_data()) {
    sink.Row(NamedDataRow{n.key, n.segment_index, layout.segments[n.segment_index].size});
  }
  sink.EndList();

  sink.BeginList(ReportList::kExternalTensors, external_count);
  for (const PteTensor& t : tensors) {
    if (t.data != TensorData::kExternal) continue;
    sink.Row(ExternalTensorRow{file.methods()[t.method].name, t.value, t.key, t.layout});
  }
  sink.EndList();
  sink.Dedup(DedupOf(EntryRanges(file, need)));
  sink.FatDelegates(fat);
  return Status::OK();
}

void ReportPtd(const PtdFile& f, InspectSink& sink) {
  const PtdSegmentMap& l = f.layout();
  sink.Head(
      PtdReportHead{f.name(), f.size(), ArtifactIdentifier(f.head(), f.head_size()), f.header()});
  sink.BeginList(ReportList::kSegments, l.segments.size());
  for (size_t i = 0; i < l.segments.size(); ++i) {
    const uint64_t absolute = l.segment_base_offset + l.segments[i].offset;
    sink.Row(SegmentRow{i, nullptr, l.segments[i].offset, absolute, l.segments[i].size,
                        OffsetAlignment(absolute)});
  }
  sink.EndList();
  std::vector<ByteRange> ranges;
  ranges.reserve(f.entries().size());
  sink.BeginList(ReportList::kEntries, f.entries().size());
  for (const PtdFile::Entry& e : f.entries()) {
    ranges.push_back({l.segment_base_offset + l.segments[e.segment_index].offset,
                      l.segments[e.segment_index].size});
    sink.Row(EntryRow{e.key, e.segment_index, l.segments[e.segment_index].size, e.layout});
  }
  sink.EndList();
  sink.Dedup(DedupOf(std::move(ranges)));
}

Status ReportBpte(const BpteFile& f, InspectSink& sink) {
  ETPACK_ASSIGN_OR_RETURN(std::vector<BundledTestSuite> suites, f.Suites());
  // The program's report fails only on its fat delegates: checked first,
  // so that a failing report has no members.
  ETPACK_RETURN_IF_ERROR(FatDelegates(f.program()).status());
  sink.Head(BpteReportHead{f.name(), f.size(), f.layout(), f.program_offset(), f.program_size()});
  sink.BeginList(ReportList::kTestSuites, suites.size());
  for (const BundledTestSuite& s : suites) sink.Row(SuiteRow{s.method_name, s.test_cases.size()});
  sink.EndList();
  sink.BeginProgram();
  ETPACK_RETURN_IF_ERROR(ReportPte(f.program(), sink));
  sink.EndProgram();
  return Status::OK();
}

namespace {

// The members every report starts with.
void Top(ReportSink& out, ArtifactKind kind, const std::string& file, uint64_t file_size) {
  out.Member("kind", Value::String(ArtifactKindName(kind)));
  out.Member("file", Value::String(file));
  out.Member("file_size", U(file_size));
}

}  // namespace

void ReportJson::Head(const PteReportHead& h) {
  Top(out_, ArtifactKind::kPte, h.file, h.file_size);
  out_.Member("identifier", Value::String(h.identifier));
  const ExtendedHeader& x = h.extended_header;
  out_.Member("extended_header", Value::Object({{"present", Value::Bool(x.present)},
                                                {"length", U(x.length)},
                                                {"program_size", U(x.program_size)},
                                                {"segment_base_offset", U(x.segment_base_offset)},
                                                {"segment_data_size", U(x.segment_data_size)}}));
}

void ReportJson::Head(const PtdReportHead& h) {
  Top(out_, ArtifactKind::kPtd, h.file, h.file_size);
  out_.Member("identifier", Value::String(h.identifier));
  const FlatTensorHeader& x = h.header;
  out_.Member("header", Value::Object({{"length", U(x.length)},
                                       {"flatbuffer_offset", U(x.flatbuffer_offset)},
                                       {"flatbuffer_size", U(x.flatbuffer_size)},
                                       {"segment_base_offset", U(x.segment_base_offset)},
                                       {"segment_data_size", U(x.segment_data_size)}}));
}

void ReportJson::Head(const BpteReportHead& h) {
  Top(out_, ArtifactKind::kBpte, h.file, h.file_size);
  out_.Member("layout", Value::String(LayoutName(h.layout)));
  out_.Member("program_offset", U(h.program_offset));
  out_.Member("program_size", U(h.program_size));
}

void ReportJson::BeginList(ReportList list, size_t size) {
  out_.BeginArray(ReportListName(list), size);
}

void ReportJson::Row(const MethodRow& r) {
  out_.Element(Value::Object({{"name", Value::String(r.name)},
                              {"values", U(r.values)},
                              {"inputs", U(r.inputs)},
                              {"outputs", U(r.outputs)},
                              {"instructions", U(r.instructions)},
                              {"delegates", U(r.delegates)}}));
}

void ReportJson::Row(const SegmentRow& r) {
  std::vector<Value::Member> m;
  m.emplace_back("index", U(r.index));
  if (r.role != nullptr) m.emplace_back("role", Value::String(r.role));
  m.emplace_back("offset", U(r.offset));
  m.emplace_back("absolute_offset", U(r.absolute_offset));
  m.emplace_back("size", U(r.size));
  m.emplace_back("alignment", U(r.alignment));
  out_.Element(Value::Object(std::move(m)));
}

void ReportJson::Row(const DelegateRow& r) {
  out_.Element(Value::Object({{"method", Value::String(r.method)},
                              {"index", U(r.index)},
                              {"backend", Value::String(r.backend)},
                              {"location", Value::String(r.location)},
                              {"size", U(r.size)}}));
}

void ReportJson::Row(const NamedDataRow& r) {
  out_.Element(Value::Object(
      {{"key", Value::String(r.key)}, {"segment", U(r.segment)}, {"size", U(r.size)}}));
}

void ReportJson::Row(const ExternalTensorRow& r) {
  out_.Element(Value::Object({{"method", Value::String(r.method)},
                              {"value", U(r.value)},
                              {"key", Value::String(r.key)},
                              {"tensor_layout", LayoutJson(r.tensor_layout)}}));
}

void ReportJson::Row(const EntryRow& r) {
  out_.Element(Value::Object(
      {{"key", Value::String(r.key)},
       {"segment", U(r.segment)},
       {"size", U(r.size)},
       {"tensor_layout", r.tensor_layout ? LayoutJson(*r.tensor_layout) : Value::Null()}}));
}

void ReportJson::Row(const SuiteRow& r) {
  out_.Element(Value::Object({{"method", Value::String(r.method)}, {"cases", U(r.cases)}}));
}

void ReportJson::EndList() { out_.End(); }

void ReportJson::Constants(const ConstantsSummary& c) {
  out_.Member("constants", Value::Object({{"tensors", U(c.tensors)}, {"bytes", U(c.bytes)}}));
}

void ReportJson::Dedup(const DedupSummary& d) {
  out_.Member("dedup", Value::Object({{"shared_entries", U(d.shared_entries)},
                                      {"bytes_saved", U(d.bytes_saved)}}));
}

void ReportJson::FatDelegates(const std::vector<FatDelegateReport>& fat) {
  out_.Member("fat_delegates", FatDelegatesJson(fat));
}

void ReportJson::BeginProgram() { out_.BeginObject("program"); }
void ReportJson::EndProgram() { out_.End(); }

Result<Value> PteReportJson(const PteFile& file) {
  TreeSink sink;
  ReportJson json(sink);
  ETPACK_RETURN_IF_ERROR(ReportPte(file, json));
  return std::move(sink).Take();
}

Value PtdReportJson(const PtdFile& file) {
  TreeSink sink;
  ReportJson json(sink);
  ReportPtd(file, json);
  return std::move(sink).Take();
}

Result<Value> BpteReportJson(const BpteFile& file) {
  TreeSink sink;
  ReportJson json(sink);
  ETPACK_RETURN_IF_ERROR(ReportBpte(file, json));
  return std::move(sink).Take();
}

Status Inspect(const std::string& path, ReportSink& sink, const Env& env) {
  ReportJson json(sink);
  return Inspect(path, json, env);
}

Status Inspect(const std::string& path, InspectSink& sink, const Env& env) {
  ETPACK_ASSIGN_OR_RETURN(const OpenedArtifact file, OpenArtifact(path, env));
  switch (file.kind) {
    case ArtifactKind::kPte: return ReportPte(*file.pte, sink);
    case ArtifactKind::kPtd: ReportPtd(*file.ptd, sink); return Status::OK();
    case ArtifactKind::kBpte: return ReportBpte(*file.bpte, sink);
  }
  return InvalidArgument(path + ": unknown artifact kind");
}

Result<Value> InspectJson(const std::string& path, const Env& env) {
  TreeSink sink;
  ETPACK_RETURN_IF_ERROR(Inspect(path, sink, env));
  return std::move(sink).Take();
}

Value LayoutJson(const TensorLayout& layout) {
  std::vector<Value> sizes, order;
  for (int32_t d : layout.sizes) sizes.push_back(Value::Int(d));
  for (uint8_t d : layout.dim_order) order.push_back(Value::Int(d));
  return Value::Object({{"scalar_type", Value::Int(layout.scalar_type)},
                        {"sizes", Value::Array(std::move(sizes))},
                        {"dim_order", Value::Array(std::move(order))},
                        {"text", Value::String(DescribeLayout(layout))}});
}

}  // namespace etpack
