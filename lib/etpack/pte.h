// etpack/pte.h — ExecuTorch programs (.pte): plan, write, read back.
//
// Writing a program is two calls:
//
//   ETPACK_ASSIGN_OR_RETURN(ArtifactPlan plan, PlanPte(input, options));
//   ETPACK_RETURN_IF_ERROR(WriteArtifactFile("model.pte", plan));
//
// PlanPte is pass one. It reads no bulk data (one exception: delegate blobs
// of equal size are compared so identical payloads are stored once), lays
// out every segment, builds the flatbuffer with the `eh00` extended header
// and returns the plan. WriteArtifactFile (etpack/writer.h) is pass two.
//
// The layout follows the reference serializer exactly (formats.md §2-§3):
//   - segment order: constants (always, even when empty), mutable initial
//     values (when they hold bytes), delegate blobs (plan order; identical
//     bytes share a segment; empty ones stay inline), named data (entry
//     order; one segment per distinct buffer);
//   - constants padded to constant_tensor_alignment after every buffer but
//     the last; mutable values packed without padding;
//   - segment j at align_up(end of j-1, max(segment_alignment, its own
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

struct PteOptions {
  // Alignment of every segment's start, relative to the segment base
  // (which itself is aligned to it in the file). Power of two.
  uint64_t segment_alignment = 128;
  // Alignment of each constant inside the constant segment, and of inline
  // Buffer data. Power of two.
  uint64_t constant_tensor_alignment = 16;
  // Alignment of inline delegate data. Power of two.
  uint64_t delegate_alignment = 16;
  // Move non-empty delegate payloads into segments (true) or keep them
  // inline in the flatbuffer (false; limited to 2 GiB in total).
  bool extract_delegate_segments = true;
};

// A key of the program's named data, stored in the .pte.
struct NamedDataEntry {
  std::string key;
  uint32_t buffer_index = 0;  // into PteInput::named_buffers
  uint64_t alignment = 1;     // power of two; the first key of a buffer decides
};

// What an exporter hands over: the program structure plus its data.
struct PteInput {
  // The Program in flatc form (etpack/json.h), as before serialization:
  //  - constant_buffer[i].storage: the bytes of constant i (a blob, or an
  //    array of byte values); entry 0 is the empty placeholder. Tensors
  //    refer to constant i by data_buffer_idx = i.
  //  - backend_delegate_data[i].data: delegate payloads; every delegate's
  //    processed = {location: 0 (INLINE), index: i}.
  //  - segments, constant_segment, mutable_data_segments and named_data are
  //    overwritten by the planner.
  json::Value program;
  // Initial values of memory-planned tensors by data_buffer_idx; entry 0 is
  // the placeholder. Empty: none.
  std::vector<SourcePtr> mutable_data;
  // Named data: distinct buffers, and the keys that refer to them in order.
  std::vector<SourcePtr> named_buffers;
  std::vector<NamedDataEntry> named_entries;
};

// What each segment of a planned or read .pte holds.
// kUnreferenced: a segment of a read file that nothing refers to.
enum class SegmentRole { kConstants, kMutable, kDelegate, kNamedData, kUnreferenced };
const char* SegmentRoleName(SegmentRole role);  // "constants", ...

struct PteLayout {
  uint64_t program_size = 0;          // [0, program_size) is the flatbuffer
  uint64_t segment_base_offset = 0;   // 0 when there are no segment bytes
  uint64_t segment_data_size = 0;
  struct Segment {
    SegmentRole role;
    uint64_t offset = 0;     // from the segment base
    uint64_t size = 0;
    uint64_t alignment = 1;  // what the offset was aligned to
  };
  std::vector<Segment> segments;
};

struct PtePlan {
  ArtifactPlan artifact;
  PteLayout layout;
};

// Pass one. Fails with kInvalidArgument naming the field and value for a
// malformed program tree (unknown field, wrong type, index out of range),
// a non-power-of-two alignment, or a delegate not given INLINE; with
// kOutOfRange when the layout does not fit in 64 bits or a flatbuffer
// exceeds 2 GiB.
Result<PtePlan> PlanPte(const PteInput& input, const PteOptions& options = {});

// Plan and write `path` atomically (see WriteArtifactFile).
Status WritePte(const std::string& path, const PteInput& input,
                const PteOptions& options = {}, const ProgressFn& progress = {});

}  // namespace etpack

#endif  // ETPACK_PTE_H_
