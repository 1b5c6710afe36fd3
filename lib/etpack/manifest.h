// etpack/manifest.h — `etpack pack` input: a program described as JSON.
//
// For export tools that do not link the library. The manifest is the same
// document as the golden cases' CASE.input.json (docs/manifest.md):
//
//   {"format": "pte",
//    "serializer_options": {"segment_alignment": 128,
//                           "constant_tensor_alignment": 16 | null,
//                           "delegate_alignment": 16 | null,
//                           "extract_delegate_segments": true},
//    "program": {...Program in flatc form...},
//    "mutable_data": [{"storage": BLOB}, ...] | null,
//    "named_data": {"buffers": [BLOB, ...],
//                   "entries": [{"key", "buffer_index", "alignment"}, ...]} | null}
//
// A BLOB is either inline, {"base64": "...", "size": N}, or a file
// reference, {"file": "weights.bin", "offset": N, "length": N} (offset
// defaults to 0, length to the rest of the file; a relative path is relative
// to the manifest's folder). Members the writer does not need
// ("case", "description", "effective_alignments") are ignored.
//
// A .ptd manifest (the golden CASE.input.json of .ptd cases) is
//
//   {"format": "ptd",
//    "serializer_options": {"segment_alignment": 128} | null,
//    "buffers": [BLOB, ...],
//    "entries": [{"key", "buffer_index", "alignment",
//                 "tensor_layout": {"scalar_type", "sizes", "dim_order"} | null}, ...]}
//
// with the same BLOB forms. LoadManifest reads either kind, dispatching on
// "format" ("pte" when absent).
//
// The manifest and every file it references are opened through `env.input`
// (etpack/env.h); the sources made keep what it opened.

#ifndef ETPACK_MANIFEST_H_
#define ETPACK_MANIFEST_H_

#include <string>
#include <variant>

#include "etpack/env.h"
#include "etpack/json.h"
#include "etpack/ptd.h"
#include "etpack/pte.h"
#include "etpack/status.h"

namespace etpack {

struct PteManifest {
  PteInput input;
  PteOptions options;
};

// Reads a manifest file. Every blob becomes a source: base64 decoded now
// (size checked), file references opened now (a missing file or a range
// past its end is an error naming the manifest, the JSON path, the file and
// the range). The program becomes a plain tree: constant_buffer[i].storage
// moves to input.constants[i], backend_delegate_data[i].data to
// input.delegates[i], and any other blob in the program (a small [ubyte]
// field such as CompileSpec.value) is read into an array of byte values.
Result<PteManifest> LoadPteManifest(const std::string& path, const Env& env = {});

// The same for a manifest already parsed; relative file references resolve
// against `base_dir`; `origin` names the document in errors.
Result<PteManifest> PteManifestFromJson(const json::Value& doc, const std::string& base_dir,
                                        const std::string& origin, const Env& env = {});

struct PtdManifest {
  PtdInput input;
  PtdOptions options;
};

// Reads a .ptd manifest. Blobs as for LoadPteManifest. Every entry is
// checked here so errors name the JSON path: key unique and non-empty,
// buffer_index in range, alignment a power of two (default 1), and a
// tensor_layout with a known scalar_type (integer code or name such as
// "FLOAT"), sizes >= 0 within int32, dim_order a permutation of 0..rank-1,
// and a buffer at least as large as the tensor.
Result<PtdManifest> LoadPtdManifest(const std::string& path, const Env& env = {});

// The same for a manifest already parsed (see PteManifestFromJson).
Result<PtdManifest> PtdManifestFromJson(const json::Value& doc, const std::string& base_dir,
                                        const std::string& origin, const Env& env = {});

// Reads a manifest of either format, chosen by its "format" member
// ("pte" when absent; anything but "pte"/"ptd" is an error naming the
// value).
using AnyManifest = std::variant<PteManifest, PtdManifest>;
Result<AnyManifest> LoadManifest(const std::string& path, const Env& env = {});

// The bytes a blob object ({"base64": ..., "size": N} or {"file": ...,
// "offset": N, "length": N}) stands for, as a source: base64 decoded now, a
// file range opened now (relative to `base_dir`). Errors name `origin` and
// `path` (the blob's JSON path).
Result<SourcePtr> BlobSource(const json::Value& blob, const std::string& base_dir,
                             const std::string& origin, const std::string& path = "",
                             const Env& env = {});

}  // namespace etpack

#endif  // ETPACK_MANIFEST_H_
