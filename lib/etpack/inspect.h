// etpack/inspect.h — what a .pte, .ptd or .bpte holds, as one JSON object:
// the document `etpack inspect --json` prints and etpack.inspect() returns.
//
//   .pte   {"kind": "pte", "file", "file_size", "identifier",
//           "extended_header": {...}, "methods": [...], "segments": [...],
//           "constants": {"tensors", "bytes"}, "delegates": [...],
//           "named_data": [...], "external_tensors": [...]}
//   .ptd   {"kind": "ptd", "file", "file_size", "identifier", "header": {...},
//           "segments": [...], "entries": [...]}
//   .bpte  {"file", "format": "bpte", "file_size", "layout", "program_offset",
//           "program_size", "test_suites": [...], "program": {.pte report}}
//
// Offsets and sizes are byte counts; a segment's "alignment" is the largest
// power of two (up to 64 KiB) dividing its absolute offset.

#ifndef ETPACK_INSPECT_H_
#define ETPACK_INSPECT_H_

#include <string>

#include "etpack/bpte_file.h"
#include "etpack/json.h"
#include "etpack/ptd_file.h"
#include "etpack/pte_file.h"
#include "etpack/status.h"
#include "etpack/tensor_layout.h"

namespace etpack {

// What a file is, from its identifier at bytes 4..7.
enum class ArtifactKind { kPte, kPtd, kBpte };

// Fails naming the file when it cannot be read (kNotFound, kIoError), or is
// shorter than 8 bytes or carries none of ET12, FT01, BP08 (kCorrupt).
Result<ArtifactKind> DetectArtifactKind(const std::string& path);

// The alignment a zero-copy loader can count on for data at file offset
// `offset`: the largest power of two dividing it, at most 64 KiB (what the
// reports call "alignment achieved").
uint64_t OffsetAlignment(uint64_t offset);

// The report of an opened file.
json::Value PteReportJson(const PteFile& file);
json::Value PtdReportJson(const PtdFile& file);
// Fails only when the test suites cannot be read.
Result<json::Value> BpteReportJson(const BpteFile& file);

// Detects the kind of `path`, opens (validating) and reports it.
Result<json::Value> InspectJson(const std::string& path);

// {"scalar_type", "sizes", "dim_order", "text": DescribeLayout(...)}.
json::Value LayoutJson(const TensorLayout& layout);

}  // namespace etpack

#endif  // ETPACK_INSPECT_H_
