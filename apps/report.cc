#include "report.h"

#include <cinttypes>
#include <cstdio>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "units.h"

namespace etpack::cli {
namespace {

struct MethodInfo {
  std::string name;
  uint64_t values = 0, inputs = 0, outputs = 0, instructions = 0, delegates = 0;
};

struct SegmentInfo {
  uint64_t index = 0;
  std::string role;
  uint64_t offset = 0, absolute = 0, size = 0, alignment = 0;
};

struct DelegateInfo {
  std::string method;
  uint64_t index = 0;
  std::string backend;
  std::string location;
  uint64_t size = 0;
};

struct NamedInfo {
  std::string key;
  uint64_t segment = 0;
  uint64_t size = 0;
};

struct ExternalInfo {
  std::string method;
  uint64_t value = 0;
  std::string key;
  TensorLayout layout;
};

struct Report {
  std::string file;
  uint64_t file_size = 0;
  std::string identifier;
  ExtendedHeader header;
  std::vector<MethodInfo> methods;
  std::vector<SegmentInfo> segments;
  uint64_t constant_tensors = 0;
  uint64_t constant_bytes = 0;
  std::vector<DelegateInfo> delegates;
  std::vector<NamedInfo> named;
  std::vector<ExternalInfo> external;
};

// Bytes 4..7, printable.
std::string Identifier(const ArtifactFile& file) {
  std::string id;
  for (uint64_t i = 4; i < 8 && i < file.head_size(); ++i) {
    const char c = static_cast<char>(file.head()[i]);
    id += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return id;
}

Report BuildReport(const PteFile& file) {
  Report r;
  r.file = file.name();
  r.file_size = file.size();
  r.identifier = Identifier(file);
  r.header = file.header();

  const PteLayout& layout = file.layout();
  for (const PteMethod& m : file.methods()) {
    r.methods.push_back({m.name, m.value_count, m.inputs.size(), m.outputs.size(),
                         m.instruction_count, m.delegates.size()});
    for (size_t i = 0; i < m.delegates.size(); ++i) {
      const PteDelegate& d = m.delegates[i];
      r.delegates.push_back({m.name, i, d.backend,
                             (d.in_segment ? "segment " : "inline ") + std::to_string(d.index),
                             d.size});
    }
  }

  std::set<uint32_t> constant_buffers;
  for (const PteTensor& t : file.Tensors()) {
    if (t.data == TensorData::kExternal) {
      r.external.push_back({file.methods()[t.method].name, t.value, t.key, t.layout});
    } else if (t.data == TensorData::kConstant) {
      ++r.constant_tensors;
      constant_buffers.insert(t.buffer_index);
    }
  }
  for (uint32_t idx : constant_buffers) {
    if (idx < file.constant_buffers().size()) r.constant_bytes += file.constant_buffers()[idx].size;
  }

  for (size_t i = 0; i < layout.segments.size(); ++i) {
    const PteLayout::Segment& s = layout.segments[i];
    SegmentInfo info;
    info.index = i;
    info.role = SegmentRoleName(s.role);
    info.offset = s.offset;
    info.absolute = r.header.segment_base_offset + s.offset;
    info.size = s.size;
    info.alignment = OffsetAlignment(info.absolute);
    r.segments.push_back(info);
  }

  for (const PteNamedData& n : file.named_data()) {
    r.named.push_back({n.key, n.segment_index, layout.segments[n.segment_index].size});
  }
  return r;
}

json::Value ReportJson(const Report& r) {
  using json::Value;
  auto U = [](uint64_t v) { return Value::UInt(v); };
  std::vector<Value> methods, segments, delegates, named;
  for (const MethodInfo& m : r.methods) {
    methods.push_back(Value::Object({{"name", Value::String(m.name)},
                                     {"values", U(m.values)},
                                     {"inputs", U(m.inputs)},
                                     {"outputs", U(m.outputs)},
                                     {"instructions", U(m.instructions)},
                                     {"delegates", U(m.delegates)}}));
  }
  for (const SegmentInfo& s : r.segments) {
    segments.push_back(Value::Object({{"index", U(s.index)},
                                      {"role", Value::String(s.role)},
                                      {"offset", U(s.offset)},
                                      {"absolute_offset", U(s.absolute)},
                                      {"size", U(s.size)},
                                      {"alignment", U(s.alignment)}}));
  }
  for (const DelegateInfo& d : r.delegates) {
    delegates.push_back(Value::Object({{"method", Value::String(d.method)},
                                       {"index", U(d.index)},
                                       {"backend", Value::String(d.backend)},
                                       {"location", Value::String(d.location)},
                                       {"size", U(d.size)}}));
  }
  for (const NamedInfo& n : r.named) {
    named.push_back(Value::Object(
        {{"key", Value::String(n.key)}, {"segment", U(n.segment)}, {"size", U(n.size)}}));
  }
  std::vector<Value> external;
  for (const ExternalInfo& e : r.external) {
    external.push_back(Value::Object({{"method", Value::String(e.method)},
                                      {"value", U(e.value)},
                                      {"key", Value::String(e.key)},
                                      {"tensor_layout", LayoutJson(e.layout)}}));
  }
  return Value::Object({
      {"kind", Value::String("pte")},
      {"file", Value::String(r.file)},
      {"file_size", U(r.file_size)},
      {"identifier", Value::String(r.identifier)},
      {"extended_header", Value::Object({{"present", Value::Bool(r.header.present)},
                                         {"length", U(r.header.length)},
                                         {"program_size", U(r.header.program_size)},
                                         {"segment_base_offset", U(r.header.segment_base_offset)},
                                         {"segment_data_size", U(r.header.segment_data_size)}})},
      {"methods", Value::Array(std::move(methods))},
      {"segments", Value::Array(std::move(segments))},
      {"constants",
       Value::Object({{"tensors", U(r.constant_tensors)}, {"bytes", U(r.constant_bytes)}})},
      {"delegates", Value::Array(std::move(delegates))},
      {"named_data", Value::Array(std::move(named))},
      {"external_tensors", Value::Array(std::move(external))},
  });
}

void PrintReport(const Report& r) {
  std::printf("file:                %s\n", r.file.c_str());
  std::printf("file size:           %s\n", BytesText(r.file_size).c_str());
  std::printf("identifier:          %s\n", r.identifier.c_str());
  if (r.header.present) {
    std::printf("extended header:     present, length %" PRIu32 "\n", r.header.length);
    std::printf("  program_size:        %" PRIu64 "\n", r.header.program_size);
    std::printf("  segment_base_offset: %" PRIu64 "\n", r.header.segment_base_offset);
    std::printf("  segment_data_size:   %" PRIu64 "\n", r.header.segment_data_size);
  } else {
    std::printf("extended header:     absent (the whole file is the flatbuffer)\n");
  }

  std::printf("\nmethods (%zu):\n", r.methods.size());
  std::printf("  %-24s %8s %7s %8s %13s %10s\n", "name", "values", "inputs", "outputs",
              "instructions", "delegates");
  for (const MethodInfo& m : r.methods) {
    std::printf("  %-24s %8" PRIu64 " %7" PRIu64 " %8" PRIu64 " %13" PRIu64 " %10" PRIu64 "\n",
                m.name.c_str(), m.values, m.inputs, m.outputs, m.instructions, m.delegates);
  }

  std::printf("\nsegments (%zu):\n", r.segments.size());
  if (!r.segments.empty()) {
    std::printf("  %5s  %-10s %14s %14s %14s %9s\n", "index", "role", "offset", "absolute", "size",
                "alignment");
    for (const SegmentInfo& s : r.segments) {
      std::printf("  %5" PRIu64 "  %-10s %14" PRIu64 " %14" PRIu64 " %14" PRIu64 " %9" PRIu64 "\n",
                  s.index, s.role.c_str(), s.offset, s.absolute, s.size, s.alignment);
    }
  }

  std::printf("\nconstants:           %s, %s\n", Count(r.constant_tensors, "tensor").c_str(),
              BytesText(r.constant_bytes).c_str());

  std::printf("\ndelegates (%zu):\n", r.delegates.size());
  for (const DelegateInfo& d : r.delegates) {
    std::printf("  %s[%" PRIu64 "]  %-24s %-12s %" PRIu64 " bytes\n", d.method.c_str(), d.index,
                d.backend.c_str(), d.location.c_str(), d.size);
  }

  std::printf("\nnamed data (%zu):\n", r.named.size());
  for (const NamedInfo& n : r.named) {
    std::printf("  %-32s segment %-4" PRIu64 " %" PRIu64 " bytes\n", n.key.c_str(), n.segment,
                n.size);
  }

  std::printf("\nexternal tensors (%zu):\n", r.external.size());
  for (const ExternalInfo& e : r.external) {
    std::printf("  %s.values[%" PRIu64 "]  %-32s %s\n", e.method.c_str(), e.value,
                e.key.empty() ? "(no fully_qualified_name)" : e.key.c_str(),
                DescribeLayout(e.layout).c_str());
  }
}

const char* LayoutName(BpteLayout layout) {
  return layout == BpteLayout::kStandard ? "standard" : "segmented";
}

}  // namespace

void PrintPteReport(const PteFile& file) { PrintReport(BuildReport(file)); }

json::Value PteReportJson(const PteFile& file) { return ReportJson(BuildReport(file)); }

json::Value PtdReportJson(const PtdFile& f) {
  using json::Value;
  auto U = [](uint64_t v) { return Value::UInt(v); };
  const FlatTensorHeader& h = f.header();
  const PtdLayout& l = f.layout();
  std::vector<Value> segments, entries;
  for (size_t i = 0; i < l.segments.size(); ++i) {
    const uint64_t absolute = l.segment_base_offset + l.segments[i].offset;
    segments.push_back(Value::Object({{"index", U(i)},
                                      {"offset", U(l.segments[i].offset)},
                                      {"absolute_offset", U(absolute)},
                                      {"size", U(l.segments[i].size)},
                                      {"alignment", U(OffsetAlignment(absolute))}}));
  }
  for (const PtdFile::Entry& e : f.entries()) {
    entries.push_back(
        Value::Object({{"key", Value::String(e.key)},
                       {"segment", U(e.segment_index)},
                       {"size", U(l.segments[e.segment_index].size)},
                       {"tensor_layout", e.layout ? LayoutJson(*e.layout) : Value::Null()}}));
  }
  return Value::Object({
      {"kind", Value::String("ptd")},
      {"file", Value::String(f.name())},
      {"file_size", U(f.size())},
      {"identifier", Value::String(Identifier(f))},
      {"header", Value::Object({{"length", U(h.length)},
                                {"flatbuffer_offset", U(h.flatbuffer_offset)},
                                {"flatbuffer_size", U(h.flatbuffer_size)},
                                {"segment_base_offset", U(h.segment_base_offset)},
                                {"segment_data_size", U(h.segment_data_size)}})},
      {"segments", Value::Array(std::move(segments))},
      {"entries", Value::Array(std::move(entries))},
  });
}

void PrintPtdReport(const PtdFile& f) {
  const FlatTensorHeader& h = f.header();
  const PtdLayout& l = f.layout();
  std::printf("file:                %s\n", f.name().c_str());
  std::printf("file size:           %s\n", BytesText(f.size()).c_str());
  std::printf("identifier:          %s\n", Identifier(f).c_str());
  std::printf("FH01 header:         length %" PRIu32 "\n", h.length);
  std::printf("  flatbuffer_offset:   %" PRIu64 "\n", h.flatbuffer_offset);
  std::printf("  flatbuffer_size:     %" PRIu64 "\n", h.flatbuffer_size);
  std::printf("  segment_base_offset: %" PRIu64 "\n", h.segment_base_offset);
  std::printf("  segment_data_size:   %" PRIu64 "\n", h.segment_data_size);

  std::printf("\nsegments (%zu):\n", l.segments.size());
  if (!l.segments.empty()) {
    std::printf("  %5s %14s %14s %14s %9s\n", "index", "offset", "absolute", "size", "alignment");
    for (size_t i = 0; i < l.segments.size(); ++i) {
      const uint64_t absolute = l.segment_base_offset + l.segments[i].offset;
      std::printf("  %5zu %14" PRIu64 " %14" PRIu64 " %14" PRIu64 " %9" PRIu64 "\n", i,
                  l.segments[i].offset, absolute, l.segments[i].size, OffsetAlignment(absolute));
    }
  }

  std::printf("\nentries (%zu):\n", f.entries().size());
  for (const PtdFile::Entry& e : f.entries()) {
    std::printf("  %-40s segment %-5" PRIu32 " %12" PRIu64 " bytes  %s\n", e.key.c_str(),
                e.segment_index, l.segments[e.segment_index].size,
                e.layout ? DescribeLayout(*e.layout).c_str() : "(opaque blob)");
  }
}

Result<json::Value> BpteReportJson(const BpteFile& f) {
  ETPACK_ASSIGN_OR_RETURN(std::vector<BundledTestSuite> suites, f.Suites());
  std::vector<json::Value> list;
  for (const BundledTestSuite& s : suites) {
    list.push_back(json::Value::Object({{"method", json::Value::String(s.method_name)},
                                        {"cases", json::Value::UInt(s.test_cases.size())}}));
  }
  return json::Value::Object({{"file", json::Value::String(f.name())},
                              {"format", json::Value::String("bpte")},
                              {"file_size", json::Value::UInt(f.size())},
                              {"layout", json::Value::String(LayoutName(f.layout()))},
                              {"program_offset", json::Value::UInt(f.program_offset())},
                              {"program_size", json::Value::UInt(f.program_size())},
                              {"test_suites", json::Value::Array(std::move(list))},
                              {"program", PteReportJson(f.program())}});
}

Status PrintBpteReport(const BpteFile& f) {
  ETPACK_ASSIGN_OR_RETURN(std::vector<BundledTestSuite> suites, f.Suites());
  std::printf("file:                %s (%s)\n", f.name().c_str(), Count(f.size(), "byte").c_str());
  std::printf("format:              bundled program (BP08), %s layout\n", LayoutName(f.layout()));
  std::printf("embedded program:    offset %" PRIu64 ", %" PRIu64 " bytes\n", f.program_offset(),
              f.program_size());
  std::printf("\ntest suites (%zu):\n", suites.size());
  for (const BundledTestSuite& s : suites) {
    std::printf("  %-24s %s\n", s.method_name.c_str(), Count(s.test_cases.size(), "case").c_str());
  }
  std::printf("\n--- embedded program ---\n");
  PrintPteReport(f.program());
  return Status::OK();
}

json::Value LayoutJson(const TensorLayout& layout) {
  using json::Value;
  std::vector<Value> sizes, order;
  for (int32_t d : layout.sizes) sizes.push_back(Value::Int(d));
  for (uint8_t d : layout.dim_order) order.push_back(Value::Int(d));
  return Value::Object({{"scalar_type", Value::Int(layout.scalar_type)},
                        {"sizes", Value::Array(std::move(sizes))},
                        {"dim_order", Value::Array(std::move(order))},
                        {"text", Value::String(DescribeLayout(layout))}});
}

}  // namespace etpack::cli
