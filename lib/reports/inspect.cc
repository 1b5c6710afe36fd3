#include "etpack/inspect.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
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

// Bytes 4..7, printable.
std::string Identifier(const uint8_t* head, uint64_t size) {
  std::string id;
  for (uint64_t i = 4; i < 8 && i < size; ++i) {
    const char c = static_cast<char>(head[i]);
    id += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return id;
}

const char* LayoutName(BpteLayout layout) {
  return layout == BpteLayout::kStandard ? "standard" : "segmented";
}

// What shared storage saves, from where each entry's bytes are in the file.
// By offset (the longer entry first at one offset), an entry that starts
// inside the bytes covered so far shares them; the bytes saved are the
// entries' total size less the bytes they cover together.
Value DedupJson(std::vector<ByteRange> ranges) {
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
  return Value::Object({{"shared_entries", U(shared)}, {"bytes_saved", U(total - covered)}});
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

Result<ArtifactKind> DetectArtifactKind(const std::string& path, const Env& env) {
  // FileSource refuses anything but a regular file before reading it.
  ETPACK_ASSIGN_OR_RETURN(const SourcePtr file, FileSource(env.in(), path));
  uint8_t head[8];
  const size_t got = static_cast<size_t>(std::min<uint64_t>(file->size(), sizeof head));
  ETPACK_RETURN_IF_ERROR(file->ReadAt(0, head, got));
  if (got < sizeof head) {
    return Corrupt(path + ": " + std::to_string(got) +
                   " bytes is too short for a .pte, .ptd or .bpte file");
  }
  if (std::memcmp(head + 4, "ET12", 4) == 0) return ArtifactKind::kPte;
  if (std::memcmp(head + 4, "FT01", 4) == 0) return ArtifactKind::kPtd;
  if (std::memcmp(head + 4, "BP08", 4) == 0) return ArtifactKind::kBpte;
  return Corrupt(path + ": file identifier '" + Identifier(head, sizeof head) +
                 "' at bytes 4..7 is none of ET12 (.pte), FT01 (.ptd), BP08 (.bpte)");
}

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

Status ReportPte(const PteFile& file, ReportSink& sink) {
  ETPACK_ASSIGN_OR_RETURN(Value fat, FatDelegatesJson(file));
  const ExtendedHeader& header = file.header();
  const PteSegmentMap& layout = file.layout();
  sink.Member("kind", Value::String("pte"));
  sink.Member("file", Value::String(file.name()));
  sink.Member("file_size", U(file.size()));
  sink.Member("identifier", Value::String(Identifier(file.head(), file.head_size())));
  sink.Member("extended_header",
              Value::Object({{"present", Value::Bool(header.present)},
                             {"length", U(header.length)},
                             {"program_size", U(header.program_size)},
                             {"segment_base_offset", U(header.segment_base_offset)},
                             {"segment_data_size", U(header.segment_data_size)}}));
  size_t delegate_count = 0;
  sink.BeginArray("methods", file.methods().size());
  for (const PteMethod& m : file.methods()) {
    delegate_count += m.delegates.size();
    sink.Element(Value::Object({{"name", Value::String(m.name)},
                                {"values", U(m.value_count)},
                                {"inputs", U(m.inputs.size())},
                                {"outputs", U(m.outputs.size())},
                                {"instructions", U(m.instruction_count)},
                                {"delegates", U(m.delegates.size())}}));
  }
  sink.End();

  sink.BeginArray("segments", layout.segments.size());
  for (size_t i = 0; i < layout.segments.size(); ++i) {
    const PteSegmentMap::Segment& s = layout.segments[i];
    const uint64_t absolute = header.segment_base_offset + s.offset;
    sink.Element(Value::Object({{"index", U(i)},
                                {"role", Value::String(SegmentRoleName(s.role))},
                                {"offset", U(s.offset)},
                                {"absolute_offset", U(absolute)},
                                {"size", U(s.size)},
                                {"alignment", U(OffsetAlignment(absolute))}}));
  }
  sink.End();

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
  sink.Member("constants",
              Value::Object({{"tensors", U(constant_tensors)}, {"bytes", U(constant_bytes)}}));

  sink.BeginArray("delegates", delegate_count);
  for (const PteMethod& m : file.methods()) {
    for (size_t i = 0; i < m.delegates.size(); ++i) {
      const PteDelegate& d = m.delegates[i];
      sink.Element(Value::Object(
          {{"method", Value::String(m.name)},
           {"index", U(i)},
           {"backend", Value::String(d.backend)},
           {"location",
            Value::String((d.in_segment ? "segment " : "inline ") + std::to_string(d.index))},
           {"size", U(d.size)}}));
    }
  }
  sink.End();

  sink.BeginArray("named_data", file.named_data().size());
  for (const PteNamedData& n : file.named_data()) {
    sink.Element(Value::Object({{"key", Value::String(n.key)},
                                {"segment", U(n.segment_index)},
                                {"size", U(layout.segments[n.segment_index].size)}}));
  }
  sink.End();

  sink.BeginArray("external_tensors", external_count);
  for (const PteTensor& t : tensors) {
    if (t.data != TensorData::kExternal) continue;
    sink.Element(Value::Object({{"method", Value::String(file.methods()[t.method].name)},
                                {"value", U(t.value)},
                                {"key", Value::String(t.key)},
                                {"tensor_layout", LayoutJson(t.layout)}}));
  }
  sink.End();
  sink.Member("dedup", DedupJson(EntryRanges(file, need)));
  sink.Member("fat_delegates", std::move(fat));
  return Status::OK();
}

void ReportPtd(const PtdFile& f, ReportSink& sink) {
  const FlatTensorHeader& h = f.header();
  const PtdSegmentMap& l = f.layout();
  sink.Member("kind", Value::String("ptd"));
  sink.Member("file", Value::String(f.name()));
  sink.Member("file_size", U(f.size()));
  sink.Member("identifier", Value::String(Identifier(f.head(), f.head_size())));
  sink.Member("header", Value::Object({{"length", U(h.length)},
                                       {"flatbuffer_offset", U(h.flatbuffer_offset)},
                                       {"flatbuffer_size", U(h.flatbuffer_size)},
                                       {"segment_base_offset", U(h.segment_base_offset)},
                                       {"segment_data_size", U(h.segment_data_size)}}));
  sink.BeginArray("segments", l.segments.size());
  for (size_t i = 0; i < l.segments.size(); ++i) {
    const uint64_t absolute = l.segment_base_offset + l.segments[i].offset;
    sink.Element(Value::Object({{"index", U(i)},
                                {"offset", U(l.segments[i].offset)},
                                {"absolute_offset", U(absolute)},
                                {"size", U(l.segments[i].size)},
                                {"alignment", U(OffsetAlignment(absolute))}}));
  }
  sink.End();
  std::vector<ByteRange> ranges;
  ranges.reserve(f.entries().size());
  sink.BeginArray("entries", f.entries().size());
  for (const PtdFile::Entry& e : f.entries()) {
    ranges.push_back({l.segment_base_offset + l.segments[e.segment_index].offset,
                      l.segments[e.segment_index].size});
    sink.Element(
        Value::Object({{"key", Value::String(e.key)},
                       {"segment", U(e.segment_index)},
                       {"size", U(l.segments[e.segment_index].size)},
                       {"tensor_layout", e.layout ? LayoutJson(*e.layout) : Value::Null()}}));
  }
  sink.End();
  sink.Member("dedup", DedupJson(std::move(ranges)));
}

Status ReportBpte(const BpteFile& f, ReportSink& sink) {
  ETPACK_ASSIGN_OR_RETURN(std::vector<BundledTestSuite> suites, f.Suites());
  // The program's report fails only on its fat delegates: checked first,
  // so that a failing report has no members.
  ETPACK_RETURN_IF_ERROR(FatDelegatesJson(f.program()).status());
  sink.Member("kind", Value::String("bpte"));
  sink.Member("file", Value::String(f.name()));
  sink.Member("file_size", U(f.size()));
  sink.Member("layout", Value::String(LayoutName(f.layout())));
  sink.Member("program_offset", U(f.program_offset()));
  sink.Member("program_size", U(f.program_size()));
  sink.BeginArray("test_suites", suites.size());
  for (const BundledTestSuite& s : suites) {
    sink.Element(Value::Object(
        {{"method", Value::String(s.method_name)}, {"cases", U(s.test_cases.size())}}));
  }
  sink.End();
  sink.BeginObject("program");
  ETPACK_RETURN_IF_ERROR(ReportPte(f.program(), sink));
  sink.End();
  return Status::OK();
}

Result<Value> PteReportJson(const PteFile& file) {
  TreeSink sink;
  ETPACK_RETURN_IF_ERROR(ReportPte(file, sink));
  return std::move(sink).Take();
}

Value PtdReportJson(const PtdFile& file) {
  TreeSink sink;
  ReportPtd(file, sink);
  return std::move(sink).Take();
}

Result<Value> BpteReportJson(const BpteFile& file) {
  TreeSink sink;
  ETPACK_RETURN_IF_ERROR(ReportBpte(file, sink));
  return std::move(sink).Take();
}

Status Inspect(const std::string& path, ReportSink& sink, const Env& env) {
  ETPACK_ASSIGN_OR_RETURN(ArtifactKind kind, DetectArtifactKind(path, env));
  switch (kind) {
    case ArtifactKind::kPte: {
      ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<PteFile> file, PteFile::Open(path, env));
      return ReportPte(*file, sink);
    }
    case ArtifactKind::kPtd: {
      ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<PtdFile> file, PtdFile::Open(path, env));
      ReportPtd(*file, sink);
      return Status::OK();
    }
    case ArtifactKind::kBpte: {
      ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<BpteFile> file, BpteFile::Open(path, env));
      return ReportBpte(*file, sink);
    }
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
