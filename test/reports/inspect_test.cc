// The inspect report, typed (etpack/inspect.h InspectSink): the library
// fills each struct once and the JSON report is one way of printing it, so
// a front end reads fields, never members by key.

#include "catch.h"

#include <optional>
#include <string>
#include <vector>

#include "etpack/inspect.h"
#include "test_files.h"

namespace etpack {
namespace {

using json::Value;
using testing::GoldenDir;

// Keeps everything the typed report says.
struct Recorder : InspectSink {
  std::optional<PteReportHead> pte;
  std::optional<PtdReportHead> ptd;
  std::optional<BpteReportHead> bpte;
  std::vector<std::string> lists;  // JSON keys, in order
  std::vector<MethodRow> methods;
  std::vector<SegmentRow> segments;
  std::vector<DelegateRow> delegates;
  std::vector<EntryRow> entries;
  std::vector<SuiteRow> suites;
  std::optional<ConstantsSummary> constants;
  std::optional<DedupSummary> dedup;
  std::vector<FatDelegateReport> fat;
  int programs = 0;
  int open = 0;  // lists begun and not ended

  void Head(const PteReportHead& h) override { pte = h; }
  void Head(const PtdReportHead& h) override { ptd = h; }
  void Head(const BpteReportHead& h) override { bpte = h; }
  void BeginList(ReportList list, size_t) override {
    lists.push_back(ReportListName(list));
    ++open;
  }
  void Row(const MethodRow& r) override { methods.push_back(r); }
  void Row(const SegmentRow& r) override { segments.push_back(r); }
  void Row(const DelegateRow& r) override { delegates.push_back(r); }
  void Row(const EntryRow& r) override { entries.push_back(r); }
  void Row(const SuiteRow& r) override { suites.push_back(r); }
  void EndList() override { --open; }
  void Constants(const ConstantsSummary& c) override { constants = c; }
  void Dedup(const DedupSummary& d) override { dedup = d; }
  void FatDelegates(const std::vector<FatDelegateReport>& f) override { fat = f; }
  void BeginProgram() override { ++programs; }
};

const Value& At(const Value& v, const char* key) {
  const Value* m = v.Find(key);
  INFO(key);
  REQUIRE(m != nullptr);
  return *m;
}

TEST_CASE("inspect: the typed report holds what the JSON report prints") {
  SECTION(".pte with fat delegates") {
    const std::string path = GoldenDir() + "/pte_fat.pte";
    Recorder r;
    REQUIRE(Inspect(path, r).ok());
    Result<Value> doc = InspectJson(path);
    REQUIRE(doc.ok());
    REQUIRE(r.pte);
    CHECK(r.pte->file == At(*doc, "file").as_string());
    CHECK(r.pte->file_size == At(*doc, "file_size").as_uint());
    CHECK(r.pte->extended_header.segment_base_offset ==
          At(At(*doc, "extended_header"), "segment_base_offset").as_uint());
    CHECK(r.lists == std::vector<std::string>{"methods", "segments", "delegates", "named_data",
                                              "external_tensors"});
    CHECK(r.open == 0);
    REQUIRE(r.methods.size() == At(*doc, "methods").items().size());
    for (size_t i = 0; i < r.methods.size(); ++i) {
      CHECK(r.methods[i].name == At(At(*doc, "methods").items()[i], "name").as_string());
    }
    REQUIRE(r.segments.size() == At(*doc, "segments").items().size());
    for (size_t i = 0; i < r.segments.size(); ++i) {
      const Value& s = At(*doc, "segments").items()[i];
      REQUIRE(r.segments[i].role != nullptr);
      CHECK(r.segments[i].role == At(s, "role").as_string());
      CHECK(r.segments[i].absolute_offset == At(s, "absolute_offset").as_uint());
    }
    CHECK(r.delegates.size() == At(*doc, "delegates").items().size());
    REQUIRE(r.constants);
    CHECK(r.constants->bytes == At(At(*doc, "constants"), "bytes").as_uint());
    REQUIRE(r.dedup);
    CHECK(r.dedup->bytes_saved == At(At(*doc, "dedup"), "bytes_saved").as_uint());
    REQUIRE(!r.fat.empty());
    CHECK(r.fat.size() == At(*doc, "fat_delegates").items().size());
  }
  SECTION(".ptd: segments without a role, entries with their layouts") {
    const std::string path = GoldenDir() + "/ptd_shared_blob.ptd";
    Recorder r;
    REQUIRE(Inspect(path, r).ok());
    Result<Value> doc = InspectJson(path);
    REQUIRE(doc.ok());
    REQUIRE(r.ptd);
    CHECK(!r.pte);
    CHECK(r.ptd->header.flatbuffer_size == At(At(*doc, "header"), "flatbuffer_size").as_uint());
    CHECK(r.lists == std::vector<std::string>{"segments", "entries"});
    for (const SegmentRow& s : r.segments) CHECK(s.role == nullptr);
    REQUIRE(r.entries.size() == At(*doc, "entries").items().size());
    for (size_t i = 0; i < r.entries.size(); ++i) {
      const Value& e = At(*doc, "entries").items()[i];
      CHECK(r.entries[i].key == At(e, "key").as_string());
      CHECK(r.entries[i].tensor_layout.has_value() == !At(e, "tensor_layout").is_null());
    }
    REQUIRE(r.dedup);
    CHECK(r.dedup->shared_entries == At(At(*doc, "dedup"), "shared_entries").as_uint());
  }
  SECTION(".bpte: its suites, then its program's report") {
    const std::string path = GoldenDir() + "/bpte_basic.bpte";
    Recorder r;
    REQUIRE(Inspect(path, r).ok());
    Result<Value> doc = InspectJson(path);
    REQUIRE(doc.ok());
    REQUIRE(r.bpte);
    CHECK(r.bpte->program_size == At(*doc, "program_size").as_uint());
    CHECK(r.programs == 1);
    REQUIRE(r.pte);  // the embedded program's head
    CHECK(r.pte->file_size == At(At(*doc, "program"), "file_size").as_uint());
    REQUIRE(r.suites.size() == At(*doc, "test_suites").items().size());
    CHECK(r.suites[0].method == At(At(*doc, "test_suites").items()[0], "method").as_string());
    CHECK(r.lists.front() == "test_suites");
  }
}

}  // namespace
}  // namespace etpack
