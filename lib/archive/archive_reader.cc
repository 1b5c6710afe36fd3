// Reading an archive: the seek table and index at Open(), then streaming
// decompression of just the frames a range needs.
//
// Frames are decompressed with zstd's streaming decoder through fixed
// buffers, so memory is one frame's window plus two chunks, however large
// the frame or the archive. Every frame is held to the seek table exactly:
// its compressed bytes must hold one whole frame, no more, and it must
// produce exactly its recorded size (zstd's own checksum covers the bytes).

#include <zstd.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "archive/archive_format.h"
#include "etpack/archive.h"
#include "layout/header_insert.h"

namespace etpack {
namespace {

constexpr size_t kChunk = size_t{1} << 20;
// The largest window a frame may ask for (zstd's default allows 128 MiB,
// which would break the memory bound). etpack's frames need at most
// ArchiveOptions::frame_bytes.
constexpr int kWindowLogMax = 25;
// An index frame larger than this is refused rather than read into memory.
constexpr uint64_t kMaxIndexBytes = uint64_t{1} << 30;

struct DCtxDeleter {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

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

Status Archive::Extract(uint64_t offset, uint64_t length, OutputFile& output,
                        const ProgressFn& progress) const {
  if (offset > size_ || length > size_ - offset) {
    return OutOfRange(name_ + ": range [" + std::to_string(offset) + ", +" +
                      std::to_string(length) + ") runs past the end of the " +
                      std::to_string(size_) + "-byte original");
  }
  ETPACK_RETURN_IF_ERROR(output.Reserve(length));
  const uint64_t end = offset + length;
  std::unique_ptr<ZSTD_DCtx, DCtxDeleter> dctx(ZSTD_createDCtx());
  if (dctx == nullptr) return OutOfRange(name_ + ": cannot allocate a zstd decompression context");
  std::vector<uint8_t> in(kChunk);
  std::vector<uint8_t> out(kChunk);
  // The first frame that ends after `offset`.
  auto first =
      std::upper_bound(frames_.begin(), frames_.end(), offset,
                       [](uint64_t at, const ArchiveFrame& f) { return at < f.offset + f.size; });
  for (auto it = first; it != frames_.end() && it->offset < end; ++it) {
    const ArchiveFrame& f = *it;
    const std::string where = name_ + ": frame " + std::to_string(it - frames_.begin()) +
                              " at archive offset " + std::to_string(f.archive_offset);
    if (f.size == 0) {
      ETPACK_RETURN_IF_ERROR(CheckSkippable(f, where));
      continue;
    }
    ZSTD_DCtx_reset(dctx.get(), ZSTD_reset_session_and_parameters);
    ZSTD_DCtx_setParameter(dctx.get(), ZSTD_d_windowLogMax, kWindowLogMax);
    uint64_t read = 0;      // compressed bytes of the frame read so far
    uint64_t produced = 0;  // its decompressed bytes so far
    size_t last = 1;        // ZSTD_decompressStream's answer; 0 once the frame is complete
    ZSTD_inBuffer zin = {in.data(), 0, 0};
    while (last != 0) {
      if (zin.pos == zin.size && read < f.archive_size) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, f.archive_size - read));
        ETPACK_RETURN_IF_ERROR(file_->ReadAt(f.archive_offset + read, in.data(), n));
        read += n;
        zin = {in.data(), n, 0};
      }
      ZSTD_outBuffer zout = {out.data(), out.size(), 0};
      last = ZSTD_decompressStream(dctx.get(), &zout, &zin);
      if (ZSTD_isError(last)) return Corrupt(where + ": " + ZSTD_getErrorName(last));
      if (last != 0 && zout.pos == 0 && zin.pos == zin.size && read == f.archive_size) {
        return Corrupt(where + ": the frame is cut short (its " + std::to_string(f.archive_size) +
                       " compressed bytes end before it does)");
      }
      if (zout.pos > f.size - produced) {
        return Corrupt(where + ": decompresses to more than the " + std::to_string(f.size) +
                       " bytes the seek table records");
      }
      // The part of this chunk inside [offset, end).
      const uint64_t chunk_at = f.offset + produced;
      const uint64_t lo = std::max(chunk_at, offset);
      const uint64_t hi = std::min(chunk_at + zout.pos, end);
      if (lo < hi) {
        ETPACK_RETURN_IF_ERROR(output.Write(lo - offset, out.data() + (lo - chunk_at), hi - lo));
        if (progress) progress(hi - offset, length);
      }
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
