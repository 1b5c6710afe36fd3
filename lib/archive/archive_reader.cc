// Reading an archive: the seek table and index at Open(), then streaming
// decompression of just the frames a range needs.
//
// Frames of up to 8 MiB (all of etpack's own, by default) are decompressed
// whole by one worker per core and written in order, so memory is a few
// such frames; larger ones (another tool's archive) go through zstd's
// streaming decoder and fixed buffers, one frame's window plus two chunks.
// Either way memory does not grow with the archive. Every frame is held to the seek table exactly:
// its compressed bytes must hold one whole frame, no more, and it must
// produce exactly its recorded size (zstd's own checksum covers the bytes).

#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_d_stableOutBuffer (zstd >= 1.4.4)
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "archive/archive_format.h"
#include "archive/ordered_jobs.h"
#include "archive/pushed_stream.h"
#include "core/range_text.h"
#include "etpack/archive.h"
#include "integrity/hash.h"
#include "plan/header_insert.h"

namespace etpack {
namespace {

constexpr size_t kReadChunk = size_t{1} << 20;
// The largest window a frame may ask for (zstd's default allows 128 MiB,
// which would break the memory bound). etpack's frames need at most
// ArchiveOptions::frame_bytes.
constexpr int kWindowLogMax = 25;
// Frames up to this size (etpack's default frame_bytes) are decompressed
// by up to kMaxWorkers threads, each straight into its own slot of one
// frame: memory is kMaxWorkers frames plus 1 MiB per worker.
constexpr uint64_t kParallelFrameBytes = uint64_t{8} << 20;
constexpr unsigned kMaxWorkers = 4;
// An index frame larger than this is refused rather than read into memory.
constexpr uint64_t kMaxIndexBytes = uint64_t{1} << 30;

struct DCtxDeleter {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

// Decompresses frame `f` of `file` (named `where` in errors) through
// `dctx`, reading 1 MiB of it at a time into `in`, into `out`: without
// `put`, a buffer for the whole frame (out_size >= f.size; zstd then writes
// straight into it and needs no window of its own); with `put`, a chunk
// that `put` empties after each step. Holds the frame to its seek-table
// entry: one whole frame in exactly its compressed bytes, exactly f.size
// bytes out, zstd's checksum. REQUIRES: f.size > 0; in->size() == kReadChunk.
Status DecodeFrame(const Source& file, const ArchiveFrame& f, const std::string& where,
                   ZSTD_DCtx* dctx, std::vector<uint8_t>* in, uint8_t* out, size_t out_size,
                   const std::function<Status(const uint8_t*, size_t)>& put) {
  if (dctx == nullptr) return OutOfRange(where + ": cannot allocate a zstd decompression context");
  const bool whole = !put;
  ZSTD_DCtx_reset(dctx, ZSTD_reset_session_and_parameters);
  ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, kWindowLogMax);
  if (whole) ZSTD_DCtx_setParameter(dctx, ZSTD_d_stableOutBuffer, 1);
  auto too_much = [&] {
    return Corrupt(where + ": decompresses to more than the " + std::to_string(f.size) +
                   " bytes the seek table records");
  };
  uint64_t read = 0;      // compressed bytes of the frame read so far
  uint64_t produced = 0;  // its decompressed bytes so far
  size_t left = 1;        // ZSTD_decompressStream's answer; 0 once the frame is complete
  ZSTD_inBuffer zin = {in->data(), 0, 0};
  ZSTD_outBuffer zout = {out, whole ? static_cast<size_t>(f.size) : out_size, 0};
  while (left != 0) {
    if (zin.pos == zin.size && read < f.archive_size) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(kReadChunk, f.archive_size - read));
      ETPACK_RETURN_IF_ERROR(file.ReadAt(f.archive_offset + read, in->data(), n));
      read += n;
      zin = {in->data(), n, 0};
    }
    const size_t before = zout.pos;
    left = ZSTD_decompressStream(dctx, &zout, &zin);
    if (ZSTD_isError(left)) {
      if (whole && ZSTD_getErrorCode(left) == ZSTD_error_dstSize_tooSmall) return too_much();
      return Corrupt(where + ": " + ZSTD_getErrorName(left));
    }
    const size_t got = zout.pos - before;
    if (left != 0 && got == 0 && zin.pos == zin.size && read == f.archive_size) {
      return Corrupt(where + ": the frame is cut short (its " + std::to_string(f.archive_size) +
                     " compressed bytes end before it does)");
    }
    if (got > f.size - produced) return too_much();
    produced += got;
    if (!whole) {
      ETPACK_RETURN_IF_ERROR(put(out, got));
      zout.pos = 0;
    }
  }
  if (zin.pos != zin.size || read != f.archive_size) {
    return Corrupt(where + ": the frame ends " +
                   std::to_string(f.archive_size - read + zin.size - zin.pos) +
                   " bytes before the " + std::to_string(f.archive_size) +
                   " compressed bytes the seek table records");
  }
  if (produced != f.size) {
    return Corrupt(where + ": decompresses to " + std::to_string(produced) + " bytes, not the " +
                   std::to_string(f.size) + " the seek table records");
  }
  return Status::OK();
}

}  // namespace

Archive::~Archive() = default;

Result<std::unique_ptr<Archive>> Archive::Open(const std::string& path, const Env& env) try {
  std::unique_ptr<Archive> a(new Archive());
  a->name_ = path;
  a->env_ = env;
  ETPACK_ASSIGN_OR_RETURN(a->file_, FileSource(env.in(), path));
  ETPACK_RETURN_IF_ERROR(a->Load());
  return a;
} catch (const std::bad_alloc&) {
  return OutOfRange(path + ": out of memory reading the seek table and index");
}

Status Archive::Load() {
  ETPACK_ASSIGN_OR_RETURN(frames_, DecodeSeekTable(name_, *file_));
  size_ = frames_.empty() ? 0 : frames_.back().offset + frames_.back().size;
  // The index is the last frame (written once every region was hashed).
  if (frames_.empty() || frames_.back().size != 0) return Status::OK();
  const ArchiveFrame& f = frames_.back();
  uint8_t head[kSkippableHeaderSize + 4];
  if (f.archive_size < sizeof head) return Status::OK();
  ETPACK_RETURN_IF_ERROR(file_->ReadAt(f.archive_offset, head, sizeof head).WithContext(name_));
  if (!IsIndexFrame(head, sizeof head)) return Status::OK();
  if (f.archive_size > kMaxIndexBytes) {
    return OutOfRange(name_ + ": etpack index (last frame) of " + std::to_string(f.archive_size) +
                      " bytes is larger than the " + std::to_string(kMaxIndexBytes) +
                      " bytes read into memory");
  }
  std::vector<uint8_t> index(f.archive_size);
  ETPACK_RETURN_IF_ERROR(
      file_->ReadAt(f.archive_offset, index.data(), index.size()).WithContext(name_));
  Result<std::vector<ArchiveRegion>> regions = DecodeIndex(index.data(), index.size(), size_);
  if (!regions.ok()) return regions.status().WithContext(name_);
  regions_ = std::move(regions).value();
  return Status::OK();
}

// A frame of no decompressed bytes must be a whole skippable frame, so a
// seek table that lost a frame's size cannot silently drop its bytes.
Status Archive::CheckSkippable(const ArchiveFrame& f, const std::string& where) const {
  uint8_t head[kSkippableHeaderSize];
  if (f.archive_size >= sizeof head) {
    ETPACK_RETURN_IF_ERROR(file_->ReadAt(f.archive_offset, head, sizeof head));
    if ((LoadLE32(head) & 0xFFFFFFF0u) == 0x184D2A50u &&
        LoadLE32(head + 4) == f.archive_size - kSkippableHeaderSize) {
      return Status::OK();
    }
  }
  return Corrupt(where + ": the seek table records no decompressed bytes, but its " +
                 std::to_string(f.archive_size) + " bytes are not one skippable frame");
}

const ArchiveRegion* Archive::Find(RegionKind kind, const std::string& name) const {
  for (const ArchiveRegion& r : regions_) {
    if (r.kind == kind && r.name == name) return &r;
  }
  return nullptr;
}

std::string Archive::FrameText(size_t index) const {
  return name_ + ": frame " + std::to_string(index) + " at archive offset " +
         std::to_string(frames_[index].archive_offset);
}

Result<ArtifactPlan> Archive::ExtractPlan(uint64_t offset, uint64_t length) const {
  return PlanChecked(offset, length, nullptr);
}

Result<ArtifactPlan> Archive::RegionPlan(const ArchiveRegion& region) const {
  return PlanChecked(region.offset, region.size, &region);
}

Status Archive::Extract(uint64_t offset, uint64_t length, OutputFile& output,
                        const WriteOptions& options) const {
  ETPACK_ASSIGN_OR_RETURN(ArtifactPlan plan, ExtractPlan(offset, length));
  return WriteArtifact(plan, output, options);
}

Status Archive::ExtractRegion(const ArchiveRegion& region, OutputFile& output,
                              const WriteOptions& options) const {
  ETPACK_ASSIGN_OR_RETURN(ArtifactPlan plan, RegionPlan(region));
  return WriteArtifact(plan, output, options);
}

Status Archive::ExtractFile(uint64_t offset, uint64_t length, const std::string& path,
                            const WriteOptions& options) const {
  ETPACK_ASSIGN_OR_RETURN(ArtifactPlan plan, ExtractPlan(offset, length));
  return WriteArtifactFiles({{path, &plan}}, options, env_);
}

Status Archive::ExtractRegionFile(const ArchiveRegion& region, const std::string& path,
                                  const WriteOptions& options) const {
  ETPACK_ASSIGN_OR_RETURN(ArtifactPlan plan, RegionPlan(region));
  return WriteArtifactFiles({{path, &plan}}, options, env_);
}

// The range's bytes as the tail of a plan: decoded on a thread of the
// stream's (workers beside it), handed to the writer in order. The stream
// reads this archive, which must outlive the plan.
Result<ArtifactPlan> Archive::PlanChecked(uint64_t offset, uint64_t length,
                                          const ArchiveRegion* region) const {
  if (offset > size_ || length > size_ - offset) {
    return OutOfRange(name_ + ": range [" + std::to_string(offset) + ", +" +
                      std::to_string(length) + ") runs past the end of the " +
                      std::to_string(size_) + "-byte original");
  }
  ArtifactPlan plan;
  plan.file_size = length;
  plan.inputs.push_back(file_);
  std::optional<ArchiveRegion> checked;
  if (region != nullptr) checked = *region;
  plan.tail = PushedStream("decompressing " + name_ + " " + RangeText(offset, length), length,
                           length, [this, offset, length, checked](const PutFn& put) {
                             return Decode(offset, length, checked ? &*checked : nullptr, put);
                           });
  return plan;
}

// A function-try-block: an allocation this thread cannot make is an error
// naming the archive (workers report their own, naming the frame).
Status Archive::Decode(uint64_t offset, uint64_t length, const ArchiveRegion* region,
                       const std::function<Status(const uint8_t*, uint64_t, uint64_t)>& put) const
    try {
  const uint64_t end = offset + length;
  // Bytes reach deliver() in order, so the region's checksum runs along.
  std::unique_ptr<RunningHash> hash;
  if (region != nullptr) {
    ETPACK_ASSIGN_OR_RETURN(hash, NewRunningHash(HashKind::kXxh3_64));
  }
  // The frames that overlap [offset, end): from the first that ends after
  // `offset` to the first that starts at or after `end`.
  const size_t first = static_cast<size_t>(
      std::upper_bound(frames_.begin(), frames_.end(), offset,
                       [](uint64_t at, const ArchiveFrame& f) { return at < f.offset + f.size; }) -
      frames_.begin());
  size_t last = first;
  while (last < frames_.size() && frames_[last].offset < end) ++last;
  // Hands over the part of a frame's bytes (original offset `at`) in the range.
  auto deliver = [&](uint64_t at, const uint8_t* bytes, uint64_t n) -> Status {
    const uint64_t lo = std::max(at, offset);
    const uint64_t hi = std::min(at + n, end);
    if (lo < hi) {
      if (hash) hash->Update(bytes + (lo - at), static_cast<size_t>(hi - lo));
      ETPACK_RETURN_IF_ERROR(put(bytes + (lo - at), hi - lo, hi - lo));
    }
    return Status::OK();
  };

  // Frames of up to kParallelFrameBytes are decompressed whole by workers,
  // one per core, while this thread writes the previous ones in order; a
  // range of one frame, or with a larger one (another tool's archive),
  // streams through 1 MiB chunks on this thread.
  const int cores = static_cast<int>(std::min(kMaxWorkers, std::thread::hardware_concurrency()));
  bool parallel = cores > 1 && last - first > 1;
  for (size_t i = first; parallel && i < last; ++i) {
    parallel = frames_[i].size <= kParallelFrameBytes;
  }
  struct Decoder {
    std::unique_ptr<ZSTD_DCtx, DCtxDeleter> dctx{ZSTD_createDCtx()};
    std::vector<uint8_t> in = std::vector<uint8_t>(kReadChunk);
  };
  if (parallel) {
    ETPACK_RETURN_IF_ERROR(RunOrderedJobs<Decoder>(
        last - first, cores, static_cast<size_t>(cores),
        [&](size_t job) { return FrameText(first + job); }, [] { return Decoder(); },
        [&](Decoder& d, size_t job, std::vector<uint8_t>* out) {
          const ArchiveFrame& f = frames_[first + job];
          out->resize(f.size);
          if (f.size == 0) return CheckSkippable(f, FrameText(first + job));
          return DecodeFrame(*file_, f, FrameText(first + job), d.dctx.get(), &d.in, out->data(),
                             out->size(), {});
        },
        [&](size_t job, const std::vector<uint8_t>& bytes) {
          return deliver(frames_[first + job].offset, bytes.data(), bytes.size());
        }));
  } else {
    Decoder d;
    std::vector<uint8_t> out(kReadChunk);
    for (size_t index = first; index < last; ++index) {
      const ArchiveFrame& f = frames_[index];
      if (f.size == 0) {
        ETPACK_RETURN_IF_ERROR(CheckSkippable(f, FrameText(index)));
        continue;
      }
      uint64_t at = f.offset;
      // A chunk smaller than the frame, so that zstd streams through it.
      const size_t chunk = static_cast<size_t>(std::min<uint64_t>(kReadChunk, f.size - 1));
      ETPACK_RETURN_IF_ERROR(DecodeFrame(*file_, f, FrameText(index), d.dctx.get(), &d.in,
                                         out.data(), std::max<size_t>(chunk, 1),
                                         [&](const uint8_t* bytes, size_t n) {
                                           Status s = deliver(at, bytes, n);
                                           at += n;
                                           return s;
                                         }));
    }
  }
  return region ? CheckRegion(*region, Xxh3Value(hash->Finish())) : Status::OK();
} catch (const std::bad_alloc&) {
  return OutOfRange(name_ + ": out of memory decompressing " + RangeText(offset, length));
}

Status Archive::CheckRegion(const ArchiveRegion& region, uint64_t got) const {
  if (got == region.xxh3) return Status::OK();
  char text[80];
  std::snprintf(text, sizeof text, "XXH3-64 %016" PRIx64 ", but the index records %016" PRIx64, got,
                region.xxh3);
  return Corrupt(name_ + ": " + RegionKindName(region.kind) + " '" + region.name +
                 "': the bytes at " + RangeText(region.offset, region.size) + " have " + text +
                 " (the index does not describe this archive)");
}

}  // namespace etpack
