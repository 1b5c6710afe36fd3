// Compression: frames cut on the artifact's boundaries (archive_regions.cc),
// compressed by worker threads, written in order through the output seam.
//
// The compressed size is known only at the end, so the output reserves the
// worst case (zstd's bound per frame) and is truncated before publishing.
// Workers take frame indices in order and may run ahead of the writer by a
// fixed number of slots, so memory is bounded by (threads + slots) frames
// whatever the input size.

#include <zstd.h>

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "archive/archive_format.h"
#include "etpack/archive.h"

namespace etpack {
namespace {

struct CCtxDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};

// The frames [begin(i), ends[i]) of `input`, compressed by `threads`
// workers and handed to the sink in order on the calling thread.
class FramePipeline {
 public:
  using Sink = std::function<Status(size_t frame, const uint8_t* bytes, size_t n)>;

  FramePipeline(const Source& input, const std::vector<uint64_t>& ends,
                const ArchiveOptions& options, int threads)
      : input_(input),
        ends_(ends),
        options_(options),
        threads_(threads),
        slots_(static_cast<size_t>(threads) + 2) {}

  Status Run(const Sink& sink) {
    std::vector<std::thread> workers;
    for (int t = 0; t < threads_; ++t) workers.emplace_back([this] { Work(); });
    Status result;
    for (size_t i = 0; i < ends_.size(); ++i) {
      Slot& slot = slots_[i % slots_.size()];
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return slot.ready; });
      }
      result = slot.status;
      if (result.ok()) result = sink(i, slot.bytes.data(), slot.size);
      if (!result.ok()) break;
      std::lock_guard<std::mutex> lock(mu_);
      slot.ready = false;
      ++written_;
      cv_.notify_all();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      cv_.notify_all();
    }
    for (std::thread& w : workers) w.join();
    return result;
  }

 private:
  struct Slot {
    std::vector<uint8_t> bytes;
    size_t size = 0;
    Status status;
    bool ready = false;
  };

  uint64_t Begin(size_t i) const { return i == 0 ? 0 : ends_[i - 1]; }

  void Work() {
    std::unique_ptr<ZSTD_CCtx, CCtxDeleter> cctx(ZSTD_createCCtx());
    std::vector<uint8_t> in;
    for (;;) {
      size_t i;
      {
        std::unique_lock<std::mutex> lock(mu_);
        // A slot is free once the frame that used it before was written.
        cv_.wait(lock, [&] {
          return stop_ || next_ >= ends_.size() || next_ < written_ + slots_.size();
        });
        if (stop_ || next_ >= ends_.size()) return;
        i = next_++;
      }
      Slot& slot = slots_[i % slots_.size()];
      slot.status = Compress(cctx.get(), i, &in, &slot);
      std::lock_guard<std::mutex> lock(mu_);
      slot.ready = true;
      cv_.notify_all();
    }
  }

  Status Compress(ZSTD_CCtx* cctx, size_t i, std::vector<uint8_t>* in, Slot* slot) const {
    if (cctx == nullptr) return OutOfRange("cannot allocate a zstd compression context");
    const size_t n = static_cast<size_t>(ends_[i] - Begin(i));
    in->resize(n);
    ETPACK_RETURN_IF_ERROR(input_.ReadAt(Begin(i), in->data(), n));
    slot->bytes.resize(ZSTD_compressBound(n));
    ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, options_.level);
    // Stock `zstd -d` and Extract() both check it.
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
    const size_t r = ZSTD_compress2(cctx, slot->bytes.data(), slot->bytes.size(), in->data(), n);
    if (ZSTD_isError(r)) {
      return Status(Code::kIoError, input_.Describe() + ": zstd cannot compress frame " +
                                        std::to_string(i) + ": " + ZSTD_getErrorName(r));
    }
    slot->size = r;
    return Status::OK();
  }

  const Source& input_;
  const std::vector<uint64_t>& ends_;
  const ArchiveOptions options_;
  const int threads_;
  std::vector<Slot> slots_;

  std::mutex mu_;
  std::condition_variable cv_;
  size_t next_ = 0;     // the next frame a worker takes
  size_t written_ = 0;  // frames the sink has taken
  bool stop_ = false;
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
  ETPACK_RETURN_IF_ERROR(out->Reserve(bound));
  ETPACK_RETURN_IF_ERROR(out->Write(0, index.data(), index.size()));

  int threads = options.threads;
  if (threads == 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  FramePipeline pipeline(*in, ends, options, threads);
  uint64_t at = index.size();
  ETPACK_RETURN_IF_ERROR(pipeline.Run([&](size_t i, const uint8_t* bytes, size_t n) -> Status {
    ETPACK_RETURN_IF_ERROR(out->Write(at, bytes, n));
    at += n;
    const uint64_t begin = i ? ends[i - 1] : 0;
    table.push_back({static_cast<uint32_t>(n), static_cast<uint32_t>(ends[i] - begin)});
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
