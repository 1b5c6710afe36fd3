// etpack/ptd.h — ExecuTorch external data files (.ptd): plan and write.
// Reading is etpack/ptd_file.h.
//
// A .ptd holds named byte segments, usually a model's weights, that
// programs refer to by key (a .pte tensor marked EXTERNAL names its key in
// extra_tensor_info.fully_qualified_name). Writing is the same two passes as
// for a .pte:
//
//   ETPACK_ASSIGN_OR_RETURN(PtdPlan plan, PlanPtd(input, options));
//   ETPACK_RETURN_IF_ERROR(WriteArtifactFile("weights.ptd", plan.artifact));
//
// Layout (docs/formats.md §3.3, as the reference serializer writes it):
//   [0, 8)        root offset | "FT01"
//   [8, 48)       FH01 header: magic, length 40, flatbuffer_offset (48),
//                 flatbuffer_size, segment_base_offset, segment_data_size
//   [48, ...)     the rest of the FlatTensor flatbuffer
//   base          = align_up(48 + flatbuffer_size, segment_alignment)
//   segments      one per distinct content in entry order, segment j at
//                 align_up(end of j-1, lcm(segment_alignment, alignment of
//                 the first entry using the buffer)); none after the last.

#ifndef ETPACK_PTD_H_
#define ETPACK_PTD_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "etpack/source.h"
#include "etpack/status.h"
#include "etpack/tensor_layout.h"
#include "etpack/writer.h"

namespace etpack {

struct PtdEntry {
  std::string key;
  uint32_t buffer_index = 0;  // into PtdInput::buffers
  uint64_t alignment = 1;     // positive; see PtdOptions::strictest_shared_alignment
  // Present for tensors, absent for opaque blobs. When present the buffer
  // must hold at least LayoutNbytes(layout) bytes.
  std::optional<TensorLayout> layout;
  // How errors name the entry, where its front end found it (an exporter's
  // object path, "data_payload.named_data['w']"); empty: "entries[i] 'key'".
  std::string what = {};  // "= {}": initializers that predate it need not name it
};

struct PtdInput {
  std::vector<SourcePtr> buffers;  // distinct data, shared by entries
  // Order decides segment order. Every content is stored once: entries
  // whose buffers hold identical bytes share a segment (only buffers of
  // equal size are read to compare), a key repeated with the same bytes and
  // layout is one entry, and a key repeated with other bytes or another
  // layout is an error naming both entries.
  std::vector<PtdEntry>
      entries;  // Files this input was read from that none of the sources above reads
  // (a manifest, a CASES.json, a checkpoint index, the program a repack
  // reads): the plan keeps them (ArtifactPlan::inputs) so that no output
  // replaces them.
  std::vector<SourcePtr> read = {};  // "= {}": initializers that predate it need not name it
};

struct PtdOptions {
  // Alignment of the segment base in the file and of every segment start:
  // any positive value up to kMaxAlignment (combined with an entry's by lcm).
  uint64_t segment_alignment = 128;
  // Append an integrity table as a last entry (a blob, no tensor layout);
  // see PteOptions::integrity_table.
  bool integrity_table = false;
  // A segment shared by several keys is aligned as the first of them asks
  // (false, the reference serializer's rule) or as the strictest of them
  // asks (true). See PteOptions::strictest_shared_alignment.
  bool strictest_shared_alignment = false;
  // Bytes a .ptd may take as a file (header, flatbuffer, padding and
  // segments): 0 for no limit. PlanPtd refuses a plan over it; PlanPtdFiles
  // splits the entries into as many files ("shards") as it takes.
  uint64_t max_shard_bytes = 0;
};

struct PtdSegmentMap {
  uint64_t flatbuffer_offset = 0;  // bytes inserted at offset 8 (the padded header)
  uint64_t flatbuffer_size = 0;    // flatbuffer length before the insertion
  uint64_t segment_base_offset = 0;
  uint64_t segment_data_size = 0;
  struct Segment {
    uint64_t offset = 0;  // from the segment base
    uint64_t size = 0;
  };
  std::vector<Segment> segments;
};

struct PtdPlan {
  ArtifactPlan artifact;
  PtdSegmentMap layout;
};

// Pass one. Errors (kInvalidArgument) name the entry and the value: empty
// keys, a key repeated with different bytes or layout, buffer_index out of range, alignment 0
// or above 1 GiB, an invalid layout (negative size, dim_order not a permutation, unknown dtype), a
// buffer smaller than its tensor layout. kOutOfRange when the layout does not fit in 64 bits or the
// flatbuffer exceeds 2 GiB.
Result<PtdPlan> PlanPtd(const PtdInput& input, const PtdOptions& options = {});

// One file of a .ptd set planned by PlanPtdFiles.
struct PtdFilePlan {
  std::string path;  // its destination
  PtdPlan plan;
  size_t entries = 0;  // entries of the input it holds
};

// The .ptd file(s) that hold `input`, planned before anything is written.
//
// Without options.max_shard_bytes: one file, `path`, planned by PlanPtd.
//
// With it: entries go to shards in input order, each shard taking entries
// while the file it makes stays at most max_shard_bytes (everything counted:
// header, flatbuffer, padding, segments, an integrity table when asked for;
// contents as stored, each distinct content once per shard) and its
// FlatTensor within what readers verify (at most 1,000,000 FlatBuffers
// tables, under 2 GiB); the next entry that would not fit starts the next
// shard. A cap at least the size of the unsharded file gives one shard. The
// runtime merges the data files a program is given, so each key is in
// exactly one shard. A shard is named by `path` without its ".ptd", "-", and
// 16 hex digits of XXH3-64 over its keys sorted bytewise, each followed by
// a NUL, then ".ptd" ("out/model.ptd" -> "out/model-0123456789abcdef.ptd"):
// the same input and options give the same names and bytes, and a shard's
// name changes only when the keys it holds do. A `path` with no name
// before its ".ptd" (".ptd", "out/") is kInvalidArgument. Errors are
// PlanPtd's, naming the entry by its index in `input` (a shard's planning
// error starts with "shard <name>"), and kInvalidArgument for an entry that
// would not fit even alone, naming it, its size and the cap. Callers prefix
// the file. Entries that share a content share its segment inside one
// shard; across shards each shard stores its own copy.
//
// Write the result as one unit: WriteArtifactFiles(PtdFiles(plans)).
Result<std::vector<PtdFilePlan>> PlanPtdFiles(const std::string& path, const PtdInput& input,
                                              const PtdOptions& options = {});

// The files of `plans` as WriteArtifactFiles takes them (pointers into
// `plans`).
ArtifactFiles PtdFiles(const std::vector<PtdFilePlan>& plans);

// Plan (PlanPtdFiles) and write every file through `env` (etpack/env.h),
// published as one unit (see WriteArtifactFiles), reporting, cancelling and
// accounting as `write` says (WriteOptions, writer.h). Returns the paths
// written, in shard order (one path, `path` itself, unless
// options.max_shard_bytes splits it).
Result<std::vector<std::string>> WritePtd(const std::string& path, const PtdInput& input,
                                          const PtdOptions& options = {},
                                          const WriteOptions& write = {}, const Env& env = {});

// The FH01 header as read from a file (PtdFile::header()).
struct FlatTensorHeader {
  uint32_t length = 0;
  uint64_t flatbuffer_offset = 0;
  uint64_t flatbuffer_size = 0;
  uint64_t segment_base_offset = 0;
  uint64_t segment_data_size = 0;
};

}  // namespace etpack

#endif  // ETPACK_PTD_H_
