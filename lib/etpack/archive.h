// etpack/archive.h — transport archives: an artifact (or any file) as a
// seekable zstd archive that stock `zstd -d` restores byte for byte.
//
// The archive is zstd's seekable format (contrib/seekable_format in the
// zstd sources): independent zstd frames, then a skippable frame holding
// the seek table (each frame's compressed and decompressed size). etpack
// cuts the frames on the artifact's own boundaries, found with its readers
// (PteFile, PtdFile, BpteFile): the head, every segment, every named
// tensor; pieces larger than ArchiveOptions::frame_bytes are split, small
// neighbours merged. The last frame is a skippable frame (ignored by zstd)
// with etpack's region index: the name, offset, size and XXH3-64 of the
// head, of every segment and of every named tensor, so one of them can be
// restored by decompressing only the frames it overlaps, and checked. docs/archive.md has the
// bytes.
//
//   ETPACK_RETURN_IF_ERROR(CompressFile("model.ptd", "model.ptd.zst"));
//   ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<Archive> a, Archive::Open("model.ptd.zst"));
//   const ArchiveRegion* r = a->Find(RegionKind::kTensor, "layers.0.wq");
//   ETPACK_RETURN_IF_ERROR(a->ExtractRegionFile(*r, "wq.bin"));
//
// Outputs go through the output seam (etpack/output.h): published whole or
// not at all. Decompression runs frame by frame (up to one worker per core,
// written in order): memory stays at a few frames plus the output window,
// whatever the size. Errors name the archive, the frame index and its offset
// in the archive.

#ifndef ETPACK_ARCHIVE_H_
#define ETPACK_ARCHIVE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "etpack/env.h"
#include "etpack/output.h"
#include "etpack/plan.h"
#include "etpack/source.h"
#include "etpack/status.h"
#include "etpack/writer.h"

namespace etpack {

struct ArchiveOptions {
  // zstd compression level (1..19; 3 is zstd's own default).
  int level = 3;
  // Upper bound on the decompressed bytes of one frame (at most 1 GiB, the
  // seekable format's limit). Larger frames compress a little better;
  // decompression and single-region extraction hold one frame in memory.
  uint64_t frame_bytes = uint64_t{8} << 20;
  // Frames compressed in parallel; 0 means one per online core, at most 2
  // (each worker holds up to a compressed frame: docs/archive.md, Memory).
  int threads = 0;
};

enum class RegionKind : uint8_t {
  kHead = 1,     // the artifact's headers and flatbuffer(s), up to the first segment
  kSegment = 2,  // name: the segment's index ("0", "1", ...)
  kTensor = 3,   // name: the key of a named tensor or blob (.pte named data, .ptd entry)
};
const char* RegionKindName(RegionKind kind);  // "head", "segment", "tensor"

// A named byte range of the original file.
struct ArchiveRegion {
  RegionKind kind = RegionKind::kHead;
  std::string name;
  uint64_t offset = 0;
  uint64_t size = 0;
  // XXH3-64 of the range's bytes, as the index records it (0 in the
  // regions ArtifactRegions() returns: CompressFile hashes them).
  uint64_t xxh3 = 0;
};

// One frame of the archive, as its seek table gives it.
struct ArchiveFrame {
  uint64_t archive_offset = 0;  // where the frame starts in the archive
  uint32_t archive_size = 0;    // its compressed bytes
  uint64_t offset = 0;          // where its bytes go in the original file
  uint32_t size = 0;            // its decompressed bytes (0: a skippable frame)
};

// The regions of the artifact `file` (named `name` in errors), for cutting
// frames: none for a file that is not a .pte, .ptd or .bpte (recognised by
// its identifier at bytes 4..7); an error (naming the file) for one that
// claims to be one and does not open.
Result<std::vector<ArchiveRegion>> ArtifactRegions(const std::string& name, const SourcePtr& file);

// Frame boundaries for a file of `size` bytes with `regions`: every region
// boundary is a frame boundary unless a neighbouring piece is smaller than
// 1 MiB (then they share a frame), and no frame exceeds frame_bytes.
// Returns the end offset of each frame, in order (empty for size 0).
std::vector<uint64_t> PlanFrames(uint64_t size, const std::vector<ArchiveRegion>& regions,
                                 uint64_t frame_bytes);

// The seekable archive of the file at `input`, as a plan for the writer
// (etpack/writer.h): its bytes are the plan's tail (ArtifactPlan::tail),
// compressed by options.threads workers while the writer writes them, so
// the file's size is known only once it is written; file_size is zstd's
// bound, which the writer reserves before cutting the file to size.
// Progress counts the input bytes compressed. kInvalidArgument for options
// out of range; otherwise the errors of reading the input (naming it). The
// plan reads `input` (ArtifactPlan::inputs: it cannot be the output), opened
// once through env.input (etpack/env.h).
Result<ArtifactPlan> CompressPlan(const std::string& input, const ArchiveOptions& options = {},
                                  const Env& env = {});

// Writes CompressPlan(input, options, env) to `output` through env.output
// (null: the POSIX outputs made with write.output) with `write`
// (WriteArtifactFiles): progress, cancel and stats as for any
// write. write.cancel is asked after each frame is written (each piece of
// the tail: at most frame_bytes of the input, so every 8 MiB by default,
// more often than the writer's 64 MiB slices; a frame being compressed is
// not interrupted) and while Publish() waits for another publisher's
// directory lock; once it returns true nothing is published and no
// temporary file stays.
Status CompressFile(const std::string& input, const std::string& output,
                    const ArchiveOptions& options = {}, const WriteOptions& write = {},
                    const Env& env = {});

// An opened archive: its seek table checked against the file (a truncated
// or extended archive is kCorrupt) and its region index read when it has
// one. Thread-compatible; the archive file must not change while open.
class Archive {
 public:
  // kNotFound for a missing path; kCorrupt naming the file and what is
  // wrong when it is not a seekable zstd archive or its table does not add
  // up. The archive is read through env.input; ExtractFile and
  // ExtractRegionFile write through env.output (etpack/env.h), which must
  // outlive the archive.
  static Result<std::unique_ptr<Archive>> Open(const std::string& path, const Env& env = {});
  ~Archive();

  const std::string& name() const { return name_; }
  // Bytes of the original file.
  uint64_t size() const { return size_; }
  const std::vector<ArchiveFrame>& frames() const { return frames_; }
  // Empty when the archive has no etpack index (made by another tool, of a
  // file that is not an artifact, or by an etpack whose index (EPX1) had no
  // region checksums: such an index is not trusted, docs/archive.md).
  const std::vector<ArchiveRegion>& regions() const { return regions_; }
  // The region of that kind and name, or nullptr.
  const ArchiveRegion* Find(RegionKind kind, const std::string& name) const;

  // Original bytes [offset, offset + length) as a plan for the writer
  // (etpack/writer.h): file_size is `length`, the bytes are the plan's
  // tail, decompressed (up to one worker per core) while the writer writes
  // them, touching only the frames that overlap the range. Each frame is
  // checked (zstd's checksum, its exact sizes); a bad one fails the write
  // with kCorrupt naming the archive, the frame index and its archive
  // offset. kOutOfRange now for a range past size(). The plan reads this
  // archive, which must outlive it.
  Result<ArtifactPlan> ExtractPlan(uint64_t offset, uint64_t length) const;
  // ExtractPlan() of one region of regions(), its bytes held to the XXH3-64
  // the index records: kCorrupt naming the archive and the region when they
  // differ (an index that does not describe the archive's bytes), after the
  // last byte is written and before anything is published.
  Result<ArtifactPlan> RegionPlan(const ArchiveRegion& region) const;

  // The plans written into `output` (WriteArtifact: publishing is the
  // caller's) or published at `path` through the Env given to Open()
  // (WriteArtifactFiles: nothing is left there on failure), with `options`
  // as for any write: options.cancel is asked after each frame written (or
  // each 1 MiB of a frame decompressed on one thread) and while Publish()
  // waits for a directory lock.
  Status Extract(uint64_t offset, uint64_t length, OutputFile& output,
                 const WriteOptions& options = {}) const;
  Status ExtractFile(uint64_t offset, uint64_t length, const std::string& path,
                     const WriteOptions& options = {}) const;
  Status ExtractRegion(const ArchiveRegion& region, OutputFile& output,
                       const WriteOptions& options = {}) const;
  Status ExtractRegionFile(const ArchiveRegion& region, const std::string& path,
                           const WriteOptions& options = {}) const;

 private:
  Archive() = default;
  Status Load();
  // ExtractPlan(), checking the bytes against `region`'s checksum when given.
  Result<ArtifactPlan> PlanChecked(uint64_t offset, uint64_t length,
                                   const ArchiveRegion* region) const;
  // Decompresses [offset, offset + length), handing the bytes to `put`
  // (bytes, count, count) in order, then checks them against `region` when
  // given.
  Status Decode(uint64_t offset, uint64_t length, const ArchiveRegion* region,
                const std::function<Status(const uint8_t*, uint64_t, uint64_t)>& put) const;
  // kCorrupt unless `got`, the XXH3-64 of the bytes extracted, is the
  // region's.
  Status CheckRegion(const ArchiveRegion& region, uint64_t got) const;
  Status CheckSkippable(const ArchiveFrame& frame, const std::string& where) const;
  std::string FrameText(size_t index) const;

  std::string name_;
  Env env_;
  SourcePtr file_;
  uint64_t size_ = 0;
  std::vector<ArchiveFrame> frames_;
  std::vector<ArchiveRegion> regions_;
};

}  // namespace etpack

#endif  // ETPACK_ARCHIVE_H_
