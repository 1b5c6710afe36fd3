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

#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "archive/archive_format.h"
#include "archive/ordered_jobs.h"
#include "etpack/archive.h"
#include "layout/header_insert.h"

namespace etpack {
namespace {

constexpr size_t kChunk = size_t{1} << 20;
// The largest window a frame may ask for (zstd's default allows 128 MiB,
// which would break the memory bound). etpack's frames need at most
// ArchiveOptions::frame_bytes.
constexpr int kWindowLogMax = 25;
// Frames up to this size (etpack's default frame_bytes) are decompressed
// whole on worker threads; each worker holds one compressed frame and the
// slots one decompressed frame each.
constexpr uint64_t kParallelFrameBytes = uint64_t{8} << 20;
// An index frame larger than this is refused rather than read into memory.
constexpr uint64_t kMaxIndexBytes = uint64_t{1} << 30;

struct DCtxDeleter {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

// Frame `f` of `file` decompressed whole into `out` on a worker: the same
// checks as the streaming path, in one call. `where` names the frame.
// REQUIRES: f.size > 0 and the frame fits the parallel path.
Status DecompressFrame(const Source& file, const ArchiveFrame& f, const std::string& where,
                       ZSTD_DCtx* dctx, std::vector<uint8_t>* in, std::vector<uint8_t>* out) {
  if (dctx == nullptr) return OutOfRange(where + ": cannot allocate a zstd decompression context");
  in->resize(f.archive_size);
  ETPACK_RETURN_IF_ERROR(file.ReadAt(f.archive_offset, in->data(), in->size()));
  const size_t whole = ZSTD_findFrameCompressedSize(in->data(), in->size());
  if (ZSTD_isError(whole)) return Corrupt(where + ": " + ZSTD_getErrorName(whole));
  if (whole != in->size()) {
    return Corrupt(where + ": the frame ends " + std::to_string(in->size() - whole) +
                   " bytes before the " + std::to_string(f.archive_size) +
                   " compressed bytes the seek table records");
  }
  out->resize(f.size);
  const size_t got = ZSTD_decompressDCtx(dctx, out->data(), out->size(), in->data(), in->size());
  if (ZSTD_isError(got)) {
    if (ZSTD_getErrorCode(got) == ZSTD_error_dstSize_tooSmall) {
      return Corrupt(where + ": decompresses to more than the " + std::to_string(f.size) +
                     " bytes the seek table records");
    }
    return Corrupt(where + ": " + ZSTD_getErrorName(got));
  }
  if (got != f.size) {
    return Corrupt(where + ": decompresses to " + std::to_string(got) + " bytes, not the " +
                   std::to_string(f.size) + " the seek table records");
  }
  return Status::OK();
}

}  // namespace

Archive::~Archive() = default;

Result<std::unique_ptr<Archive>> Archive::Open(const std::string& path) {
  std::unique_ptr<Archive> a(new Archive());
  a->name_ = path;
  ETPACK_ASSIGN_OR_RETURN(a->file_, FileSource(path));
  ETPACK_RETURN_IF_ERROR(a->Load());
  return a;
}

Status Archive::Load() {
  ETPACK_ASSIGN_OR_RETURN(frames_, DecodeSeekTable(name_, *file_));
  size_ = frames_.empty() ? 0 : frames_.back().offset + frames_.back().size;
  if (frames_.empty() || frames_[0].size != 0) return Status::OK();
  const ArchiveFrame& f = frames_[0];
  uint8_t head[kSkippableHeaderSize + 4];
  if (f.archive_size < sizeof head) return Status::OK();
  ETPACK_RETURN_IF_ERROR(file_->ReadAt(0, head, sizeof head).WithContext(name_));
  if (!IsIndexFrame(head, sizeof head)) return Status::OK();
  if (f.archive_size > kMaxIndexBytes) {
    return OutOfRange(name_ + ": etpack index (frame 0) of " + std::to_string(f.archive_size) +
                      " bytes is larger than the " + std::to_string(kMaxIndexBytes) +
                      " bytes read into memory");
  }
  std::vector<uint8_t> index(f.archive_size);
  ETPACK_RETURN_IF_ERROR(file_->ReadAt(0, index.data(), index.size()).WithContext(name_));
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

Status Archive::Extract(uint64_t offset, uint64_t length, OutputFile& output,
                        const ProgressFn& progress) const {
  if (offset > size_ || length > size_ - offset) {
    return OutOfRange(name_ + ": range [" + std::to_string(offset) + ", +" +
                      std::to_string(length) + ") runs past the end of the " +
                      std::to_string(size_) + "-byte original");
  }
  ETPACK_RETURN_IF_ERROR(output.Reserve(length));
  const uint64_t end = offset + length;
  // The frames that overlap [offset, end): from the first that ends after
  // `offset` to the first that starts at or after `end`.
  const size_t first = static_cast<size_t>(
      std::upper_bound(frames_.begin(), frames_.end(), offset,
                       [](uint64_t at, const ArchiveFrame& f) { return at < f.offset + f.size; }) -
      frames_.begin());
  size_t last = first;
  while (last < frames_.size() && frames_[last].offset < end) ++last;
  // Writes the part of a frame's bytes (original offset `at`) in the range.
  auto deliver = [&](uint64_t at, const uint8_t* bytes, uint64_t n) -> Status {
    const uint64_t lo = std::max(at, offset);
    const uint64_t hi = std::min(at + n, end);
    if (lo < hi) {
      ETPACK_RETURN_IF_ERROR(output.Write(lo - offset, bytes + (lo - at), hi - lo));
      if (progress) progress(hi - offset, length);
    }
    return Status::OK();
  };

  // Frames that fit the parallel path are decompressed whole by workers,
  // one per core, while this thread writes the previous ones in order; a
  // range with larger frames (another tool's archive) streams on this thread.
  const int cores = static_cast<int>(std::min(4u, std::thread::hardware_concurrency()));
  bool parallel = cores > 1 && last - first > 1;
  for (size_t i = first; parallel && i < last; ++i) {
    parallel = frames_[i].size <= kParallelFrameBytes &&
               frames_[i].archive_size <= ZSTD_compressBound(kParallelFrameBytes);
  }
  if (parallel) {
    struct Decompressor {
      std::unique_ptr<ZSTD_DCtx, DCtxDeleter> dctx{ZSTD_createDCtx()};
      std::vector<uint8_t> in;
    };
    return RunOrderedJobs<Decompressor>(
        last - first, cores, static_cast<size_t>(cores) + 1, [] { return Decompressor(); },
        [&](Decompressor& d, size_t job, std::vector<uint8_t>* out) {
          const ArchiveFrame& f = frames_[first + job];
          out->clear();
          if (f.size == 0) return CheckSkippable(f, FrameText(first + job));
          return DecompressFrame(*file_, f, FrameText(first + job), d.dctx.get(), &d.in, out);
        },
        [&](size_t job, const std::vector<uint8_t>& bytes) {
          return deliver(frames_[first + job].offset, bytes.data(), bytes.size());
        });
  }

  std::unique_ptr<ZSTD_DCtx, DCtxDeleter> dctx(ZSTD_createDCtx());
  if (dctx == nullptr) return OutOfRange(name_ + ": cannot allocate a zstd decompression context");
  std::vector<uint8_t> in(kChunk);
  std::vector<uint8_t> out(kChunk);
  for (size_t index = first; index < last; ++index) {
    const ArchiveFrame& f = frames_[index];
    const std::string where = FrameText(index);
    if (f.size == 0) {
      ETPACK_RETURN_IF_ERROR(CheckSkippable(f, where));
      continue;
    }
    ZSTD_DCtx_reset(dctx.get(), ZSTD_reset_session_and_parameters);
    ZSTD_DCtx_setParameter(dctx.get(), ZSTD_d_windowLogMax, kWindowLogMax);
    uint64_t read = 0;      // compressed bytes of the frame read so far
    uint64_t produced = 0;  // its decompressed bytes so far
    size_t left = 1;        // ZSTD_decompressStream's answer; 0 once the frame is complete
    ZSTD_inBuffer zin = {in.data(), 0, 0};
    while (left != 0) {
      if (zin.pos == zin.size && read < f.archive_size) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, f.archive_size - read));
        ETPACK_RETURN_IF_ERROR(file_->ReadAt(f.archive_offset + read, in.data(), n));
        read += n;
        zin = {in.data(), n, 0};
      }
      ZSTD_outBuffer zout = {out.data(), out.size(), 0};
      left = ZSTD_decompressStream(dctx.get(), &zout, &zin);
      if (ZSTD_isError(left)) return Corrupt(where + ": " + ZSTD_getErrorName(left));
      if (left != 0 && zout.pos == 0 && zin.pos == zin.size && read == f.archive_size) {
        return Corrupt(where + ": the frame is cut short (its " + std::to_string(f.archive_size) +
                       " compressed bytes end before it does)");
      }
      if (zout.pos > f.size - produced) {
        return Corrupt(where + ": decompresses to more than the " + std::to_string(f.size) +
                       " bytes the seek table records");
      }
      ETPACK_RETURN_IF_ERROR(deliver(f.offset + produced, out.data(), zout.pos));
      produced += zout.pos;
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
  }
  return Status::OK();
}

Status Archive::ExtractFile(uint64_t offset, uint64_t length, const std::string& path,
                            const ProgressFn& progress) const {
  std::unique_ptr<OutputFs> fs = NewPosixOutputFs();
  ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<OutputFile> out, fs->Create(path));
  ETPACK_RETURN_IF_ERROR(Extract(offset, length, *out, progress));
  std::vector<std::unique_ptr<OutputFile>> outputs;
  outputs.push_back(std::move(out));
  return Publish(std::move(outputs));
}

}  // namespace etpack
