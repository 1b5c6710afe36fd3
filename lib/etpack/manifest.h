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

#ifndef ETPACK_MANIFEST_H_
#define ETPACK_MANIFEST_H_

#include <string>

#include "etpack/json.h"
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
// the range).
Result<PteManifest> LoadPteManifest(const std::string& path);

// The same for a manifest already parsed; relative file references resolve
// against `base_dir`; `origin` names the document in errors.
Result<PteManifest> PteManifestFromJson(const json::Value& doc,
                                        const std::string& base_dir,
                                        const std::string& origin);

// Replaces every blob object ({"base64"...} or {"file"...}) anywhere in
// `tree` by a blob value. Errors name `origin` and the JSON path.
Status ResolveBlobs(json::Value& tree, const std::string& base_dir,
                    const std::string& origin);

}  // namespace etpack

#endif  // ETPACK_MANIFEST_H_
