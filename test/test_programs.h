// Small program trees and helpers shared by the tests.
#ifndef ETPACK_TEST_PROGRAMS_H_
#define ETPACK_TEST_PROGRAMS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "etpack/json.h"
#include "etpack/pte.h"
#include "etpack/output.h"
#include "etpack/writer.h"

namespace etpack::testing {

using json::Value;

inline Value IntArray(std::vector<int64_t> v) {
  std::vector<Value> items;
  for (int64_t x : v) items.push_back(Value::Int(x));
  return Value::Array(std::move(items));
}

// A constant tensor value: u8[n] (scalar_type BYTE) using constant `idx`.
// Dimensions are int32: beyond that, n must be a multiple of 65536 and the
// tensor becomes u8[n / 65536, 65536].
inline Value ByteTensor(uint64_t n, uint64_t idx) {
  const bool fits = n <= INT32_MAX;
  Value sizes = fits ? IntArray({static_cast<int64_t>(n)})
                     : IntArray({static_cast<int64_t>(n / 65536), 65536});
  return Value::Object({
      {"val_type", Value::String("Tensor")},
      {"val", Value::Object({{"scalar_type", Value::Int(0)},
                             {"sizes", std::move(sizes)},
                             {"dim_order", fits ? IntArray({0}) : IntArray({0, 1})},
                             {"data_buffer_idx", Value::UInt(idx)}})}});
}

// One method "forward" with a u8 constant tensor per source, and one
// delegate per entry of `delegate_payloads` (given INLINE by index).
inline PteInput SmallProgram(const std::vector<SourcePtr>& constants,
                             const std::vector<SourcePtr>& delegate_payloads = {}) {
  std::vector<Value> values;
  std::vector<Value> buffers = {Value::Object({{"storage", Value::Array()}})};
  for (size_t i = 0; i < constants.size(); ++i) {
    values.push_back(ByteTensor(constants[i]->size(), i + 1));
    buffers.push_back(Value::Object({{"storage", Value::Blob(constants[i])}}));
  }
  std::vector<Value> delegates, inline_data;
  for (size_t d = 0; d < delegate_payloads.size(); ++d) {
    delegates.push_back(Value::Object(
        {{"id", Value::String("TestBackend")},
         {"processed", Value::Object({{"location", Value::Int(0)},
                                      {"index", Value::UInt(d)}})},
         {"compile_specs", Value::Array()}}));
    inline_data.push_back(Value::Object({{"data", Value::Blob(delegate_payloads[d])}}));
  }
  Value chain = Value::Object({{"inputs", Value::Array()},
                               {"outputs", Value::Array()},
                               {"instructions", Value::Array()}});
  Value plan = Value::Object({{"name", Value::String("forward")},
                              {"values", Value::Array(std::move(values))},
                              {"inputs", Value::Array()},
                              {"outputs", Value::Array()},
                              {"chains", Value::Array({chain})},
                              {"operators", Value::Array()},
                              {"delegates", Value::Array(std::move(delegates))},
                              {"non_const_buffer_sizes", IntArray({0})}});
  PteInput in;
  in.program = Value::Object({{"version", Value::Int(0)},
                              {"execution_plan", Value::Array({plan})},
                              {"constant_buffer", Value::Array(std::move(buffers))},
                              {"backend_delegate_data", Value::Array(std::move(inline_data))},
                              {"segments", Value::Array()}});
  return in;
}

inline SourcePtr Bytes(std::vector<uint8_t> b) { return OwnedSource(std::move(b)); }

inline SourcePtr Pattern(uint64_t n, uint8_t seed) {
  std::vector<uint8_t> b(n);
  for (uint64_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(seed + i * 7);
  return OwnedSource(std::move(b));
}

// Writes a plan into memory.
inline std::vector<uint8_t> Materialize(const ArtifactPlan& plan) {
  Result<std::vector<uint8_t>> out = WriteArtifactToMemory(plan);
  if (!out.ok()) throw std::runtime_error(out.status().ToString());
  return std::move(out).value();
}

}  // namespace etpack::testing

#endif  // ETPACK_TEST_PROGRAMS_H_
