#include "etpack/inspect.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "layout/layout.h"
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
  const PteLayout& layout = file.layout();
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

uint64_t OffsetAlignment(uint64_t offset) {
  // Capped: pages beyond 64 KiB are not in use.
  constexpr uint64_t kCap = 65536;
  return std::min(AlignmentOf(offset), kCap);
}

Result<ArtifactKind> DetectArtifactKind(const std::string& path) {
  // FileSource refuses anything but a regular file before reading it.
  ETPACK_ASSIGN_OR_RETURN(const SourcePtr file, FileSource(path));
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

Result<Value> PteReportJson(const PteFile& file) {
  ETPACK_ASSIGN_OR_RETURN(Value fat, FatDelegatesJson(file));
  const ExtendedHeader& header = file.header();
  const PteLayout& layout = file.layout();
  std::vector<Value> methods, delegates, segments, named, external;
  for (const PteMethod& m : file.methods()) {
    methods.push_back(Value::Object({{"name", Value::String(m.name)},
                                     {"values", U(m.value_count)},
                                     {"inputs", U(m.inputs.size())},
                                     {"outputs", U(m.outputs.size())},
                                     {"instructions", U(m.instruction_count)},
                                     {"delegates", U(m.delegates.size())}}));
    for (size_t i = 0; i < m.delegates.size(); ++i) {
      const PteDelegate& d = m.delegates[i];
      delegates.push_back(Value::Object(
          {{"method", Value::String(m.name)},
           {"index", U(i)},
           {"backend", Value::String(d.backend)},
           {"location",
            Value::String((d.in_segment ? "segment " : "inline ") + std::to_string(d.index))},
           {"size", U(d.size)}}));
    }
  }

  uint64_t constant_tensors = 0, constant_bytes = 0;
  std::set<uint32_t> constant_buffers;
  // By constant buffer: the most bytes a tensor reads from it.
  std::vector<uint64_t> need(file.constant_buffers().size(), 0);
  for (const PteTensor& t : file.Tensors()) {
    if (t.data == TensorData::kExternal) {
      external.push_back(Value::Object({{"method", Value::String(file.methods()[t.method].name)},
                                        {"value", U(t.value)},
                                        {"key", Value::String(t.key)},
                                        {"tensor_layout", LayoutJson(t.layout)}}));
    } else if (t.data == TensorData::kConstant) {
      ++constant_tensors;
      constant_buffers.insert(t.buffer_index);
      if (t.buffer_index < need.size()) {
        need[t.buffer_index] = std::max(need[t.buffer_index], t.nbytes.value_or(0));
      }
    }
  }
  for (uint32_t idx : constant_buffers) {
    if (idx < file.constant_buffers().size()) constant_bytes += file.constant_buffers()[idx].size;
  }

  for (size_t i = 0; i < layout.segments.size(); ++i) {
    const PteLayout::Segment& s = layout.segments[i];
    const uint64_t absolute = header.segment_base_offset + s.offset;
    segments.push_back(Value::Object({{"index", U(i)},
                                      {"role", Value::String(SegmentRoleName(s.role))},
                                      {"offset", U(s.offset)},
                                      {"absolute_offset", U(absolute)},
                                      {"size", U(s.size)},
                                      {"alignment", U(OffsetAlignment(absolute))}}));
  }
  for (const PteNamedData& n : file.named_data()) {
    named.push_back(Value::Object({{"key", Value::String(n.key)},
                                   {"segment", U(n.segment_index)},
                                   {"size", U(layout.segments[n.segment_index].size)}}));
  }
  return Value::Object({
      {"kind", Value::String("pte")},
      {"file", Value::String(file.name())},
      {"file_size", U(file.size())},
      {"identifier", Value::String(Identifier(file.head(), file.head_size()))},
      {"extended_header", Value::Object({{"present", Value::Bool(header.present)},
                                         {"length", U(header.length)},
                                         {"program_size", U(header.program_size)},
                                         {"segment_base_offset", U(header.segment_base_offset)},
                                         {"segment_data_size", U(header.segment_data_size)}})},
      {"methods", Value::Array(std::move(methods))},
      {"segments", Value::Array(std::move(segments))},
      {"constants",
       Value::Object({{"tensors", U(constant_tensors)}, {"bytes", U(constant_bytes)}})},
      {"delegates", Value::Array(std::move(delegates))},
      {"named_data", Value::Array(std::move(named))},
      {"external_tensors", Value::Array(std::move(external))},
      {"dedup", DedupJson(EntryRanges(file, need))},
      {"fat_delegates", std::move(fat)},
  });
}

Value PtdReportJson(const PtdFile& f) {
  const FlatTensorHeader& h = f.header();
  const PtdLayout& l = f.layout();
  std::vector<Value> segments, entries;
  std::vector<ByteRange> ranges;
  for (size_t i = 0; i < l.segments.size(); ++i) {
    const uint64_t absolute = l.segment_base_offset + l.segments[i].offset;
    segments.push_back(Value::Object({{"index", U(i)},
                                      {"offset", U(l.segments[i].offset)},
                                      {"absolute_offset", U(absolute)},
                                      {"size", U(l.segments[i].size)},
                                      {"alignment", U(OffsetAlignment(absolute))}}));
  }
  for (const PtdFile::Entry& e : f.entries()) {
    ranges.push_back({l.segment_base_offset + l.segments[e.segment_index].offset,
                      l.segments[e.segment_index].size});
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
      {"identifier", Value::String(Identifier(f.head(), f.head_size()))},
      {"header", Value::Object({{"length", U(h.length)},
                                {"flatbuffer_offset", U(h.flatbuffer_offset)},
                                {"flatbuffer_size", U(h.flatbuffer_size)},
                                {"segment_base_offset", U(h.segment_base_offset)},
                                {"segment_data_size", U(h.segment_data_size)}})},
      {"segments", Value::Array(std::move(segments))},
      {"entries", Value::Array(std::move(entries))},
      {"dedup", DedupJson(std::move(ranges))},
  });
}

Result<Value> BpteReportJson(const BpteFile& f) {
  ETPACK_ASSIGN_OR_RETURN(std::vector<BundledTestSuite> suites, f.Suites());
  ETPACK_ASSIGN_OR_RETURN(Value program, PteReportJson(f.program()));
  std::vector<Value> list;
  for (const BundledTestSuite& s : suites) {
    list.push_back(Value::Object(
        {{"method", Value::String(s.method_name)}, {"cases", U(s.test_cases.size())}}));
  }
  return Value::Object({{"file", Value::String(f.name())},
                        {"format", Value::String("bpte")},
                        {"file_size", U(f.size())},
                        {"layout", Value::String(LayoutName(f.layout()))},
                        {"program_offset", U(f.program_offset())},
                        {"program_size", U(f.program_size())},
                        {"test_suites", Value::Array(std::move(list))},
                        {"program", std::move(program)}});
}

Result<Value> InspectJson(const std::string& path) {
  ETPACK_ASSIGN_OR_RETURN(ArtifactKind kind, DetectArtifactKind(path));
  switch (kind) {
    case ArtifactKind::kPte: {
      ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<PteFile> file, PteFile::Open(path));
      return PteReportJson(*file);
    }
    case ArtifactKind::kPtd: {
      ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<PtdFile> file, PtdFile::Open(path));
      return PtdReportJson(*file);
    }
    case ArtifactKind::kBpte: {
      ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<BpteFile> file, BpteFile::Open(path));
      return BpteReportJson(*file);
    }
  }
  return InvalidArgument(path + ": unknown artifact kind");
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
