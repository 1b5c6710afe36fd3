#include "report.h"

#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "etpack/inspect.h"
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

// The header lines of a .pte, once its extended header is known.
void PrintPteTop(const Value& r) {
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
}

void PrintPtdTop(const Value& r) {
  const Value& h = At(r, "header");
  std::printf("file:                %s\n", S(r, "file"));
  std::printf("file size:           %s\n", BytesText(N(r, "file_size")).c_str());
  std::printf("identifier:          %s\n", S(r, "identifier"));
  std::printf("FH01 header:         length %" PRIu64 "\n", N(h, "length"));
  std::printf("  flatbuffer_offset:   %" PRIu64 "\n", N(h, "flatbuffer_offset"));
  std::printf("  flatbuffer_size:     %" PRIu64 "\n", N(h, "flatbuffer_size"));
  std::printf("  segment_base_offset: %" PRIu64 "\n", N(h, "segment_base_offset"));
  std::printf("  segment_data_size:   %" PRIu64 "\n", N(h, "segment_data_size"));
}

// Prints the report as it arrives: the small members of each object are
// kept until the line that shows them, list elements are printed at once.
class TextSink : public ReportSink {
 public:
  TextSink() { objects_.push_back(Value::Object()); }

  void Member(std::string_view key, Value value) override {
    Value& r = objects_.back();
    r.members().emplace_back(std::string(key), std::move(value));
    if (key == "extended_header") {
      PrintPteTop(r);
    } else if (key == "header") {
      PrintPtdTop(r);
    } else if (key == "constants") {
      const Value& c = At(r, "constants");
      std::printf("\nconstants:           %s, %s\n", Count(N(c, "tensors"), "tensor").c_str(),
                  BytesText(N(c, "bytes")).c_str());
    } else if (key == "dedup") {
      PrintDedup(r);
    } else if (key == "fat_delegates") {
      PrintFatDelegates(r);
    }
  }

  void BeginObject(std::string_view) override {  // a .bpte's program
    std::printf("\n--- embedded program ---\n");
    objects_.push_back(Value::Object());
    open_.push_back("");
  }

  void BeginArray(std::string_view key, size_t n) override {
    open_.emplace_back(key);
    if (key == "methods") {
      std::printf("\nmethods (%zu):\n", n);
      std::printf("  %-24s %8s %7s %8s %13s %10s\n", "name", "values", "inputs", "outputs",
                  "instructions", "delegates");
    } else if (key == "segments") {
      std::printf("\nsegments (%zu):\n", n);
      if (n == 0) return;
      if (Ptd()) {
        std::printf("  %5s %14s %14s %14s %9s\n", "index", "offset", "absolute", "size",
                    "alignment");
      } else {
        std::printf("  %5s  %-10s %14s %14s %14s %9s\n", "index", "role", "offset", "absolute",
                    "size", "alignment");
      }
    } else if (key == "delegates") {
      std::printf("\ndelegates (%zu):\n", n);
    } else if (key == "named_data") {
      std::printf("\nnamed data (%zu):\n", n);
    } else if (key == "external_tensors") {
      std::printf("\nexternal tensors (%zu):\n", n);
    } else if (key == "entries") {
      std::printf("\nentries (%zu):\n", n);
    } else if (key == "test_suites") {
      const Value& r = objects_.back();
      std::printf("file:                %s (%" PRIu64 " bytes)\n", S(r, "file"), N(r, "file_size"));
      std::printf("format:              bundled program (BP08), %s layout\n", S(r, "layout"));
      std::printf("embedded program:    offset %" PRIu64 ", %" PRIu64 " bytes\n",
                  N(r, "program_offset"), N(r, "program_size"));
      std::printf("\ntest suites (%zu):\n", n);
    }
  }

  void Element(Value e) override {
    const std::string& key = open_.back();
    if (key == "methods") {
      std::printf("  %-24s %8" PRIu64 " %7" PRIu64 " %8" PRIu64 " %13" PRIu64 " %10" PRIu64 "\n",
                  S(e, "name"), N(e, "values"), N(e, "inputs"), N(e, "outputs"),
                  N(e, "instructions"), N(e, "delegates"));
    } else if (key == "segments" && Ptd()) {
      std::printf("  %5" PRIu64 " %14" PRIu64 " %14" PRIu64 " %14" PRIu64 " %9" PRIu64 "\n",
                  N(e, "index"), N(e, "offset"), N(e, "absolute_offset"), N(e, "size"),
                  N(e, "alignment"));
    } else if (key == "segments") {
      std::printf("  %5" PRIu64 "  %-10s %14" PRIu64 " %14" PRIu64 " %14" PRIu64 " %9" PRIu64 "\n",
                  N(e, "index"), S(e, "role"), N(e, "offset"), N(e, "absolute_offset"),
                  N(e, "size"), N(e, "alignment"));
    } else if (key == "delegates") {
      std::printf("  %s[%" PRIu64 "]  %-24s %-12s %" PRIu64 " bytes\n", S(e, "method"),
                  N(e, "index"), S(e, "backend"), S(e, "location"), N(e, "size"));
    } else if (key == "named_data") {
      std::printf("  %-32s segment %-4" PRIu64 " %" PRIu64 " bytes\n", S(e, "key"), N(e, "segment"),
                  N(e, "size"));
    } else if (key == "external_tensors") {
      const std::string& k = At(e, "key").as_string();
      std::printf("  %s.values[%" PRIu64 "]  %-32s %s\n", S(e, "method"), N(e, "value"),
                  k.empty() ? "(no fully_qualified_name)" : k.c_str(),
                  S(At(e, "tensor_layout"), "text"));
    } else if (key == "entries") {
      const Value& layout = At(e, "tensor_layout");
      std::printf("  %-40s segment %-5" PRIu64 " %12" PRIu64 " bytes  %s\n", S(e, "key"),
                  N(e, "segment"), N(e, "size"),
                  layout.is_null() ? "(opaque blob)" : S(layout, "text"));
    } else if (key == "test_suites") {
      std::printf("  %-24s %" PRIu64 " cases\n", S(e, "method"), N(e, "cases"));
    }
  }

  void End() override {
    if (open_.back().empty()) objects_.pop_back();
    open_.pop_back();
  }

 private:
  bool Ptd() const {
    const Value* kind = objects_.back().Find("kind");
    return kind != nullptr && kind->as_string() == "ptd";
  }

  std::vector<Value> objects_;     // the report, then a .bpte's program: small members so far
  std::vector<std::string> open_;  // open lists by key; "" for an object
};

}  // namespace

Status PrintReport(const std::string& path) {
  TextSink sink;
  return Inspect(path, sink);
}

}  // namespace etpack::cli
