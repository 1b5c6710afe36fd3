#include "report.h"

#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "etpack/inspect.h"
#include "etpack/list_text.h"
#include "etpack/tensor_layout.h"
#include "units.h"

namespace etpack::cli {
namespace {

// Prints the typed report (etpack/inspect.h) as it arrives: each head as
// its lines, each list under its title, each row as a line.
class TextSink : public InspectSink {
 public:
  void Head(const PteReportHead& h) override {
    std::printf("file:                %s\n", h.file.c_str());
    std::printf("file size:           %s\n", BytesText(h.file_size).c_str());
    std::printf("identifier:          %s\n", h.identifier.c_str());
    const ExtendedHeader& x = h.extended_header;
    if (x.present) {
      std::printf("extended header:     present, length %" PRIu32 "\n", x.length);
      std::printf("  program_size:        %" PRIu64 "\n", x.program_size);
      std::printf("  segment_base_offset: %" PRIu64 "\n", x.segment_base_offset);
      std::printf("  segment_data_size:   %" PRIu64 "\n", x.segment_data_size);
    } else {
      std::printf("extended header:     absent (the whole file is the flatbuffer)\n");
    }
  }

  void Head(const PtdReportHead& h) override {
    const FlatTensorHeader& x = h.header;
    std::printf("file:                %s\n", h.file.c_str());
    std::printf("file size:           %s\n", BytesText(h.file_size).c_str());
    std::printf("identifier:          %s\n", h.identifier.c_str());
    std::printf("FH01 header:         length %" PRIu32 "\n", x.length);
    std::printf("  flatbuffer_offset:   %" PRIu64 "\n", x.flatbuffer_offset);
    std::printf("  flatbuffer_size:     %" PRIu64 "\n", x.flatbuffer_size);
    std::printf("  segment_base_offset: %" PRIu64 "\n", x.segment_base_offset);
    std::printf("  segment_data_size:   %" PRIu64 "\n", x.segment_data_size);
  }

  void Head(const BpteReportHead& h) override {
    std::printf("file:                %s (%" PRIu64 " bytes)\n", h.file.c_str(), h.file_size);
    std::printf("format:              bundled program (BP08), %s layout\n",
                h.layout == BpteLayout::kStandard ? "standard" : "segmented");
    std::printf("embedded program:    offset %" PRIu64 ", %" PRIu64 " bytes\n", h.program_offset,
                h.program_size);
  }

  void BeginList(ReportList list, size_t n) override {
    switch (list) {
      case ReportList::kMethods:
        std::printf("\nmethods (%zu):\n", n);
        std::printf("  %-24s %8s %7s %8s %13s %10s\n", "name", "values", "inputs", "outputs",
                    "instructions", "delegates");
        break;
      case ReportList::kSegments:
        std::printf("\nsegments (%zu):\n", n);
        segments_titled_ = n == 0;  // the columns depend on the first row
        break;
      case ReportList::kDelegates: std::printf("\ndelegates (%zu):\n", n); break;
      case ReportList::kNamedData: std::printf("\nnamed data (%zu):\n", n); break;
      case ReportList::kExternalTensors: std::printf("\nexternal tensors (%zu):\n", n); break;
      case ReportList::kEntries: std::printf("\nentries (%zu):\n", n); break;
      case ReportList::kTestSuites: std::printf("\ntest suites (%zu):\n", n); break;
    }
  }

  void Row(const MethodRow& r) override {
    std::printf("  %-24s %8" PRIu64 " %7" PRIu64 " %8" PRIu64 " %13" PRIu64 " %10" PRIu64 "\n",
                r.name.c_str(), r.values, r.inputs, r.outputs, r.instructions, r.delegates);
  }

  void Row(const SegmentRow& r) override {
    // A .ptd's segments have no role.
    if (!segments_titled_) {
      segments_titled_ = true;
      if (r.role == nullptr) {
        std::printf("  %5s %14s %14s %14s %9s\n", "index", "offset", "absolute", "size",
                    "alignment");
      } else {
        std::printf("  %5s  %-10s %14s %14s %14s %9s\n", "index", "role", "offset", "absolute",
                    "size", "alignment");
      }
    }
    if (r.role == nullptr) {
      std::printf("  %5" PRIu64 " %14" PRIu64 " %14" PRIu64 " %14" PRIu64 " %9" PRIu64 "\n",
                  r.index, r.offset, r.absolute_offset, r.size, r.alignment);
    } else {
      std::printf("  %5" PRIu64 "  %-10s %14" PRIu64 " %14" PRIu64 " %14" PRIu64 " %9" PRIu64 "\n",
                  r.index, r.role, r.offset, r.absolute_offset, r.size, r.alignment);
    }
  }

  void Row(const DelegateRow& r) override {
    std::printf("  %s[%" PRIu64 "]  %-24s %-12s %" PRIu64 " bytes\n", r.method.c_str(), r.index,
                r.backend.c_str(), r.location.c_str(), r.size);
  }

  void Row(const NamedDataRow& r) override {
    std::printf("  %-32s segment %-4" PRIu64 " %" PRIu64 " bytes\n", r.key.c_str(), r.segment,
                r.size);
  }

  void Row(const ExternalTensorRow& r) override {
    std::printf("  %s.values[%" PRIu64 "]  %-32s %s\n", r.method.c_str(), r.value,
                r.key.empty() ? "(no fully_qualified_name)" : r.key.c_str(),
                DescribeLayout(r.tensor_layout).c_str());
  }

  void Row(const EntryRow& r) override {
    std::printf("  %-40s segment %-5" PRIu64 " %12" PRIu64 " bytes  %s\n", r.key.c_str(), r.segment,
                r.size,
                r.tensor_layout ? DescribeLayout(*r.tensor_layout).c_str() : "(opaque blob)");
  }

  void Row(const SuiteRow& r) override {
    std::printf("  %-24s %" PRIu64 " cases\n", r.method.c_str(), r.cases);
  }

  void Constants(const ConstantsSummary& c) override {
    std::printf("\nconstants:           %s, %s\n", Count(c.tensors, "tensor").c_str(),
                BytesText(c.bytes).c_str());
  }

  // Entries whose bytes another entry holds (inspect.h "dedup").
  void Dedup(const DedupSummary& d) override {
    if (d.shared_entries == 0) {
      std::printf("\ndedup:               no entry shares another's bytes\n");
      return;
    }
    std::printf("\ndedup:               %s in bytes another entry holds, %s saved\n",
                Count(d.shared_entries, "entry", "entries").c_str(),
                BytesText(d.bytes_saved).c_str());
  }

  // Fat (NFAT) delegates: each container and its entries, when there are any.
  void FatDelegates(const std::vector<FatDelegateReport>& fat) override {
    if (fat.empty()) return;
    std::printf("\nfat delegates (%zu):\n", fat.size());
    for (const FatDelegateReport& f : fat) {
      std::printf("  delegate %zu: NFAT container, %zu entries, %" PRIu64 " bytes\n", f.delegate,
                  f.entries.size(), f.size);
      std::printf("    %-32s %12s %12s %14s %9s\n", "backend id", "offset", "length", "file offset",
                  "alignment");
      for (const FatEntryReport& e : f.entries) {
        // Alignment achieved: in the file when known, else in the container.
        std::printf("    %-32s %12" PRIu64 " %12" PRIu64 " %14s %9" PRIu64 "\n",
                    e.entry.backend_id.c_str(), e.entry.offset, e.entry.length,
                    e.in_file ? std::to_string(e.file_offset).c_str() : "-",
                    e.in_file ? e.file_alignment : e.entry.alignment);
        if (e.program) {
          std::printf("      program: methods %s; %zu external keys%s%s\n",
                      ListText(e.methods).c_str(), e.external_keys.size(),
                      e.external_keys.empty() ? "" : ": ", ListText(e.external_keys).c_str());
        }
      }
    }
  }

  void BeginProgram() override { std::printf("\n--- embedded program ---\n"); }

 private:
  bool segments_titled_ = false;
};

}  // namespace

Status PrintReport(const std::string& path, const Env& env) {
  TextSink sink;
  return Inspect(path, sink, env);
}

}  // namespace etpack::cli
