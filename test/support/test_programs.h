// Small programs and helpers shared by the tests.
#ifndef ETPACK_TEST_PROGRAMS_H_
#define ETPACK_TEST_PROGRAMS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>
#include "catch.h"

#include "etpack/json.h"
#include "etpack/output.h"
#include "etpack/program_builder.h"
#include "etpack/pte.h"
#include "etpack/pte_file.h"
#include "etpack/writer.h"

namespace etpack::testing {

using json::Value;

inline Value IntArray(std::vector<int64_t> v) {
  std::vector<Value> items;
  for (int64_t x : v) items.push_back(Value::Int(x));
  return Value::Array(std::move(items));
}

// The shape of a u8[n] tensor (scalar_type BYTE). Dimensions are int32:
// beyond that, n must be a multiple of 65536 and the tensor becomes
// u8[n / 65536, 65536].
inline TensorShape ByteShape(uint64_t n) {
  if (n <= INT32_MAX) return {0, {static_cast<int32_t>(n)}, {}};
  return {0, {static_cast<int32_t>(n / 65536), 65536}, {}};
}

// One method "forward" with a u8 constant tensor per source (constant i + 1,
// value i), and one delegate per entry of `delegate_payloads` (given INLINE
// by index).
inline PteInput SmallProgram(const std::vector<SourcePtr>& constants,
                             const std::vector<SourcePtr>& delegate_payloads = {}) {
  PteInput in;
  ProgramBuilder program;
  MethodBuilder& forward = program.AddMethod("forward");
  in.constants.push_back(OwnedSource({}));
  for (size_t i = 0; i < constants.size(); ++i) {
    forward.ConstantTensor(ByteShape(constants[i]->size()), static_cast<uint32_t>(i + 1));
    in.constants.push_back(constants[i]);
  }
  for (size_t d = 0; d < delegate_payloads.size(); ++d) {
    forward.Delegate("TestBackend", static_cast<uint32_t>(d));
    in.delegates.push_back(delegate_payloads[d]);
  }
  in.program = std::move(program).Build();
  return in;
}

// The values of the first method of a tree-form program.
inline std::vector<Value>& Values(PteInput& in) {
  return in.program.tree().Find("execution_plan")->items()[0].Find("values")->items();
}

// The delegates of the first method of a tree-form program.
inline std::vector<Value>& Delegates(PteInput& in) {
  return in.program.tree().Find("execution_plan")->items()[0].Find("delegates")->items();
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

// A reader (PteFile, PtdFile, BpteFile) over `bytes`, which it keeps alive.
template <typename File>
Result<std::unique_ptr<File>> TryRead(const std::string& name, std::vector<uint8_t> bytes) {
  auto owner = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  return File::FromMemory(name, owner->data(), owner->size(), owner);
}

// The same, required to succeed.
template <typename File>
std::unique_ptr<File> Read(const std::string& name, std::vector<uint8_t> bytes) {
  auto f = TryRead<File>(name, std::move(bytes));
  INFO(f.status().ToString());
  REQUIRE(f.ok());
  return std::move(f).value();
}

// A .pte held in memory, read back (required to succeed).
inline std::unique_ptr<PteFile> ReadPte(std::vector<uint8_t> bytes) {
  return Read<PteFile>("mem.pte", std::move(bytes));
}

// Three constant tensors over two buffers: values 0 and 2 read constant 1
// (2 only its first 32 bytes), value 1 reads constant 2.
inline PteInput SharedBufferProgram() {
  PteInput in = SmallProgram({Pattern(64, 1), Pattern(32, 2)});
  ProgramBuilder program;
  MethodBuilder& forward = program.AddMethod("forward");
  forward.ConstantTensor(ByteShape(64), 1);
  forward.ConstantTensor(ByteShape(32), 2);
  forward.ConstantTensor(ByteShape(32), 1);
  in.program = std::move(program).Build();
  return in;
}

}  // namespace etpack::testing

#endif  // ETPACK_TEST_PROGRAMS_H_
