// etpack/plan.h — what every planner produces and the writer consumes: an
// ArtifactPlan, the small head (flatbuffer + header) and the placements,
// each a source whose bytes go to a fixed file offset, plus the ranges the
// writer hashes on the way. Plain values: nothing here reads or writes a
// byte (writer.h streams a plan into a file).

#ifndef ETPACK_PLAN_H_
#define ETPACK_PLAN_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "etpack/source.h"
#include "etpack/status.h"

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

// The end of a file whose size is known only once it is written (a
// compressed archive): bytes produced front to back, piece by piece, that
// the writer puts down after the rest of the plan, where the file then ends.
// Read once, by one writer, on the writing thread.
class ByteStream {
 public:
  virtual ~ByteStream() = default;

  // One piece: `bytes` land right after the previous piece; `work` is how
  // much of work() producing them did (progress is counted in it).
  struct Piece {
    SourcePtr bytes;
    uint64_t work = 0;
  };

  // What the stream is, for messages ("compressing model.ptd").
  virtual std::string Describe() const = 0;
  // The most bytes it produces (what the output reserves).
  virtual uint64_t max_size() const = 0;
  // How much work producing every piece is, in the stream's own unit (for
  // a compressor: the bytes it reads), which progress reports instead of
  // bytes written, as the latter are not known in advance.
  virtual uint64_t work() const = 0;
  // The next piece, or a piece whose `bytes` is null once there are no
  // more. The returned bytes stay valid until the next call. An error ends
  // the write (nothing is published).
  virtual Result<Piece> Next() = 0;
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

  // An edit of an existing file: the bytes that neither the head nor a
  // placement covers are `base`'s (a whole regular file, base->size() ==
  // file_size), not zeros. The writer makes the output a clone of it where
  // the file system shares extents (WritableOutput::ReserveClone: those bytes
  // cost neither a copy nor disk, and only the head and placements are
  // written), else copies them from it as it copies placements. It never
  // clones when digests or integrity tables are computed (every byte then
  // passes through memory). Null: the gaps are zero padding.
  SourcePtr base = nullptr;
  // With `base`: the destination is the file `base` reads, which the write
  // replaces atomically (the one file a plan reads that its output may
  // replace), and only that very file: the write fails with kIoError,
  // nothing published, when the destination is another file, or becomes
  // one before publishing (another writer replaced or removed it;
  // PublishableOutput::ReplaceOnly).
  bool replaces_base = false;

  // The file's end when its size is known only once it is written: the
  // stream's pieces follow the head and the placements (which all end at or
  // before file_size - tail->max_size()), and the file ends after the last
  // piece. file_size is then the upper bound that is reserved. A plan with
  // a tail has no base and no integrity tables, and its segments lie before
  // the tail.
  std::shared_ptr<ByteStream> tail = nullptr;
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
