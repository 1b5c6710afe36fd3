// Compression: frames cut on the artifact's boundaries (archive_regions.cc),
// compressed by worker threads, written in order through the output seam
// (ordered_jobs.h bounds how far the workers run ahead).
//
// The compressed size is known only at the end, so the output reserves the
// worst case (zstd's bound per frame) and is truncated before publishing.

#include <zstd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "archive/archive_format.h"
#include "archive/ordered_jobs.h"
#include "etpack/archive.h"

namespace etpack {
namespace {

struct CCtxDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};

// One compressing worker: its zstd context and input buffer.
struct Compressor {
  std::unique_ptr<ZSTD_CCtx, CCtxDeleter> cctx{ZSTD_createCCtx()};
  std::vector<uint8_t> in;
};

// Frame i of `input` ([ends[i - 1], ends[i])) compressed into `out`.
Status CompressFrame(Compressor& c, const Source& input, const std::vector<uint64_t>& ends,
                     int level, size_t i, std::vector<uint8_t>* out) {
  if (c.cctx == nullptr) return OutOfRange("cannot allocate a zstd compression context");
  const uint64_t begin = i == 0 ? 0 : ends[i - 1];
  const size_t n = static_cast<size_t>(ends[i] - begin);
  c.in.resize(n);
  ETPACK_RETURN_IF_ERROR(input.ReadAt(begin, c.in.data(), n));
  out->resize(ZSTD_compressBound(n));
  ZSTD_CCtx* cctx = c.cctx.get();
  ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
  // Stock `zstd -d` and Extract() both check it.
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
  const size_t r = ZSTD_compress2(cctx, out->data(), out->size(), c.in.data(), n);
  if (ZSTD_isError(r)) {
    return Status(Code::kIoError, input.Describe() + ": zstd cannot compress frame " +
                                      std::to_string(i) + ": " + ZSTD_getErrorName(r));
  }
  out->resize(r);
  return Status::OK();
}

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

Status CompressFile(OutputFs& fs, const std::string& input, const std::string& output,
                    const ArchiveOptions& options, const ProgressFn& progress) {
  ETPACK_RETURN_IF_ERROR(CheckOptions(options));
  ETPACK_ASSIGN_OR_RETURN(SourcePtr in, FileSource(input));
  ETPACK_ASSIGN_OR_RETURN(std::vector<ArchiveRegion> regions, ArtifactRegions(input));
  const uint64_t size = in->size();
  const std::vector<uint64_t> ends = PlanFrames(size, regions, options.frame_bytes);
  const std::vector<uint8_t> index = EncodeIndex(size, regions);
  if (index.size() - kSkippableHeaderSize > UINT32_MAX) {
    return OutOfRange(input + ": the index of " + std::to_string(regions.size()) +
                      " regions exceeds a skippable frame's 4 GiB");
  }
  if (ends.size() + 1 > UINT32_MAX) {
    return OutOfRange(input + ": " + std::to_string(ends.size()) +
                      " frames exceed the seek table's limit");
  }

  std::vector<SeekEntry> table = {{static_cast<uint32_t>(index.size()), 0}};
  uint64_t bound = index.size() + EncodeSeekTable(std::vector<SeekEntry>(ends.size() + 1)).size();
  for (size_t i = 0; i < ends.size(); ++i) {
    bound += ZSTD_compressBound(static_cast<size_t>(ends[i] - (i ? ends[i - 1] : 0)));
  }
  ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<OutputFile> out, fs.Create(output));
  ETPACK_RETURN_IF_ERROR(CheckNotInputs(*out, {in.get()}));
  ETPACK_RETURN_IF_ERROR(out->Reserve(bound));
  ETPACK_RETURN_IF_ERROR(out->Write(0, index.data(), index.size()));

  int threads = options.threads;
  if (threads == 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  uint64_t at = index.size();
  ETPACK_RETURN_IF_ERROR(RunOrderedJobs<Compressor>(
      ends.size(), threads, static_cast<size_t>(threads) + 2, [] { return Compressor(); },
      [&](Compressor& c, size_t i, std::vector<uint8_t>* out) {
        return CompressFrame(c, *in, ends, options.level, i, out);
      },
      [&](size_t i, const std::vector<uint8_t>& frame) -> Status {
        ETPACK_RETURN_IF_ERROR(out->Write(at, frame.data(), frame.size()));
        at += frame.size();
        const uint64_t begin = i ? ends[i - 1] : 0;
        table.push_back(
            {static_cast<uint32_t>(frame.size()), static_cast<uint32_t>(ends[i] - begin)});
        if (progress) progress(ends[i], size);
        return Status::OK();
      }));
  const std::vector<uint8_t> seek_table = EncodeSeekTable(table);
  ETPACK_RETURN_IF_ERROR(out->Write(at, seek_table.data(), seek_table.size()));
  ETPACK_RETURN_IF_ERROR(out->Truncate(at + seek_table.size()));
  std::vector<std::unique_ptr<OutputFile>> outputs;
  outputs.push_back(std::move(out));
  return Publish(std::move(outputs));
}

Status CompressFile(const std::string& input, const std::string& output,
                    const ArchiveOptions& options, const ProgressFn& progress) {
  std::unique_ptr<OutputFs> fs = NewPosixOutputFs();
  return CompressFile(*fs, input, output, options, progress);
}

}  // namespace etpack
