// etpack/pte.h — ExecuTorch programs (.pte): plan, write, read back.
//
// Writing a program is two calls:
//
//   ETPACK_ASSIGN_OR_RETURN(PtePlan plan, PlanPte(std::move(input), options));
//   ETPACK_RETURN_IF_ERROR(WriteArtifactFile("model.pte", plan.artifact));
//
// PlanPte is pass one. It reads no bulk data (one exception: delegate blobs
// and named data of equal size, and with dedup_constants constants of
// equal size, are compared so identical bytes are stored once), lays out
// every segment, builds the flatbuffer with the `eh00` extended header and
// returns the plan. WriteArtifactFile (etpack/writer.h) is pass two.
//
// The layout follows the reference serializer exactly (docs/formats.md §2.2-§2.7):
//   - segment order: constants (whenever constant_buffer has an entry, even
//     the empty placeholder alone; none without any), mutable initial
//     values (when they hold bytes), delegate blobs (plan order; identical
//     bytes share a segment; empty ones stay inline), named data (entry
//     order; one segment per distinct content);
//   - constants padded to constant_tensor_alignment after every buffer but
//     the last (PteOptions::dedup_constants: identical ones stored once);
//     mutable values packed without padding;
//   - segment j at align_up(end of j-1, lcm(segment_alignment, its own
//     alignment)), zero padding between, none after the last;
//   - no segment bytes at all: a plain flatbuffer, no extended header.

#ifndef ETPACK_PTE_H_
#define ETPACK_PTE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "etpack/json.h"
#include "etpack/source.h"
#include "etpack/status.h"
#include "etpack/writer.h"

namespace etpack {

// The largest constant_tensor_alignment and delegate_alignment: they also
// align data inside the flatbuffer and pad the extended header, where more
// than 64 KiB (the largest base page size) is never useful.
inline constexpr uint64_t kMaxInlineAlignment = 65536;

struct PteOptions {
  // Alignment of every segment's start, relative to the segment base
  // (which itself is aligned to it in the file). Any positive value up to
  // kMaxAlignment: 12 puts the base at a multiple of 12 and a segment that
  // asks 8 at a multiple of lcm(12, 8) = 24 from it.
  uint64_t segment_alignment = 128;
  // Alignment of each constant inside the constant segment, and of inline
  // Buffer data. Power of two (a flatbuffer force_align), at most
  // kMaxInlineAlignment.
  uint64_t constant_tensor_alignment = 16;
  // Alignment of inline delegate data. Power of two, at most
  // kMaxInlineAlignment.
  uint64_t delegate_alignment = 16;
  // Move non-empty delegate payloads into segments (true) or keep them
  // inline in the flatbuffer (false; limited to 2 GiB in total).
  bool extract_delegate_segments = true;
  // Append an integrity table (docs/integrity.md): XXH3-64 of the head and
  // of every segment, computed by the writer as the bytes stream, stored as
  // the last segment under a named_data key "etpack.integrity.<hex>" that
  // the ExecuTorch runtime never asks for. Off by default: with it the
  // file no longer matches the reference serializer byte for byte.
  bool integrity_table = false;
  // Named-data keys with identical bytes share one segment. false: it takes
  // the alignment of the first key that brought the bytes, as the reference
  // serializer does (a stricter alignment asked by a later key is silently
  // not met: in the fat golden, "mlx/linear.weight" asks 1024 and gets the
  // 16 of "linear.weight", 128 in the file). true: the strictest alignment of all keys sharing it,
  // so every key gets what it asked for.
  bool strictest_shared_alignment = false;
  // Constant tensors whose bytes are identical are stored once: their
  // constant_segment offsets are equal (the entries and the program's
  // data_buffer_idx values stay as given). The runtime sizes a constant by
  // its tensor's nbytes, never by the next offset, so such a file loads
  // like any other; etpack's reader, verify and repack accept it too.
  // Compared as named data is: only constants of equal size are read (a
  // 12 KiB sample each, then the bytes of those whose samples match), so
  // when no two constants share a size nothing is read and the file is the
  // same as without the option.
  // Off by default: the reference serializer stores every constant_buffer
  // entry as given, so the default output matches it byte for byte. Empty
  // constants are never moved. Named data, delegate payloads and .ptd
  // entries are always stored once, with or without this option.
  bool dedup_constants = false;
};

// A key of the program's named data, stored in the .pte. Every content is
// stored once: keys whose bytes are identical (the same source, or equal
// bytes from different sources) share one segment, whose alignment
// PteOptions::strictest_shared_alignment decides. A key repeated with the
// same bytes is one entry; a key repeated with different bytes is an error
// naming both. Only sources of equal size are ever read to compare them.
struct NamedData {
  std::string key;
  SourcePtr source;
  uint64_t alignment = 1;  // positive, at most kMaxAlignment; lcm with segment_alignment
  // How errors name it, where its front end found it (an exporter's object
  // path); empty: "named_data[i]". As PtdEntry::what.
  std::string what = {};
};

// The Program table without its bulk data, in one of two forms:
//  - a JSON tree in flatc form (etpack/json.h): one object per table,
//    member names = schema field names, unions as "<field>_type" + "<field>";
//  - the bytes of a Program flatbuffer, as upstream's Python builder or any
//    flatbuffers builder produces them. PlanPte verifies them with the
//    flatbuffers verifier; a malformed buffer is refused with an error
//    naming the first field that fails.
// PlanPte works on the flatbuffer (a tree is built into one first) and
// copies it once with the fields it decides replaced; either form of one
// program gives the same file. ProgramBuilder (etpack/program_builder.h)
// produces the tree form, ReadProgramObjects (etpack/program_objects.h)
// the flatbuffer form from an exporter's objects.
// A flatbuffer the library built itself (ReadProgramObjects,
// PteFile::ToInput) carries that fact, so that PlanPte and
// ExternalTensorLayouts do not verify the bytes again.
class ProgramStructure {
 public:
  ProgramStructure() : tree_(json::Value::Object()) {}  // an empty Program table
  static ProgramStructure FromTree(json::Value tree);
  // REQUIRES: bytes != nullptr. The source must stay unchanged until planned.
  static ProgramStructure FromFlatbuffer(SourcePtr bytes);

  bool is_flatbuffer() const { return flatbuffer_ != nullptr; }
  // The tree form. REQUIRES: !is_flatbuffer().
  const json::Value& tree() const { return tree_; }
  json::Value& tree() { return tree_; }
  // The flatbuffer form; nullptr for a tree.
  const SourcePtr& flatbuffer() const { return flatbuffer_; }

  // The tree: the tree form as is, or the flatbuffer verified and converted
  // ([ubyte] vectors become arrays of byte values). Errors name the field.
  Result<json::Value> TakeTree() &&;
  // The flatbuffer: the flatbuffer form verified, or the tree form built.
  // The source's contents are in memory (contiguous() != nullptr). Errors
  // name the field.
  Result<SourcePtr> TakeFlatbuffer() &&;

 private:
  friend struct VerifiedPrograms;  // pte/program_structure.h (internal)
  json::Value tree_;
  SourcePtr flatbuffer_;
  // flatbuffer_ is in memory and valid: the library built it.
  bool verified_ = false;
};

// What an exporter hands over: the program structure, and beside it its
// data, referenced from the structure by index as the format references it.
// Bulk bytes never travel inside the structure.
struct PteInput {
  // The Program. Its data fields stay empty: a constant Buffer's `storage`
  // and a BackendDelegateInlineData's `data` must be absent, null or []
  // (bytes there are refused, naming the field). The planner overwrites
  // constant_buffer, backend_delegate_data (when extracting), segments,
  // constant_segment, mutable_data_segments and named_data.
  ProgramStructure program;
  // Constant tensor data: a tensor with data_buffer_idx = i (and no
  // allocation_info) reads constants[i]. Entry 0 is the empty placeholder.
  // An empty list (not even the placeholder) means no constant segment at
  // all, and the program's constant_segment kept as given, as the
  // reference writes such a program.
  std::vector<SourcePtr> constants;
  // Initial values of memory-planned tensors by data_buffer_idx; entry 0 is
  // the placeholder. Empty: none.
  std::vector<SourcePtr> mutable_data;
  // Delegate payloads: a delegate whose processed is {location: INLINE,
  // index: i} uses delegates[i]. Every entry must be referenced. Payloads
  // with identical bytes share a segment. A payload made by ArtifactSource
  // (etpack/artifact_source.h: a planned program, an NFAT container) is nested
  // into the plan rather than read: its own sources are streamed into place
  // when the .pte is written, file ranges by in-kernel copy.
  std::vector<SourcePtr> delegates;
  // Named data, looked up by key; segments follow this order.
  std::vector<NamedData>
      named_data;  // Files this input was read from that none of the sources above reads
  // (a manifest, a CASES.json, a checkpoint index, the program a repack
  // reads): the plan keeps them (ArtifactPlan::inputs) so that no output
  // replaces them.
  std::vector<SourcePtr> read = {};  // "= {}": initializers that predate it need not name it
};

// What each segment of a planned or read .pte holds.
// kUnreferenced: a segment of a read file that nothing refers to.
enum class SegmentRole { kConstants, kMutable, kDelegate, kNamedData, kUnreferenced };
const char* SegmentRoleName(SegmentRole role);  // "constants", ...

struct PteSegmentMap {
  uint64_t program_size = 0;         // [0, program_size) is the flatbuffer
  uint64_t segment_base_offset = 0;  // 0 when there are no segment bytes
  uint64_t segment_data_size = 0;
  struct Segment {
    SegmentRole role;
    uint64_t offset = 0;  // from the segment base
    uint64_t size = 0;
    uint64_t alignment = 1;  // what the offset was aligned to
  };
  std::vector<Segment> segments;
};

struct PtePlan {
  ArtifactPlan artifact;
  PteSegmentMap layout;
};

// Pass one. Takes the input (move it in: the planner edits the few fields
// it rewrites in place, and a copy of a large tree costs time). Fails with
// kInvalidArgument naming the field and value for a malformed program
// (unknown field, wrong type, index out of range, bytes in a data field), a
// null source, a non-power-of-two alignment, or a delegate not given
// INLINE; with kCorrupt for a flatbuffer structure that fails verification;
// with kOutOfRange when the layout does not fit in 64 bits or a flatbuffer
// exceeds 2 GiB. The planned file passes the reader's checks (PteFile::Open)
// or the plan fails: anything the reader would refuse (a tensor index, scalar
// type or shape the runtime refuses, a constant past its segment, a string
// that is not UTF-8, ...) is kInvalidArgument "the program would not load:"
// with the reader's field path and value.
Result<PtePlan> PlanPte(PteInput input, const PteOptions& options = {});

// Plan and write `path` atomically (see WriteArtifactFile) through `env`
// (etpack/env.h), reporting, cancelling and accounting as `write` says
// (WriteOptions, writer.h).
Status WritePte(const std::string& path, PteInput input, const PteOptions& options = {},
                const WriteOptions& write = {}, const Env& env = {});

}  // namespace etpack

#endif  // ETPACK_PTE_H_
