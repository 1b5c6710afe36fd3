#include "report.h"

#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "units.h"

namespace etpack::cli {
namespace {

using json::Value;

// The report's members; it was built by the library, so they are there.
const Value& At(const Value& object, const char* key) { return *object.Find(key); }
uint64_t N(const Value& object, const char* key) { return At(object, key).as_uint(); }
const char* S(const Value& object, const char* key) { return At(object, key).as_string().c_str(); }

// "a, b, c" of an array of strings.
std::string Joined(const std::vector<Value>& items) {
  std::string s;
  for (const Value& x : items) s += (s.empty() ? "" : ", ") + x.as_string();
  return s;
}

// Entries whose bytes another entry holds (inspect.h "dedup").
void PrintDedup(const Value& r) {
  const Value& d = At(r, "dedup");
  const uint64_t shared = N(d, "shared_entries");
  if (shared == 0) {
    std::printf("\ndedup:               no entry shares another's bytes\n");
    return;
  }
  std::printf("\ndedup:               %s in bytes another entry holds, %s saved\n",
              Count(shared, "entry", "entries").c_str(), BytesText(N(d, "bytes_saved")).c_str());
}

// Fat (NFAT) delegates: each container and its entries, when there are any.
void PrintFatDelegates(const Value& r) {
  const auto& fat = At(r, "fat_delegates").items();
  if (fat.empty()) return;
  std::printf("\nfat delegates (%zu):\n", fat.size());
  for (const Value& f : fat) {
    const auto& entries = At(f, "entries").items();
    std::printf("  delegate %" PRIu64 ": NFAT container, %zu entries, %" PRIu64 " bytes\n",
                N(f, "delegate"), entries.size(), N(f, "size"));
    std::printf("    %-32s %12s %12s %14s %9s\n", "backend id", "offset", "length", "file offset",
                "alignment");
    for (const Value& e : entries) {
      // Alignment achieved: in the file when known, else in the container.
      const bool in_file = !At(e, "file_offset").is_null();
      std::printf("    %-32s %12" PRIu64 " %12" PRIu64 " %14s %9" PRIu64 "\n", S(e, "backend_id"),
                  N(e, "offset"), N(e, "length"),
                  in_file ? std::to_string(N(e, "file_offset")).c_str() : "-",
                  in_file ? N(e, "file_alignment") : N(e, "alignment"));
      if (const Value* methods = e.Find("methods")) {
        const auto& keys = At(e, "external_keys").items();
        std::printf("      program: methods %s; %zu external keys%s%s\n",
                    Joined(methods->items()).c_str(), keys.size(), keys.empty() ? "" : ": ",
                    Joined(keys).c_str());
      }
    }
  }
}

void PrintPte(const Value& r) {
  std::printf("file:                %s\n", S(r, "file"));
  std::printf("file size:           %s\n", BytesText(N(r, "file_size")).c_str());
  std::printf("identifier:          %s\n", S(r, "identifier"));
  const Value& h = At(r, "extended_header");
  if (At(h, "present").as_bool()) {
    std::printf("extended header:     present, length %" PRIu64 "\n", N(h, "length"));
    std::printf("  program_size:        %" PRIu64 "\n", N(h, "program_size"));
    std::printf("  segment_base_offset: %" PRIu64 "\n", N(h, "segment_base_offset"));
    std::printf("  segment_data_size:   %" PRIu64 "\n", N(h, "segment_data_size"));
  } else {
    std::printf("extended header:     absent (the whole file is the flatbuffer)\n");
  }

  const auto& methods = At(r, "methods").items();
  std::printf("\nmethods (%zu):\n", methods.size());
  std::printf("  %-24s %8s %7s %8s %13s %10s\n", "name", "values", "inputs", "outputs",
              "instructions", "delegates");
  for (const Value& m : methods) {
    std::printf("  %-24s %8" PRIu64 " %7" PRIu64 " %8" PRIu64 " %13" PRIu64 " %10" PRIu64 "\n",
                S(m, "name"), N(m, "values"), N(m, "inputs"), N(m, "outputs"), N(m, "instructions"),
                N(m, "delegates"));
  }

  const auto& segments = At(r, "segments").items();
  std::printf("\nsegments (%zu):\n", segments.size());
  if (!segments.empty()) {
    std::printf("  %5s  %-10s %14s %14s %14s %9s\n", "index", "role", "offset", "absolute", "size",
                "alignment");
    for (const Value& s : segments) {
      std::printf("  %5" PRIu64 "  %-10s %14" PRIu64 " %14" PRIu64 " %14" PRIu64 " %9" PRIu64 "\n",
                  N(s, "index"), S(s, "role"), N(s, "offset"), N(s, "absolute_offset"),
                  N(s, "size"), N(s, "alignment"));
    }
  }

  const Value& c = At(r, "constants");
  std::printf("\nconstants:           %s, %s\n", Count(N(c, "tensors"), "tensor").c_str(),
              BytesText(N(c, "bytes")).c_str());

  const auto& delegates = At(r, "delegates").items();
  std::printf("\ndelegates (%zu):\n", delegates.size());
  for (const Value& d : delegates) {
    std::printf("  %s[%" PRIu64 "]  %-24s %-12s %" PRIu64 " bytes\n", S(d, "method"), N(d, "index"),
                S(d, "backend"), S(d, "location"), N(d, "size"));
  }

  const auto& named = At(r, "named_data").items();
  std::printf("\nnamed data (%zu):\n", named.size());
  for (const Value& n : named) {
    std::printf("  %-32s segment %-4" PRIu64 " %" PRIu64 " bytes\n", S(n, "key"), N(n, "segment"),
                N(n, "size"));
  }

  const auto& external = At(r, "external_tensors").items();
  std::printf("\nexternal tensors (%zu):\n", external.size());
  for (const Value& e : external) {
    const std::string& key = At(e, "key").as_string();
    std::printf("  %s.values[%" PRIu64 "]  %-32s %s\n", S(e, "method"), N(e, "value"),
                key.empty() ? "(no fully_qualified_name)" : key.c_str(),
                S(At(e, "tensor_layout"), "text"));
  }
  PrintDedup(r);
  PrintFatDelegates(r);
}

void PrintPtd(const Value& r) {
  const Value& h = At(r, "header");
  std::printf("file:                %s\n", S(r, "file"));
  std::printf("file size:           %s\n", BytesText(N(r, "file_size")).c_str());
  std::printf("identifier:          %s\n", S(r, "identifier"));
  std::printf("FH01 header:         length %" PRIu64 "\n", N(h, "length"));
  std::printf("  flatbuffer_offset:   %" PRIu64 "\n", N(h, "flatbuffer_offset"));
  std::printf("  flatbuffer_size:     %" PRIu64 "\n", N(h, "flatbuffer_size"));
  std::printf("  segment_base_offset: %" PRIu64 "\n", N(h, "segment_base_offset"));
  std::printf("  segment_data_size:   %" PRIu64 "\n", N(h, "segment_data_size"));

  const auto& segments = At(r, "segments").items();
  std::printf("\nsegments (%zu):\n", segments.size());
  if (!segments.empty()) {
    std::printf("  %5s %14s %14s %14s %9s\n", "index", "offset", "absolute", "size", "alignment");
    for (const Value& s : segments) {
      std::printf("  %5" PRIu64 " %14" PRIu64 " %14" PRIu64 " %14" PRIu64 " %9" PRIu64 "\n",
                  N(s, "index"), N(s, "offset"), N(s, "absolute_offset"), N(s, "size"),
                  N(s, "alignment"));
    }
  }

  const auto& entries = At(r, "entries").items();
  std::printf("\nentries (%zu):\n", entries.size());
  for (const Value& e : entries) {
    const Value& layout = At(e, "tensor_layout");
    std::printf("  %-40s segment %-5" PRIu64 " %12" PRIu64 " bytes  %s\n", S(e, "key"),
                N(e, "segment"), N(e, "size"),
                layout.is_null() ? "(opaque blob)" : S(layout, "text"));
  }
  PrintDedup(r);
}

void PrintBpte(const Value& r) {
  std::printf("file:                %s (%" PRIu64 " bytes)\n", S(r, "file"), N(r, "file_size"));
  std::printf("format:              bundled program (BP08), %s layout\n", S(r, "layout"));
  std::printf("embedded program:    offset %" PRIu64 ", %" PRIu64 " bytes\n",
              N(r, "program_offset"), N(r, "program_size"));
  const auto& suites = At(r, "test_suites").items();
  std::printf("\ntest suites (%zu):\n", suites.size());
  for (const Value& s : suites) {
    std::printf("  %-24s %" PRIu64 " cases\n", S(s, "method"), N(s, "cases"));
  }
  std::printf("\n--- embedded program ---\n");
  PrintPte(At(r, "program"));
}

}  // namespace

void PrintReport(const Value& report) {
  if (report.Find("format") != nullptr) return PrintBpte(report);
  if (At(report, "kind").as_string() == "ptd") return PrintPtd(report);
  PrintPte(report);
}

}  // namespace etpack::cli
