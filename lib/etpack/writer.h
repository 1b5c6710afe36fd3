// etpack/writer.h — pass two: stream a planned artifact into a file.
//
// Every format (.pte, .ptd, .bpte) plans down to the same thing, an
// ArtifactPlan: the small head (flatbuffer + header) and a list of
// placements, each a source whose bytes go to a fixed file offset. The
// writer reserves the whole file, writes the head, streams each placement
// from its source straight into place, and leaves every other byte (all the
// padding) zero. It never holds more than the sink's window in memory.

#ifndef ETPACK_WRITER_H_
#define ETPACK_WRITER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "etpack/sink.h"
#include "etpack/source.h"
#include "etpack/status.h"

namespace etpack {

// One item's bytes at its final place.
struct Placement {
  uint64_t offset = 0;     // absolute file offset
  uint64_t alignment = 1;  // a power of two that offset is a multiple of (checked)
  SourcePtr source;        // source->size() bytes land at [offset, offset + size)
};

struct ArtifactPlan {
  std::vector<uint8_t> head;  // lands at offset 0
  uint64_t file_size = 0;     // >= head.size(); the file ends exactly here
  // Sorted by offset, non-overlapping, all inside [head.size(), file_size).
  std::vector<Placement> placements;
};

// Called now and then with bytes written so far and the total.
using ProgressFn = std::function<void(uint64_t done, uint64_t total)>;

// Reserves, writes the head and every placement. Does not call Finish() or
// Abandon(): the caller owns the sink's fate. Checks the plan's invariants
// first (order, bounds, sizes, alignment) and fails with kInvalidArgument
// on a malformed plan rather than writing it.
Status WriteArtifact(const ArtifactPlan& plan, Sink& sink,
                     const ProgressFn& progress = {});

// The common case: writes `plan` to `path` atomically. On success the file
// is complete under its final name; on any failure `path` is untouched and
// no temporary file is left behind — except the one case Sink::Finish()
// describes: the file was written and renamed into place, but its directory
// could not be synced. Then `path` holds the new file and the error says so.
Status WriteArtifactFile(const std::string& path, const ArtifactPlan& plan,
                         const FileSinkOptions& options = {},
                         const ProgressFn& progress = {});

}  // namespace etpack

#endif  // ETPACK_WRITER_H_
