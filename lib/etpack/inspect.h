// etpack/inspect.h — what a .pte, .ptd or .bpte holds, as one JSON object:
// the document `etpack inspect --json` prints and etpack.inspect() returns.
//
//   .pte   {"kind": "pte", "file", "file_size", "identifier",
//           "extended_header": {...}, "methods": [...], "segments": [...],
//           "constants": {"tensors", "bytes"}, "delegates": [...],
//           "named_data": [...], "external_tensors": [...], "dedup": {...},
//           "fat_delegates": [...]}
//   .ptd   {"kind": "ptd", "file", "file_size", "identifier", "header": {...},
//           "segments": [...], "entries": [...], "dedup": {...}}
//   .bpte  {"kind": "bpte", "file", "file_size", "layout", "program_offset",
//           "program_size", "test_suites": [...], "program": {.pte report}}
//
// Offsets and sizes are byte counts; a segment's "alignment" is the largest
// power of two (up to 64 KiB) dividing its absolute offset.
//
// "dedup": {"shared_entries": N, "bytes_saved": B} is what shared storage
// saves, read from the file's structure alone: the entries (constants, by
// the bytes their tensors read; delegate calls, by their payload; named-data
// keys and .ptd entries, by their segment) whose bytes lie in bytes an
// entry before them (by offset) already covers. B is the sum of all
// entries' sizes minus the bytes they cover together: what storing each
// entry apart would add, padding not counted. It counts what any writer
// shared: identical named data and delegate payloads (always stored once)
// and constants written with PteOptions::dedup_constants.
//
// "fat_delegates": per delegate whose payload is an NFAT container
// (etpack/nfat.h): {"delegate" (index into AllDelegates), "size",
// "entries": [{"backend_id", "offset", "position", "length", "alignment",
// "file_offset", "file_alignment" (null unless the payload is a range of
// the file), "kind": "program" or "bytes"; a program also has "methods"
// and "external_keys" (distinct, in order of first use)}]}.

#ifndef ETPACK_INSPECT_H_
#define ETPACK_INSPECT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "etpack/artifact_kind.h"
#include "etpack/bpte.h"
#include "etpack/bpte_file.h"
#include "etpack/env.h"
#include "etpack/json.h"
#include "etpack/nfat.h"
#include "etpack/ptd_file.h"
#include "etpack/pte_file.h"
#include "etpack/status.h"
#include "etpack/tensor_layout.h"

namespace etpack {

// The report, typed: what inspect says of a file, filled once by the
// library (ReportPte, ReportPtd, ReportBpte below) and printed by each
// front end its own way (JSON: ReportJson below, as documented above; the
// CLI's text). Each struct is one member or one list element of the JSON
// report, its fields named as the JSON members are.

// The members before the lists: .pte (also a .bpte's program).
struct PteReportHead {
  std::string file;
  uint64_t file_size = 0;
  std::string identifier;  // bytes 4..7, printable ('?' for others)
  ExtendedHeader extended_header;
};
// .ptd
struct PtdReportHead {
  std::string file;
  uint64_t file_size = 0;
  std::string identifier;
  FlatTensorHeader header;
};
// .bpte: its program's report follows as a nested one (BeginProgram).
struct BpteReportHead {
  std::string file;
  uint64_t file_size = 0;
  BpteLayout layout = BpteLayout::kStandard;
  uint64_t program_offset = 0;
  uint64_t program_size = 0;
};

// The lists, in the order each kind's report gives them.
enum class ReportList {
  kMethods,          // .pte: MethodRow
  kSegments,         // .pte, .ptd: SegmentRow
  kDelegates,        // .pte: DelegateRow
  kNamedData,        // .pte: NamedDataRow
  kExternalTensors,  // .pte: ExternalTensorRow
  kEntries,          // .ptd: EntryRow
  kTestSuites,       // .bpte: SuiteRow
};
// The list's JSON key: "methods", "segments", ..., "test_suites".
const char* ReportListName(ReportList list);

struct MethodRow {
  std::string name;
  uint64_t values = 0;
  uint64_t inputs = 0;
  uint64_t outputs = 0;
  uint64_t instructions = 0;
  uint64_t delegates = 0;
};
struct SegmentRow {
  uint64_t index = 0;
  const char* role = nullptr;  // .pte: SegmentRoleName; .ptd: nullptr (none)
  uint64_t offset = 0;         // from the segment base
  uint64_t absolute_offset = 0;
  uint64_t size = 0;
  uint64_t alignment = 0;  // of absolute_offset (see above)
};
struct DelegateRow {
  std::string method;
  uint64_t index = 0;  // within the method
  std::string backend;
  std::string location;  // "segment N" or "inline N"
  uint64_t size = 0;
};
struct NamedDataRow {
  std::string key;
  uint64_t segment = 0;
  uint64_t size = 0;
};
struct ExternalTensorRow {
  std::string method;
  uint64_t value = 0;  // index into the method's values
  std::string key;     // fully_qualified_name; empty when there is none
  TensorLayout tensor_layout;
};
struct EntryRow {
  std::string key;
  uint64_t segment = 0;
  uint64_t size = 0;
  std::optional<TensorLayout> tensor_layout;  // none: an opaque blob
};
struct SuiteRow {
  std::string method;
  uint64_t cases = 0;
};
// .pte: constant tensors and the bytes of the buffers they read.
struct ConstantsSummary {
  uint64_t tensors = 0;
  uint64_t bytes = 0;
};
// "dedup" (above).
struct DedupSummary {
  uint64_t shared_entries = 0;
  uint64_t bytes_saved = 0;
};

// Receives the typed report as it is produced, in the order of the JSON
// report: the head, then each list (BeginList, its rows, EndList) and
// summary in turn; a .bpte's program between BeginProgram and EndProgram.
// A report of a file with a million entries thus never exists whole. Every
// method does nothing unless overridden.
struct FatDelegateReport;
class InspectSink {
 public:
  virtual ~InspectSink() = default;
  virtual void Head(const PteReportHead&) {}
  virtual void Head(const PtdReportHead&) {}
  virtual void Head(const BpteReportHead&) {}
  // `size` rows follow, then EndList().
  virtual void BeginList(ReportList, size_t /*size*/) {}
  virtual void Row(const MethodRow&) {}
  virtual void Row(const SegmentRow&) {}
  virtual void Row(const DelegateRow&) {}
  virtual void Row(const NamedDataRow&) {}
  virtual void Row(const ExternalTensorRow&) {}
  virtual void Row(const EntryRow&) {}
  virtual void Row(const SuiteRow&) {}
  virtual void EndList() {}
  virtual void Constants(const ConstantsSummary&) {}
  virtual void Dedup(const DedupSummary&) {}
  virtual void FatDelegates(const std::vector<FatDelegateReport>&) {}
  virtual void BeginProgram() {}
  virtual void EndProgram() {}
};

// Receives the JSON report (ReportJson) as it is produced, in the order
// above: small members
// whole, long lists (methods, segments, delegates, named data, external
// tensors, entries, test suites) one element at a time, and the .bpte's
// "program" as a nested object. A report of a file with a million entries
// thus never exists whole: JsonSink prints it as it comes, TreeSink builds
// the tree. The sink starts inside the report's (open) object.
class ReportSink {
 public:
  virtual ~ReportSink() = default;
  virtual void Member(std::string_view key, json::Value value) = 0;
  virtual void BeginObject(std::string_view key) = 0;
  // `size` elements follow, then End().
  virtual void BeginArray(std::string_view key, size_t size) = 0;
  virtual void Element(json::Value value) = 0;
  virtual void End() = 0;
};

// The report as one tree.
class TreeSink : public ReportSink {
 public:
  TreeSink();
  void Member(std::string_view key, json::Value value) override;
  void BeginObject(std::string_view key) override;
  void BeginArray(std::string_view key, size_t size) override;
  void Element(json::Value value) override;
  void End() override;
  // The report. REQUIRES: every Begin ended.
  json::Value Take() &&;

 private:
  std::vector<json::Value::Member> open_;  // the root, then each open member
};

// The report as JSON text, exactly as json::Print(tree, indent) prints the
// tree, handed to `write` in pieces as it is produced.
class JsonSink : public ReportSink {
 public:
  JsonSink(json::StreamPrinter::Write write, int indent);
  void Member(std::string_view key, json::Value value) override;
  void BeginObject(std::string_view key) override;
  void BeginArray(std::string_view key, size_t size) override;
  void Element(json::Value value) override;
  void End() override;
  // Closes the report's object (its last piece goes to `write`).
  void Finish();

 private:
  json::StreamPrinter printer_;
};

// The typed report as JSON (the document above), handed on to `out`
// member by member. REQUIRES: `out` outlives this object.
class ReportJson : public InspectSink {
 public:
  explicit ReportJson(ReportSink& out) : out_(out) {}
  void Head(const PteReportHead& head) override;
  void Head(const PtdReportHead& head) override;
  void Head(const BpteReportHead& head) override;
  void BeginList(ReportList list, size_t size) override;
  void Row(const MethodRow& row) override;
  void Row(const SegmentRow& row) override;
  void Row(const DelegateRow& row) override;
  void Row(const NamedDataRow& row) override;
  void Row(const ExternalTensorRow& row) override;
  void Row(const EntryRow& row) override;
  void Row(const SuiteRow& row) override;
  void EndList() override;
  void Constants(const ConstantsSummary& c) override;
  void Dedup(const DedupSummary& d) override;
  void FatDelegates(const std::vector<FatDelegateReport>& fat) override;
  void BeginProgram() override;
  void EndProgram() override;

 private:
  ReportSink& out_;
};

// The report of an opened file into `sink`. Whatever makes a report fail
// is found before its first member: a .pte's fails (kCorrupt) on a
// malformed NFAT container or program entry, naming the delegate, the
// entry and the value; a .bpte's also when the test suites cannot be read.
Status ReportPte(const PteFile& file, InspectSink& sink);
void ReportPtd(const PtdFile& file, InspectSink& sink);
Status ReportBpte(const BpteFile& file, InspectSink& sink);
// Opens `path` as its kind (OpenArtifact, etpack/artifact_kind.h: through
// env.input, validating) and reports it; nothing reaches `sink` when the
// file cannot be opened.
Status Inspect(const std::string& path, InspectSink& sink, const Env& env = {});
// The same as JSON, through ReportJson.
Status Inspect(const std::string& path, ReportSink& sink, const Env& env = {});

// The same reports as trees (TreeSink).
Result<json::Value> PteReportJson(const PteFile& file);
json::Value PtdReportJson(const PtdFile& file);
Result<json::Value> BpteReportJson(const BpteFile& file);

// The delegate calls of every method, in order: "delegate N" in reports
// and on the command line is an index into this list.
std::vector<const PteDelegate*> AllDelegates(const PteFile& file);
// How errors name delegate n: "model.pte: delegate 0 (forward[0] NativeBackend)".
std::string DelegateName(const PteFile& file, size_t n);
// A fat delegate, as the report's "fat_delegates" member states it (above).
struct FatEntryReport {
  NfatEntry entry;
  // In the file, when the payload is a range of it (where a loader that
  // maps the file finds the entry): its offset and the alignment it
  // achieves there.
  bool in_file = false;
  uint64_t file_offset = 0;
  uint64_t file_alignment = 0;
  // The entry is a program (opened, so valid): its methods and EXTERNAL
  // keys, distinct, in order of first use.
  bool program = false;
  std::vector<std::string> methods;
  std::vector<std::string> external_keys;
};
struct FatDelegateReport {
  size_t delegate = 0;  // index into AllDelegates
  uint64_t size = 0;    // of the payload
  std::vector<FatEntryReport> entries;
};
// Every delegate whose payload is an NFAT container, each container and
// program entry opened (validated): kCorrupt names the delegate, the entry
// and the value.
Result<std::vector<FatDelegateReport>> FatDelegates(const PteFile& file);
// The report's "fat_delegates" member (above).
json::Value FatDelegatesJson(const std::vector<FatDelegateReport>& fat);
Result<json::Value> FatDelegatesJson(const PteFile& file);

// Opens `path` as Inspect() does and reports it.
Result<json::Value> InspectJson(const std::string& path, const Env& env = {});

// {"scalar_type", "sizes", "dim_order", "text": DescribeLayout(...)}.
json::Value LayoutJson(const TensorLayout& layout);

}  // namespace etpack

#endif  // ETPACK_INSPECT_H_
