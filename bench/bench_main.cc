// In-process benchmarks (Google Benchmark). Whole-process runs against cp
// live in scripts/bench.sh; these time the parts that do not touch a disk.
//
//   build-release/bench/etpack_bench [--benchmark_filter=Plan]

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "etpack/json.h"
#include "etpack/pte.h"
#include "etpack/sink.h"
#include "etpack/source.h"
#include "etpack/writer.h"

namespace {

using etpack::json::Value;

Value Ints(std::initializer_list<int64_t> v) {
  std::vector<Value> items;
  for (int64_t x : v) items.push_back(Value::Int(x));
  return Value::Array(std::move(items));
}

// A program with `tensors` constant f16[64, 64] tensors (never read: their
// sources are generators that fail if touched) and `blobs` delegates with
// distinct 1 KiB payloads.
etpack::PteInput Program(int tensors, int blobs) {
  auto never = [](uint64_t, uint8_t*, size_t) {
    return etpack::InvalidArgument("planning must not read constant data");
  };
  std::vector<Value> values, buffers = {Value::Object({{"storage", Value::Array()}})};
  values.reserve(tensors);
  buffers.reserve(tensors + 1);
  for (int i = 0; i < tensors; ++i) {
    values.push_back(Value::Object(
        {{"val_type", Value::String("Tensor")},
         {"val", Value::Object({{"scalar_type", Value::Int(5)},
                                {"sizes", Ints({64, 64})},
                                {"dim_order", Ints({0, 1})},
                                {"data_buffer_idx", Value::Int(i + 1)}})}}));
    buffers.push_back(Value::Object(
        {{"storage", Value::Blob(etpack::GeneratorSource("w" + std::to_string(i), 8192, never))}}));
  }
  std::vector<Value> delegates, inline_data;
  for (int d = 0; d < blobs; ++d) {
    std::vector<uint8_t> payload(1024, static_cast<uint8_t>(d));
    payload[0] = static_cast<uint8_t>(d >> 8);
    delegates.push_back(Value::Object(
        {{"id", Value::String("XnnpackBackend")},
         {"processed", Value::Object({{"location", Value::Int(0)}, {"index", Value::Int(d)}})},
         {"compile_specs", Value::Array()}}));
    inline_data.push_back(
        Value::Object({{"data", Value::Blob(etpack::OwnedSource(std::move(payload)))}}));
  }
  Value chain = Value::Object(
      {{"inputs", Value::Array()}, {"outputs", Value::Array()}, {"instructions", Value::Array()}});
  Value plan = Value::Object({{"name", Value::String("forward")},
                              {"values", Value::Array(std::move(values))},
                              {"inputs", Value::Array()},
                              {"outputs", Value::Array()},
                              {"chains", Value::Array({chain})},
                              {"operators", Value::Array()},
                              {"delegates", Value::Array(std::move(delegates))},
                              {"non_const_buffer_sizes", Ints({0})}});
  etpack::PteInput in;
  in.program = Value::Object({{"version", Value::Int(0)},
                              {"execution_plan", Value::Array({plan})},
                              {"constant_buffer", Value::Array(std::move(buffers))},
                              {"backend_delegate_data", Value::Array(std::move(inline_data))},
                              {"segments", Value::Array()}});
  return in;
}

// Pass one alone: layout and the finished flatbuffer header.
void BM_PlanTensors(benchmark::State& state) {
  const etpack::PteInput in = Program(static_cast<int>(state.range(0)), 0);
  for (auto _ : state) {
    auto plan = etpack::PlanPte(in);
    if (!plan.ok()) state.SkipWithError(plan.status().ToString().c_str());
    benchmark::DoNotOptimize(plan);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_PlanTensors)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

// An XNNPACK-style export: many small delegate blobs, planned (including
// the equal-size comparisons of deduplication) and written to memory.
void BM_DelegateBlobs(benchmark::State& state) {
  const int blobs = static_cast<int>(state.range(0));
  const etpack::PteInput in = Program(0, blobs);
  for (auto _ : state) {
    auto plan = etpack::PlanPte(in);
    if (!plan.ok()) {
      state.SkipWithError(plan.status().ToString().c_str());
      break;
    }
    std::vector<uint8_t> out;
    auto sink = etpack::NewMemorySink(&out);
    etpack::Status s = etpack::WriteArtifact(plan->artifact, *sink);
    if (s.ok()) s = sink->Finish();
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
    benchmark::DoNotOptimize(out.data());
  }
  // items_per_second counts blobs: 1 / it is the whole cost per blob.
  state.SetItemsProcessed(state.iterations() * blobs);
}
BENCHMARK(BM_DelegateBlobs)->Arg(225)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
