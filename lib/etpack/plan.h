// etpack/plan.h — what every planner produces and the writer consumes: an
// ArtifactPlan, the small head (flatbuffer + header) and the placements,
// each a source whose bytes go to a fixed file offset, plus the ranges the
// writer hashes on the way. Plain values: nothing here reads or writes a
// byte (writer.h streams a plan into a file).

#ifndef ETPACK_PLAN_H_
#define ETPACK_PLAN_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "etpack/source.h"

namespace etpack {

// The largest alignment any planner accepts for an option it pads to
// (segment, program, payload, entry and named-data alignments): 1 GiB, the
// largest page size in use (x86-64 and arm64 1 GiB huge pages). Nothing
// maps or loads better beyond it, while each padded gap could cost that
// much disk. More is kInvalidArgument naming the option, the value and
// this bound.
inline constexpr uint64_t kMaxAlignment = uint64_t{1} << 30;

// The alignment a zero-copy loader can count on for data at file offset
// `offset`: the largest power of two dividing it, at most 64 KiB (what the
// reports call "alignment achieved").
uint64_t OffsetAlignment(uint64_t offset);

// One item's bytes at its final place.
struct Placement {
  uint64_t offset = 0;     // absolute file offset
  uint64_t alignment = 1;  // a power of two that offset is a multiple of (checked)
  SourcePtr source;        // source->size() bytes land at [offset, offset + size)
};

// Bytes [offset, offset + size) of a file.
struct ByteRange {
  uint64_t offset = 0;
  uint64_t size = 0;
};

// An integrity table (docs/integrity.md) that the writer fills in: XXH3-64
// of each range, computed from the bytes as they stream past.
struct IntegrityTableSpec {
  // Where the artifact the table describes starts in the file (non-zero
  // for a program nested in a .bpte); the table's offsets are relative to it.
  uint64_t origin = 0;
  // A placement at this absolute offset reserves the table's bytes; the
  // writer writes the table there instead of reading its source.
  uint64_t table_offset = 0;
  // Absolute; ranges[0] is the artifact's head, then its segments. All end
  // at or before table_offset.
  std::vector<ByteRange> ranges;
};

struct ArtifactPlan {
  std::vector<uint8_t> head;  // lands at offset 0
  uint64_t file_size = 0;     // >= head.size(); the file ends exactly here
  // Sorted by offset, non-overlapping, all inside [head.size(), file_size).
  std::vector<Placement> placements;
  // The format's segments as absolute ranges, in segment-table order (what
  // digests are reported for); empty for a plan with no segment table.
  std::vector<ByteRange> segments;
  // Tables to compute while writing, sorted by table_offset; empty unless
  // asked for (PteOptions::integrity_table, PtdOptions::integrity_table).
  std::vector<IntegrityTableSpec> integrity;
  // The files the plan was made from besides those its placements read: a
  // manifest, a checkpoint index, a program whose head was rebuilt, bytes
  // copied into the head, items stored once for several (one source per
  // file). The writer replaces none of these files, nor any a placement
  // reads (CheckNotInputs, etpack/output.h). Planners fill it; a plan made
  // by hand may list whatever it must not overwrite.
  std::vector<SourcePtr> inputs = {};  // "= {}": initializers that predate it need not name it
};

// The rule for a named-data key (.ptd entry, .pte named data), wherever one
// comes in: planners, importers (safetensors names) and readers. A key is
// looked up by the runtime as a C string, so it is non-empty, valid UTF-8
// and has no NUL byte (after one the rest could never be found). kInvalidArgument
// naming `what` and the key (quoted, escaped); readers report it as kCorrupt.
Status CheckKeyText(std::string_view key, const std::string& what);
// CheckKeyText, and not a key reserved for the integrity table: the rule
// for keys etpack is asked to write.
Status CheckDataKey(std::string_view key, const std::string& what);

}  // namespace etpack

#endif  // ETPACK_PLAN_H_
