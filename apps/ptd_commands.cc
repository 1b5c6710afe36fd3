// The .ptd side of the tool: `etpack ptd` (safetensors in, .ptd out) and
// the .ptd halves of `inspect` and `verify`.

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "commands.h"
#include "etpack/json.h"
#include "layout/layout.h"
#include "etpack/ptd.h"
#include "etpack/safetensors.h"
#include "etpack/writer.h"
#include "progress.h"

namespace etpack::cli {
namespace {

// The largest power of two dividing `offset`, capped (as for .pte segments).
uint64_t OffsetAlignment(uint64_t offset) {
  constexpr uint64_t kCap = 65536;
  if (offset == 0) return kCap;
  return std::min(offset & (~offset + 1), kCap);
}

std::string Identifier(const PtdFile& f) {
  std::string id;
  for (size_t i = 4; i < 8 && i < f.size(); ++i) {
    const char c = static_cast<char>(f.data()[i]);
    id += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return id;
}

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
    entries.push_back(Value::Object(
        {{"key", Value::String(e.key)},
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

}  // namespace

int InspectPtd(const std::string& path, bool as_json) {
  Result<std::unique_ptr<PtdFile>> file = PtdFile::Open(path);
  if (!file.ok()) return Failure(file.status());
  if (as_json) {
    std::printf("%s\n", json::Print(PtdReportJson(**file), 2).c_str());
  } else {
    PrintPtdReport(**file);
  }
  return kExitOk;
}

int VerifyPtd(const std::string& path) {
  Result<std::unique_ptr<PtdFile>> file = PtdFile::Open(path);
  if (!file.ok()) return Invalid(path, file.status());
  const PtdFile& f = **file;
  std::printf("%s: ok (.ptd, %zu entries, %zu segments, %" PRIu64 " bytes)\n", path.c_str(),
              f.entries().size(), f.layout().segments.size(), f.size());
  return kExitOk;
}

int Ptd(const std::vector<std::string>& argv) {
  Result<Args> args = ParseArgs(argv, {"-o", "--output", "--align"}, {});
  if (!args.ok()) return UsageError("ptd: " + args.status().message());
  if (args->positional.empty()) {
    return UsageError("ptd: give at least one .safetensors file or model.safetensors.index.json");
  }
  const std::string* out = args->Value("-o");
  if (!out) out = args->Value("--output");
  if (!out || out->empty()) return UsageError("ptd: missing -o OUT.ptd");
  uint64_t align = 1;
  if (const std::string* text = args->Value("--align")) {
    Result<uint64_t> parsed = ParseByteSize(*text, "--align");
    if (!parsed.ok()) return UsageError("ptd: " + parsed.status().message());
    if (Status s = CheckAlignment(*parsed, "--align"); !s.ok()) {
      return UsageError("ptd: " + s.message());
    }
    align = *parsed;
  }

  const auto start = std::chrono::steady_clock::now();
  Result<std::vector<SafetensorsTensor>> tensors = ReadCheckpoint(args->positional);
  if (!tensors.ok()) return Failure(tensors.status());
  const PtdInput input = PtdInputFromCheckpoint(*tensors, align);
  // The segment base and every segment start are multiples of the segment
  // alignment, so raising it to N places each tensor N-aligned in the file.
  PtdOptions options;
  options.segment_alignment = std::max<uint64_t>(128, align);
  Result<PtdPlan> plan = PlanPtd(input, options);
  if (!plan.ok()) return Failure(plan.status().WithContext(*out));
  const double read_s = SecondsSince(start);

  uint64_t tensor_bytes = 0;
  std::set<std::string> shards;
  for (const SafetensorsTensor& t : *tensors) {
    tensor_bytes += t.data->size();
    shards.insert(t.file);
  }
  const auto write_start = std::chrono::steady_clock::now();
  {
    ProgressLine progress("writing " + *out);
    Status s = WriteArtifactFile(*out, plan->artifact, FileSinkOptions{}, progress.callback());
    if (!s.ok()) return Failure(s);
  }
  const double write_s = SecondsSince(write_start);
  const double mib_s =
      write_s > 0 ? static_cast<double>(tensor_bytes) / (1024.0 * 1024.0) / write_s : 0;

  std::printf("read:    %zu tensors from %zu safetensors files, %s of tensor data\n",
              tensors->size(), shards.size(), BytesText(tensor_bytes).c_str());
  std::printf("wrote:   %s\n", out->c_str());
  std::printf("  file size:           %s\n", BytesText(plan->artifact.file_size).c_str());
  std::printf("  segments:            %zu, segment alignment %" PRIu64
              ", tensor alignment %" PRIu64 "\n",
              plan->layout.segments.size(), options.segment_alignment, align);
  std::printf("  segment base offset: %" PRIu64 "\n", plan->layout.segment_base_offset);
  std::printf("time:    read headers + plan %.3f s, write %.3f s (%.0f MiB/s), total %.3f s\n",
              read_s, write_s, mib_s, SecondsSince(start));
  std::printf("memory:  peak RSS %.1f MiB\n", PeakRssMiB());
  return kExitOk;
}

}  // namespace etpack::cli
