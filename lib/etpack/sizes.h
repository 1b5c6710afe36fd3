// etpack/sizes.h — where every byte of a .pte, .ptd or .bpte goes, and which
// bytes several files hold alike: what `etpack inspect --sizes` prints.
//
// A SizeReport partitions its file: its rows, in order of offset, cover
// [0, file_size) exactly once (no overlap, no gap), so their sizes sum to
// the file size. Every function returning one checks that (CheckPartition)
// before it returns; a failure there is a bug of this library, never the
// file's, reported as kInvalidArgument "internal error: ...". The rows:
//
//   header           root offset, file identifier and the format's header
//                    (eh00, FH01, bh00)
//   flatbuffer       the rest of the flatbuffer (tables, vectors, strings)
//   constant         a constant's bytes: what the tensors reading it read,
//                    in the constant segment or inline in the flatbuffer
//   mutable          a memory-planned tensor's initial value
//   delegate         a delegate's payload (segment or inline), with its
//                    backend id and the method calling it; a fat delegate
//                    (etpack/nfat.h) a row per entry, "<method>[i]
//                    entries[k]" with the entry's backend id, and its table
//                    and padding as rows "<method>[i] NFAT container"
//   named_data       a .pte named-data key's segment
//   entry            a .ptd entry's segment (a tensor or an opaque blob)
//   integrity_table  the integrity table (docs/integrity.md)
//   test_data        a .bpte test input or expected output
//   padding          bytes between the items above (alignment)
//   unreferenced     bytes no structure of the file refers to: a segment
//                    nothing uses, bytes after the last segment
//
// Several items stored in the same bytes (named-data keys sharing a
// segment, constants written with dedup, delegates sharing a payload) are
// one row: the first item (by offset, then the larger) names it and the
// others are listed in `shared_with`. A .bpte's embedded program is broken
// down as a .pte is; its rows have `in_program` set (offsets stay from the
// .bpte's first byte).
//
// Cost: SizesOf reads nothing beyond what PteFile/PtdFile/BpteFile::Open
// read (headers and flatbuffers). SharedAcrossFiles reads only items whose
// sizes agree, three 4 KiB samples each, then each item whose sample
// another has once, all of them compared in lockstep in bounded chunks
// (plan/content_groups.h), skipping items that lie on the same physical
// blocks as another. Memory grows with the number of rows (about 0.7 KB
// each), never with the bytes of an item.

#ifndef ETPACK_SIZES_H_
#define ETPACK_SIZES_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "etpack/bpte_file.h"
#include "etpack/env.h"
#include "etpack/inspect.h"
#include "etpack/json.h"
#include "etpack/ptd_file.h"
#include "etpack/pte_file.h"
#include "etpack/status.h"
#include "etpack/tensor_layout.h"

namespace etpack {

enum class SizeKind {
  kHeader,
  kFlatbuffer,
  kConstant,
  kMutable,
  kDelegate,
  kNamedData,
  kEntry,
  kIntegrityTable,
  kTestData,
  kPadding,
  kUnreferenced,
};
inline constexpr int kSizeKinds = 11;
const char* SizeKindName(SizeKind kind);  // "header", "constant", ... as above

// One row: bytes [offset, offset + size) of the file.
struct SizeRow {
  uint64_t offset = 0;  // from the file's first byte
  uint64_t size = 0;
  SizeKind kind = SizeKind::kPadding;
  // What the table calls it: the key when there is one, else
  // "constant_buffer[k]", "mutable_buffer[k]", a delegate's "<method>[i]",
  // a test value's "<method> test_cases[c].inputs[i]", "segment k"; ""
  // for header, flatbuffer and padding.
  std::string name;
  // The key a loader finds it by: a named-data or .ptd key, or a tensor's
  // fully_qualified_name; "" when it has none.
  std::string key;
  std::string method;               // constant, mutable, delegate, test_data: the (first) method
  std::string backend;              // delegate: the backend id
  std::optional<uint32_t> segment;  // the segment holding it, when in one
  std::optional<TensorLayout> tensor_layout;  // constant, mutable, entry, test_data
  std::vector<std::string> shared_with;       // names of other items stored in these bytes
  bool in_program = false;                    // .bpte: inside the embedded program
};

struct SizeReport {
  std::string file;
  ArtifactKind kind = ArtifactKind::kPte;
  uint64_t file_size = 0;
  std::vector<SizeRow> rows;  // by offset; sizes sum to file_size
};

// The report of an opened file. Fails (kCorrupt) on a malformed fat
// delegate container, naming the delegate and the entry, as inspect's
// report does; otherwise only on a bug (see above).
Result<SizeReport> SizesOf(const PteFile& file);
Result<SizeReport> SizesOf(const PtdFile& file);
Result<SizeReport> SizesOf(const BpteFile& file);
// Opens `path` as its kind (OpenArtifact, etpack/artifact_kind.h: once,
// through `env.input`) and reports it.
Result<SizeReport> SizesOf(const std::string& path, const Env& env = {});

// The same, keeping the file open for reading its items: the reader
// report.kind names (a PteFile, PtdFile or BpteFile).
struct SizedFile {
  std::unique_ptr<ArtifactFile> file;
  SizeReport report;
};
Result<SizedFile> OpenSized(const std::string& path, const Env& env = {});

// kInvalidArgument naming the first row that overlaps the previous one,
// leaves a gap or runs past the end, or rows that do not sum to file_size.
Status CheckPartition(const SizeReport& report);

// Rows below `below` bytes, summed per kind: what a table shows instead of
// them. Kinds in SizeKind order; only kinds with such rows.
struct SizeGroup {
  SizeKind kind = SizeKind::kPadding;
  uint64_t rows = 0;
  uint64_t size = 0;
};
// The threshold `inspect --sizes` groups below: 0 (no grouping) for a
// report of at most kFewRows rows, else 0.1% of the file size.
inline constexpr size_t kFewRows = 40;
uint64_t SmallRowBytes(const SizeReport& report);
std::vector<SizeGroup> SmallRows(const SizeReport& report, uint64_t below);
// Every kind's rows and bytes (kinds with none left out), in SizeKind order.
std::vector<SizeGroup> KindTotals(const SizeReport& report);

// Bytes that several files hold alike, found by content.
struct SharedItem {
  uint32_t file = 0;  // index into the files given
  SizeKind kind = SizeKind::kConstant;
  std::string name;  // as SizeRow
  std::string key;
  uint64_t offset = 0;
  std::optional<TensorLayout> tensor_layout;
};
struct SharedContent {
  uint64_t size = 0;    // bytes of one copy
  uint64_t copies = 0;  // stored copies over all files (an item shared inside a file counts once)
  std::vector<uint32_t> files;    // the files holding it, ascending
  std::vector<SharedItem> items;  // every item holding it, by file then offset
  // Whether a cross-file `share` moves it to one shared copy, and if not why:
  //   "delegate payloads have no external form"
  //   "mutable data has no external form"
  //   "no tensor reads it" (a constant buffer no tensor of its program reads)
  //   "tensor layouts differ" (the same bytes read as different tensors)
  //   "its key names different bytes in another file" (see conflicts)
  //   "below min_bytes"
  bool shareable = false;
  std::string reason;
  uint64_t bytes_saved = 0;  // shareable: (copies - 1) * size; else 0
};
// A named-data or .ptd key naming different bytes (or layouts) in
// different files: share leaves the key's items where they are, or refuses
// when .ptd entries disagree (`entry_files`). A constant's
// fully_qualified_name naming different bytes is no conflict: share gives
// such a constant a key made from its content (etpack/share.h).
struct KeyConflict {
  std::string key;
  std::vector<uint32_t> files;  // every file holding the key, ascending
  // The .ptd files (two or more, ascending) whose entries of the key hold
  // different bytes or layouts from each other; empty when the .ptd
  // entries agree (the conflict is with named data).
  std::vector<uint32_t> entry_files;
};
struct SharedReport {
  std::vector<std::string> files;
  // Contents held by two or more files, largest (size * copies) first.
  std::vector<SharedContent> contents;
  std::vector<KeyConflict> conflicts;  // by key
  uint64_t bytes_saved = 0;            // sum over shareable contents
  uint64_t bytes_not_saved = 0;        // (copies - 1) * size over the others
};
struct SharedOptions {
  // Contents smaller than this are reported, not shareable ("below
  // min_bytes"): etpack share's --min-bytes default.
  uint64_t min_bytes = 4096;
};
// Data items are the rows of kind constant, named_data, entry, delegate and
// mutable (test data and the rest are not). Two items hold the same content
// when their bytes are equal (size, sample, then the same physical blocks
// or a byte comparison); an item of a tensor (constant, entry) is shared across
// files only with items of the same tensor layout or none. `files` and
// `reports` are parallel: reports[i] = SizesOf(*files[i]).
// REQUIRES: the ArtifactFile behind reports[i] is files[i].
Result<SharedReport> SharedAcrossFiles(const std::vector<const ArtifactFile*>& files,
                                       const std::vector<SizeReport>& reports,
                                       const SharedOptions& options = {});

// The reports of `paths` (each opened as SizesOf(path) does) and, for two
// or more, what they hold alike (SharedAcrossFiles); each file is opened
// once. Fails on the first file that cannot be opened, naming it.
struct FileSizes {
  std::vector<SizeReport> reports;  // in the order of `paths`
  SharedReport shared;              // empty for fewer than two files
};
Result<FileSizes> SizesOfFiles(const std::vector<std::string>& paths,
                               const SharedOptions& options = {}, const Env& env = {});

// JSON: a report as {"file", "kind", "file_size", "small_row_bytes",
// "rows": [{"offset", "size", "kind", "name", "key", "method", "backend",
// "segment", "tensor_layout", "shared_with", "in_program"}] (members that
// do not apply left out), "grouped": [{"kind", "rows", "size"}],
// "by_kind": [...same...]}. Rows below `small_row_bytes` are in "grouped"
// instead of "rows" (0: every row in "rows").
json::Value SizeReportJson(const SizeReport& report, uint64_t small_row_bytes);
// {"files": [...], "contents": [{"size", "copies", "files", "shareable",
// "reason", "bytes_saved", "items": [{"file", "kind", "name", "key", "offset",
// "tensor_layout"}]}], "conflicts": [{"key", "files", "entry_files"}], "bytes_saved",
// "bytes_not_saved"}.
json::Value SharedReportJson(const SharedReport& report);

}  // namespace etpack

#endif  // ETPACK_SIZES_H_
