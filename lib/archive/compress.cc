// Compression: frames cut on the artifact's boundaries (archive_regions.cc),
// compressed by worker threads and handed in order to the writer as the
// tail of a plan (ordered_jobs.h bounds how far the workers run ahead).
//
// The compressed size is known only at the end, so the writer reserves the
// worst case (zstd's bound per frame) and cuts the file before publishing.
// The region index is the last frame: it holds each region's hash, known
// only once the frames are written, and the output is written front to back.

#include <zstd.h>

#include <algorithm>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "archive/archive_format.h"
#include "archive/ordered_jobs.h"
#include "archive/pushed_stream.h"
#include "core/range_text.h"
#include "etpack/archive.h"
#include "integrity/hash.h"

namespace etpack {
namespace {

struct CCtxDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};

// Input is read and fed to zstd this much at a time.
constexpr size_t kChunk = size_t{1} << 20;
// Workers by default. Each costs a few MiB and a slot of up to one
// compressed frame (8 MiB); two of them keep compression within a 64 MiB
// memory limit (with the output's 16 MiB window) and near disk speed.
// ArchiveOptions::threads asks for more.
constexpr unsigned kMaxDefaultThreads = 2;

// One compressing worker: its zstd context and input chunk.
struct Compressor {
  std::unique_ptr<ZSTD_CCtx, CCtxDeleter> cctx{ZSTD_createCCtx()};
  std::vector<uint8_t> in;
};

// Input bytes [begin, begin + n) compressed as one frame into `out`
// (`where` names it in errors). The input streams through 1 MiB at a time
// (zstd keeps only its window, 2 MiB at level 3, not the whole frame) and
// `out` grows with what zstd produces instead of holding zstd's bound, so a
// worker costs a few MiB and a slot the compressed frame.
Status CompressFrame(Compressor& c, const Source& input, uint64_t begin, uint64_t n, int level,
                     const std::string& where, std::vector<uint8_t>* out) {
  if (c.cctx == nullptr) return OutOfRange(where + ": cannot allocate a zstd compression context");
  ZSTD_CCtx* cctx = c.cctx.get();
  ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
  // Stock `zstd -d` and Extract() both check it.
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
  // The frame header records the content size, as a one-shot compression would.
  ZSTD_CCtx_setPledgedSrcSize(cctx, n);
  c.in.resize(static_cast<size_t>(std::min<uint64_t>(kChunk, n)));
  // Capacity for zstd's bound, which one frame never exceeds, taken at once
  // (growing by reallocation would leave the smaller blocks behind in the
  // allocator); its pages are touched only as the size grows, by doubling.
  const size_t bound = ZSTD_compressBound(static_cast<size_t>(n));
  out->reserve(bound);
  out->resize(std::min(bound, kChunk));
  size_t produced = 0;
  uint64_t done = 0;
  for (;;) {
    const size_t m = static_cast<size_t>(std::min<uint64_t>(kChunk, n - done));
    ETPACK_RETURN_IF_ERROR(input.ReadAt(begin + done, c.in.data(), m));
    done += m;
    const ZSTD_EndDirective mode = done == n ? ZSTD_e_end : ZSTD_e_continue;
    ZSTD_inBuffer zin = {c.in.data(), m, 0};
    for (;;) {
      if (produced == out->size()) {
        if (produced == bound) {
          return Status(Code::kIoError, where + ": zstd produced more than its own bound");
        }
        out->resize(std::min(bound, out->size() * 2));
      }
      ZSTD_outBuffer zout = {out->data(), out->size(), produced};
      const size_t left = ZSTD_compressStream2(cctx, &zout, &zin, mode);
      if (ZSTD_isError(left)) {
        return Status(Code::kIoError,
                      where + ": zstd cannot compress it: " + ZSTD_getErrorName(left));
      }
      produced = zout.pos;
      if (mode == ZSTD_e_end ? left == 0 : zin.pos == zin.size) break;
    }
    if (mode == ZSTD_e_end) break;
  }
  out->resize(produced);
  return Status::OK();
}

// The XXH3-64 of every region's bytes, fed the input frame by frame in
// order (from the writer, while the frame is still in the page cache).
// Regions with the same range (a tensor and its segment, keys sharing a
// blob) share one running hash; nested ones (a .bpte's program and its
// segments) each get theirs.
class RegionHasher {
 public:
  explicit RegionHasher(const std::vector<ArchiveRegion>& regions) {
    for (const ArchiveRegion& r : regions) ranges_.push_back({r.offset, r.offset + r.size});
    std::sort(ranges_.begin(), ranges_.end());
    ranges_.erase(std::unique(ranges_.begin(), ranges_.end()), ranges_.end());
    hashes_.resize(ranges_.size());
  }

  // Feeds input bytes [begin, end); calls come in order and cover the file.
  Status Feed(const Source& input, uint64_t begin, uint64_t end) {
    constexpr uint64_t kChunk = uint64_t{1} << 20;
    for (uint64_t at = begin;;) {
      const uint64_t stop = std::min(end, at + kChunk);
      // Ranges starting in [at, stop] open; an empty one closes at once.
      while (next_ < ranges_.size() && ranges_[next_].first <= stop) {
        ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<RunningHash> h, NewRunningHash(HashKind::kXxh3_64));
        open_.push_back({next_++, std::move(h)});
      }
      if (stop > at && !open_.empty()) {  // bytes no region covers are not read
        buffer_.resize(static_cast<size_t>(stop - at));
        ETPACK_RETURN_IF_ERROR(input.ReadAt(at, buffer_.data(), buffer_.size()));
      }
      for (size_t k = 0; k < open_.size();) {
        const std::pair<uint64_t, uint64_t>& r = ranges_[open_[k].first];
        const uint64_t lo = std::max(at, r.first);
        const uint64_t hi = std::min(stop, r.second);
        if (lo < hi) open_[k].second->Update(buffer_.data() + (lo - at), hi - lo);
        if (r.second <= stop) {
          hashes_[open_[k].first] = Xxh3Value(open_[k].second->Finish());
          open_[k] = std::move(open_.back());
          open_.pop_back();
        } else {
          ++k;
        }
      }
      if (stop == end) break;
      at = stop;
    }
    return Status::OK();
  }

  // The checksums into `regions`. REQUIRES: the whole file was fed.
  void Assign(std::vector<ArchiveRegion>* regions) const {
    for (ArchiveRegion& r : *regions) {
      const auto it = std::lower_bound(ranges_.begin(), ranges_.end(),
                                       std::make_pair(r.offset, r.offset + r.size));
      r.xxh3 = hashes_[static_cast<size_t>(it - ranges_.begin())];
    }
  }

 private:
  std::vector<std::pair<uint64_t, uint64_t>> ranges_;  // [begin, end), sorted, distinct
  std::vector<uint64_t> hashes_;                       // per range
  size_t next_ = 0;                                    // first range not opened yet
  std::vector<std::pair<size_t, std::unique_ptr<RunningHash>>> open_;
  std::vector<uint8_t> buffer_;
};

Status CheckOptions(const ArchiveOptions& o) {
  if (o.level < 1 || o.level > ZSTD_maxCLevel()) {
    return InvalidArgument("archive level " + std::to_string(o.level) + " is outside 1.." +
                           std::to_string(ZSTD_maxCLevel()));
  }
  if (o.frame_bytes == 0 || o.frame_bytes > kMaxFrameBytes) {
    return InvalidArgument("archive frame_bytes " + std::to_string(o.frame_bytes) +
                           " is outside 1.." + std::to_string(kMaxFrameBytes));
  }
  if (o.threads < 0) {
    return InvalidArgument("archive threads " + std::to_string(o.threads) + " is negative");
  }
  return Status::OK();
}

}  // namespace

// A function-try-block: whatever this thread fails to allocate, the error
// names the input (workers report their own, naming the frame).
Result<ArtifactPlan> CompressPlan(const std::string& input, const ArchiveOptions& options,
                                  const Env& env) try {
  ETPACK_RETURN_IF_ERROR(CheckOptions(options));
  ETPACK_ASSIGN_OR_RETURN(SourcePtr in, FileSource(env.in(), input));
  ETPACK_ASSIGN_OR_RETURN(std::vector<ArchiveRegion> regions, ArtifactRegions(input, in));
  const uint64_t size = in->size();
  const std::vector<uint64_t> ends = PlanFrames(size, regions, options.frame_bytes);
  // The index goes last, once every region has been hashed; its size does
  // not depend on the hashes, so the bound below already counts it.
  const uint64_t index_size = EncodeIndex(size, regions).size();
  if (index_size - kSkippableHeaderSize > UINT32_MAX) {
    return OutOfRange(input + ": the index of " + std::to_string(regions.size()) +
                      " regions exceeds a skippable frame's 4 GiB");
  }
  if (ends.size() + 1 > UINT32_MAX) {
    return OutOfRange(input + ": " + std::to_string(ends.size()) +
                      " frames exceed the seek table's limit");
  }

  uint64_t bound = index_size + EncodeSeekTable(std::vector<SeekEntry>(ends.size() + 1)).size();
  for (size_t i = 0; i < ends.size(); ++i) {
    bound += ZSTD_compressBound(static_cast<size_t>(ends[i] - (i ? ends[i - 1] : 0)));
  }
  int threads = options.threads;
  if (threads == 0) {
    threads =
        static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, kMaxDefaultThreads));
  }
  // The archive is the tail of an empty plan: the writer reserves the
  // bound, writes the frames as the workers finish them, in order, and cuts
  // the file where the seek table ends.
  ArtifactPlan plan;
  plan.file_size = bound;
  plan.inputs.push_back(in);
  plan.tail = PushedStream(
      "compressing " + input + " (" + std::to_string(size) + " bytes)", bound, size,
      [in, input, ends, regions, options, threads](const PutFn& put) mutable -> Status {
        RegionHasher hasher(regions);
        std::vector<SeekEntry> table;
        auto frame_name = [&](size_t i) {
          const uint64_t begin = i ? ends[i - 1] : 0;
          return input + ": frame " + std::to_string(i) + " " + RangeText(begin, ends[i] - begin);
        };
        ETPACK_RETURN_IF_ERROR(RunOrderedJobs<Compressor>(
            ends.size(), threads, static_cast<size_t>(threads) + 1, frame_name,
            [] { return Compressor(); },
            [&](Compressor& c, size_t i, std::vector<uint8_t>* out) {
              const uint64_t begin = i ? ends[i - 1] : 0;
              return CompressFrame(c, *in, begin, ends[i] - begin, options.level, frame_name(i),
                                   out);
            },
            [&](size_t i, const std::vector<uint8_t>& frame) -> Status {
              const uint64_t begin = i ? ends[i - 1] : 0;
              ETPACK_RETURN_IF_ERROR(put(frame.data(), frame.size(), ends[i] - begin));
              ETPACK_RETURN_IF_ERROR(hasher.Feed(*in, begin, ends[i]));
              table.push_back(
                  {static_cast<uint32_t>(frame.size()), static_cast<uint32_t>(ends[i] - begin)});
              return Status::OK();
            }));
        if (ends.empty())
          ETPACK_RETURN_IF_ERROR(hasher.Feed(*in, 0, 0));  // an empty file's regions
        hasher.Assign(&regions);
        const std::vector<uint8_t> index = EncodeIndex(in->size(), regions);
        ETPACK_RETURN_IF_ERROR(put(index.data(), index.size(), 0));
        table.push_back({static_cast<uint32_t>(index.size()), 0});
        const std::vector<uint8_t> seek_table = EncodeSeekTable(table);
        return put(seek_table.data(), seek_table.size(), 0);
      });
  return plan;
} catch (const std::bad_alloc&) {
  return OutOfRange(input + ": out of memory planning its archive");
}

Status CompressFile(const std::string& input, const std::string& output,
                    const ArchiveOptions& options, const WriteOptions& write, const Env& env) {
  ETPACK_ASSIGN_OR_RETURN(ArtifactPlan plan, CompressPlan(input, options, env));
  return WriteArtifactFiles({{output, &plan}}, write, env);
}

}  // namespace etpack
