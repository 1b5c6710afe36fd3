// In-process benchmarks (Google Benchmark). Whole-process runs against cp
// live in scripts/bench.sh; these time single parts: planning, hashing, and
// the file sink on its own (BM_SinkWrite, BM_FileCopy write 256 MiB files
// into a temporary directory under $TMPDIR or /tmp and remove them).
//
//   build-release/bench/etpack_bench [--benchmark_filter=Plan]

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "etpack/output.h"
#include "etpack/program_builder.h"
#include "etpack/ptd.h"
#include "etpack/pte.h"
#include "etpack/source.h"
#include "etpack/writer.h"
#include "plan/named_store.h"

namespace {

// A program with `tensors` constant f16[64, 64] tensors (never read: their
// sources are generators that fail if touched) and `blobs` delegates with
// distinct 1 KiB payloads.
etpack::PteInput Program(int tensors, int blobs) {
  auto never = [](uint64_t, uint8_t*, size_t) {
    return etpack::InvalidArgument("planning must not read constant data");
  };
  etpack::PteInput in;
  etpack::ProgramBuilder program;
  etpack::MethodBuilder& forward = program.AddMethod("forward");
  in.constants.reserve(tensors + 1);
  in.constants.push_back(etpack::OwnedSource({}));
  for (int i = 0; i < tensors; ++i) {
    forward.ConstantTensor({5, {64, 64}, {}}, static_cast<uint32_t>(i + 1));
    in.constants.push_back(etpack::GeneratorSource("w" + std::to_string(i), 8192, never));
  }
  for (int d = 0; d < blobs; ++d) {
    std::vector<uint8_t> payload(1024, static_cast<uint8_t>(d));
    payload[0] = static_cast<uint8_t>(d >> 8);
    forward.Delegate("XnnpackBackend", static_cast<uint32_t>(d));
    in.delegates.push_back(etpack::OwnedSource(std::move(payload)));
  }
  in.program = std::move(program).Build();
  return in;
}

// Plans `in` once per iteration. The planner takes its input, so each
// iteration plans a copy made outside the timing.
void PlanEachIteration(benchmark::State& state, const etpack::PteInput& in) {
  for (auto _ : state) {
    state.PauseTiming();
    etpack::PteInput copy = in;
    state.ResumeTiming();
    auto plan = etpack::PlanPte(std::move(copy));
    if (!plan.ok()) state.SkipWithError(plan.status().ToString().c_str());
    benchmark::DoNotOptimize(plan);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

// Pass one alone: layout and the finished flatbuffer header.
void BM_PlanTensors(benchmark::State& state) {
  PlanEachIteration(state, Program(static_cast<int>(state.range(0)), 0));
}
BENCHMARK(BM_PlanTensors)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

// The same program given as flatbuffer bytes: verification and conversion
// to the tree come on top.
void BM_PlanTensorsFromFlatbuffer(benchmark::State& state) {
  etpack::PteInput in = Program(static_cast<int>(state.range(0)), 0);
  // A plan's head is the Program flatbuffer (planning it again rewrites
  // its segment tables); planning reads no constant bytes.
  auto planned = etpack::PlanPte(in);
  if (!planned.ok()) {
    state.SkipWithError(planned.status().ToString().c_str());
    return;
  }
  in.program = etpack::ProgramStructure::FromFlatbuffer(
      etpack::OwnedSource(std::move(planned->artifact.head)));
  PlanEachIteration(state, in);
}
BENCHMARK(BM_PlanTensorsFromFlatbuffer)->Arg(100000)->Unit(benchmark::kMillisecond);

// An XNNPACK-style export: many small delegate blobs, planned (including
// the equal-size comparisons of deduplication) and written to memory.
void BM_DelegateBlobs(benchmark::State& state) {
  const int blobs = static_cast<int>(state.range(0));
  const etpack::PteInput in = Program(0, blobs);
  for (auto _ : state) {
    auto plan = etpack::PlanPte(in);  // a copy: delegate payloads are shared, not copied
    if (!plan.ok()) {
      state.SkipWithError(plan.status().ToString().c_str());
      break;
    }
    auto out = etpack::WriteArtifactToMemory(plan->artifact);
    if (!out.ok()) state.SkipWithError(out.status().ToString().c_str());
    if (out.ok()) benchmark::DoNotOptimize(out->data());
  }
  // items_per_second counts blobs: 1 / it is the whole cost per blob.
  state.SetItemsProcessed(state.iterations() * blobs);
}
BENCHMARK(BM_DelegateBlobs)->Arg(225)->Unit(benchmark::kMillisecond);

// N distinct 64-byte tensors of one shape (u8[64]), in memory: what
// planning costs per tensor when every tensor meets every other's size.
// Each starts with its index, the rest is one shared pattern.
etpack::PtdInput ManyTensors(size_t n) {
  etpack::PtdInput in;
  in.buffers.reserve(n);
  in.entries.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    std::vector<uint8_t> bytes(64, 0x5a);
    for (size_t k = 0; k < 8; ++k) bytes[k] = static_cast<uint8_t>(i >> (8 * k));
    in.buffers.push_back(etpack::OwnedSource(std::move(bytes)));
    in.entries.push_back({"t." + std::to_string(i), static_cast<uint32_t>(i), 1,
                          etpack::TensorLayout{0, {64}, {0}}});
  }
  return in;
}

// A whole .ptd plan (dedup, FlatTensor, layout) of N such tensors. Up to
// about 333,000: a .ptd entry with a layout and its own segment costs three
// flatbuffer tables, and the planner refuses more than the FlatBuffers
// verifier's 1,000,000.
void BM_PlanPtdTensors(benchmark::State& state) {
  const etpack::PtdInput in = ManyTensors(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    auto plan = etpack::PlanPtd(in);
    if (!plan.ok()) {
      state.SkipWithError(plan.status().ToString().c_str());
      break;
    }
    benchmark::DoNotOptimize(plan->artifact.head.data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_PlanPtdTensors)->Arg(10000)->Arg(100000)->Arg(300000)->Unit(benchmark::kMillisecond);

// The planner's named-data stage alone (keys, content dedup), which every
// .pte and .ptd planner runs: up to 1M tensors, past the size a single file
// may reach, to show its cost per tensor stays flat.
void BM_NamedDataTensors(benchmark::State& state) {
  const etpack::PtdInput in = ManyTensors(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    etpack::NamedDataStore store(etpack::SharedAlignment::kFirstKey,
                                 [](size_t i) { return "entries[" + std::to_string(i) + "]"; });
    store.Reserve(in.entries.size());
    for (size_t i = 0; i < in.entries.size(); ++i) {
      const etpack::PtdEntry& e = in.entries[i];
      auto added = store.Add(e.key, in.buffers[e.buffer_index], e.alignment, i);
      if (!added.ok()) {
        state.SkipWithError(added.status().ToString().c_str());
        break;
      }
    }
    benchmark::DoNotOptimize(store.buffers().data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_NamedDataTensors)
    ->Arg(10000)
    ->Arg(100000)
    ->Arg(1000000)
    ->Unit(benchmark::kMillisecond);

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kBig = 256 * kMiB;

// 256 MiB of incompressible bytes, built (and so faulted in) once, outside
// any timed region. Every in-memory benchmark below reads a prefix of it.
const std::vector<uint8_t>& Payload() {
  static const std::vector<uint8_t> bytes = [] {
    std::vector<uint8_t> b(kBig);
    uint64_t x = 0x9E3779B97F4A7C15u;
    for (size_t i = 0; i < b.size(); i += sizeof x) {
      x ^= x << 13;  // xorshift64
      x ^= x >> 7;
      x ^= x << 17;
      std::memcpy(&b[i], &x, sizeof x);
    }
    return b;
  }();
  return bytes;
}

// One scratch directory per run, made on first use and removed by main().
std::string g_scratch;

etpack::Result<std::string> ScratchDir() {
  if (g_scratch.empty()) {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/etpack-bench-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) return etpack::IoError("mkdtemp " + tmpl, errno);
    g_scratch = tmpl;
  }
  return g_scratch;
}

void RemoveScratchDir() {
  if (g_scratch.empty()) return;
  auto remove_one = [](const char* path, const struct stat*, int, struct FTW*) {
    return std::remove(path);
  };
  if (::nftw(g_scratch.c_str(), remove_one, 8, FTW_DEPTH | FTW_PHYS) != 0) {
    std::fprintf(stderr, "etpack_bench: could not remove %s\n", g_scratch.c_str());
  }
}

// Streams `plan` into <scratch>/out.pte through a fresh POSIX output
// (create, write, publish are all timed), then deletes the file untimed. On
// failure marks the benchmark skipped and returns false; the caller breaks.
bool WriteOnce(benchmark::State& state, const etpack::ArtifactPlan& plan,
               const etpack::OutputOptions& options) {
  auto dir = ScratchDir();
  etpack::Status s = dir.status();
  const std::string path = dir.ok() ? *dir + "/out.pte" : std::string();
  if (s.ok()) {
    etpack::WriteOptions write;
    write.output = options;
    s = etpack::WriteArtifactFile(path, plan, write);
  }
  state.PauseTiming();
  if (!path.empty()) ::unlink(path.c_str());
  state.ResumeTiming();
  if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  return s.ok();
}

// A 64-byte head, then `sources` back to back from offset 4096, each
// page-aligned (sizes are multiples of 4096 here, so no padding between).
etpack::ArtifactPlan PlanOf(std::vector<etpack::SourcePtr> sources) {
  etpack::ArtifactPlan plan;
  plan.head.assign(64, 0xE7);
  plan.file_size = 4096;
  for (auto& source : sources) {
    const uint64_t size = source->size();
    plan.placements.push_back({plan.file_size, 4096, std::move(source)});
    plan.file_size += size;
  }
  return plan;
}

// How fast is the one-shot hash over bytes already in memory (the
// deduplication of in-memory payloads)? Pure CPU: the buffer is resident.
void BM_XXH3(benchmark::State& state) {
  const uint64_t n = static_cast<uint64_t>(state.range(0)) * kMiB;
  const uint8_t* data = Payload().data();
  for (auto _ : state) benchmark::DoNotOptimize(XXH3_64bits(data, n));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(n));
}
BENCHMARK(BM_XXH3)->ArgName("MiB")->Arg(1)->Arg(64)->Arg(256)->Unit(benchmark::kMicrosecond);

// What does hashing in 1 MiB updates cost over the one-shot hash? etpack
// hashes file-backed delegate payloads this way, one chunk per read.
void BM_XXH3_Streaming(benchmark::State& state) {
  const uint64_t n = static_cast<uint64_t>(state.range(0)) * kMiB;
  const uint8_t* data = Payload().data();
  XXH3_state_t* xxh = XXH3_createState();
  if (xxh == nullptr) {
    state.SkipWithError("XXH3_createState failed");
    return;
  }
  for (auto _ : state) {
    (void)XXH3_64bits_reset(xxh);
    for (uint64_t off = 0; off < n; off += kMiB) (void)XXH3_64bits_update(xxh, data + off, kMiB);
    benchmark::DoNotOptimize(XXH3_64bits_digest(xxh));
  }
  XXH3_freeState(xxh);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(n));
}
BENCHMARK(BM_XXH3_Streaming)->ArgName("MiB")->Arg(256)->Unit(benchmark::kMicrosecond);

// Resident memory from /proc/self/status ("VmRSS", "VmHWM"), in bytes.
uint64_t StatusBytes(const char* key) {
  uint64_t kib = 0;
  if (FILE* f = std::fopen("/proc/self/status", "re")) {
    char line[256];
    const size_t n = std::strlen(key);
    while (std::fgets(line, sizeof line, f)) {
      if (std::strncmp(line, key, n) == 0 && line[n] == ':') {
        kib = std::strtoull(line + n + 1, nullptr, 10);
        break;
      }
    }
    std::fclose(f);
  }
  return kib << 10;
}

// Starts a new peak-RSS measurement: the kernel resets VmHWM to the
// current RSS (Linux 4.0+). Returns that baseline.
uint64_t ResetPeakRss() {
  if (FILE* f = std::fopen("/proc/self/clear_refs", "we")) {
    std::fputs("5", f);
    std::fclose(f);
  }
  return StatusBytes("VmRSS");
}

// Which file sink settings write 256 MiB of in-memory bytes to disk
// fastest: mapped windows vs pwrite (mmap 1/0), the window size, and how
// many finished windows may be in write-back at once? sync stays on, so the
// figure includes getting the bytes to stable storage, as the tool does.
void BM_SinkWrite(benchmark::State& state) {
  etpack::OutputOptions options;
  options.mmap = state.range(0) != 0;
  options.window_bytes = static_cast<uint64_t>(state.range(1)) * kMiB;
  options.writeback_windows = static_cast<int>(state.range(2));
  const uint8_t* data = Payload().data();
  std::vector<etpack::SourcePtr> quarters;
  for (uint64_t i = 0; i < 4; ++i) {
    quarters.push_back(etpack::MemorySource(data + i * kBig / 4, kBig / 4));
  }
  const etpack::ArtifactPlan plan = PlanOf(std::move(quarters));
  // The caller's buffer is resident already: whatever the peak adds on top
  // is the sink's own cost for in-memory sources (mapped windows included).
  const uint64_t baseline = ResetPeakRss();
  for (auto _ : state) {
    if (!WriteOnce(state, plan, options)) break;
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(kBig));
  state.counters["peak_rss_above_buffers_MiB"] =
      static_cast<double>(StatusBytes("VmHWM") - std::min(baseline, StatusBytes("VmHWM"))) /
      static_cast<double>(kMiB);
}
// Not the full cross-product: mmap x window at write-back 2, then write-back
// 1 and 4 at the default 16 MiB window.
void SinkWriteArgs(benchmark::internal::Benchmark* b) {
  for (int64_t mmap : {1, 0}) {
    for (int64_t window : {1, 4, 16, 64}) b->Args({mmap, window, 2});
  }
  for (int64_t writeback : {1, 4}) b->Args({1, 16, writeback});
}
BENCHMARK(BM_SinkWrite)
    ->ArgNames({"mmap", "window_MiB", "writeback"})
    ->Apply(SinkWriteArgs)
    ->Iterations(3)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// The input of BM_FileCopy: Payload() written to <scratch>/in.bin and
// synced, once per run.
etpack::Result<std::string> InputFile() {
  static std::string made;
  if (!made.empty()) return made;
  ETPACK_ASSIGN_OR_RETURN(const std::string dir, ScratchDir());
  const std::string path = dir + "/in.bin";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return etpack::IoError("open " + path, errno);
  const std::vector<uint8_t>& bytes = Payload();
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      return etpack::IoError("write " + path, err);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    return etpack::IoError("fsync " + path, err);
  }
  ::close(fd);
  made = path;
  return made;
}

// Evicts one file from the page cache. DONTNEED drops clean pages only,
// hence the fsync first (a no-op once the file is on disk).
etpack::Status DropFromCache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return etpack::IoError("open " + path, errno);
  int err = ::fsync(fd) == 0 ? 0 : errno;
  if (err == 0) err = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  if (err != 0) return etpack::IoError("drop " + path + " from the page cache", err);
  return etpack::Status::OK();
}

// Is the in-kernel copy worth having for file-backed items? The same
// 256 MiB file goes into the output by copy_file_range (1) or by pread
// into the mapped window (0). The input is evicted before every iteration
// so both variants read it from disk. Caches are dropped per file (the
// input only, posix_fadvise DONTNEED), not globally: the rest of the page
// cache, including other processes' files, stays as it is.
void BM_FileCopy(benchmark::State& state) {
  etpack::OutputOptions options;
  options.copy_file_range = state.range(0) != 0;
  auto input = InputFile();
  etpack::Result<etpack::SourcePtr> source =
      input.ok() ? etpack::FileSource(*input) : etpack::Result<etpack::SourcePtr>(input.status());
  if (!source.ok()) {
    state.SkipWithError(source.status().ToString().c_str());
    return;
  }
  const etpack::ArtifactPlan plan = PlanOf({*source});
  for (auto _ : state) {
    state.PauseTiming();
    const etpack::Status dropped = DropFromCache(*input);
    state.ResumeTiming();
    if (!dropped.ok()) {
      state.SkipWithError(dropped.ToString().c_str());
      break;
    }
    if (!WriteOnce(state, plan, options)) break;
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(kBig));
}
BENCHMARK(BM_FileCopy)
    ->ArgName("copy_file_range")
    ->Arg(1)
    ->Arg(0)
    ->Iterations(3)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

// BENCHMARK_MAIN plus removal of the scratch directory.
int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  RemoveScratchDir();
  return 0;
}
