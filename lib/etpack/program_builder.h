// etpack/program_builder.h — a typed builder of the Program structure.
//
// Builds what PteInput::program holds without writing the flatc-form tree by
// hand. Values refer to their data by index, as the format does: a constant
// tensor to PteInput::constants[i], a planned tensor's initial value to
// PteInput::mutable_data[i], a delegate to PteInput::delegates[i], an
// external tensor to a .ptd key. The bytes themselves never pass through.
//
//   ProgramBuilder program;
//   MethodBuilder& forward = program.AddMethod("forward");
//   const int32_t x = forward.PlannedTensor({6, {4}, {}}, /*memory_id=*/1, 0);
//   const int32_t w = forward.ConstantTensor({6, {4}, {}}, /*constant_index=*/1);
//   const int32_t add = forward.Operator("aten::add", "out");
//   forward.KernelCall(add, {x, w, forward.Int(1), x, x});
//   forward.SetInputs({x});
//   forward.SetOutputs({x});
//   forward.SetNonConstBufferSizes({0, 16});
//   PteInput input;
//   input.program = std::move(program).Build();
//   input.constants = {OwnedSource({}), weights};  // entry 0: placeholder
//
// Not thread-safe. Fields it does not set keep the schema's defaults.

#ifndef ETPACK_PROGRAM_BUILDER_H_
#define ETPACK_PROGRAM_BUILDER_H_

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "etpack/json.h"
#include "etpack/pte.h"

namespace etpack {

// The element type and shape of a tensor value.
struct TensorShape {
  int scalar_type = 6;             // ExecuTorch ScalarType code (0 BYTE, 4 LONG, 5 HALF, 6 FLOAT)
  std::vector<int32_t> sizes;      // >= 0
  std::vector<uint8_t> dim_order;  // empty: contiguous, 0..rank-1
};

// One method (ExecutionPlan): its values, operators, one chain of
// instructions, delegates, inputs and outputs. Indices returned are what
// instructions, inputs and outputs refer to.
class MethodBuilder {
 public:
  // A constant tensor whose bytes are PteInput::constants[constant_index].
  int32_t ConstantTensor(const TensorShape& shape, uint32_t constant_index);
  // A memory-planned tensor at byte `offset` of arena `memory_id`. With
  // mutable_index >= 1 its initial value is PteInput::mutable_data[mutable_index].
  int32_t PlannedTensor(const TensorShape& shape, uint32_t memory_id, uint64_t offset,
                        uint32_t mutable_index = 0);
  // A tensor whose bytes live outside the program (a .ptd) under `key`.
  int32_t ExternalTensor(const TensorShape& shape, const std::string& key);
  int32_t Int(int64_t v);
  int32_t Bool(bool v);
  int32_t Double(double v);

  // An operator ("aten::add", overload "out"); returns its op_index.
  int32_t Operator(const std::string& name, const std::string& overload = "");
  // Appends a kernel call to the method's chain.
  void KernelCall(int32_t op_index, const std::vector<int32_t>& args);
  // A delegate of backend `backend_id` whose payload is
  // PteInput::delegates[delegate_index]; returns its index in the method.
  int32_t Delegate(const std::string& backend_id, uint32_t delegate_index);

  void SetInputs(const std::vector<int32_t>& values) { inputs_ = values; }
  void SetOutputs(const std::vector<int32_t>& values) { outputs_ = values; }
  // The pytree specs of inputs and outputs (ContainerMetadata).
  void SetContainerMeta(const std::string& encoded_inputs, const std::string& encoded_outputs);
  // Sizes in bytes of the memory arenas by memory_id; entry 0 is unused
  // by convention. Default {0}.
  void SetNonConstBufferSizes(const std::vector<uint64_t>& sizes) { buffer_sizes_ = sizes; }

 private:
  friend class ProgramBuilder;
  explicit MethodBuilder(std::string name) : name_(std::move(name)) {}
  int32_t AddValue(json::Value value);
  int32_t Tensor(const TensorShape& shape, uint32_t data_buffer_idx, json::Value allocation,
                 json::Value extra);
  json::Value Build() &&;

  std::string name_;
  json::Value container_meta_;
  std::vector<json::Value> values_, operators_, instructions_, delegates_;
  std::vector<int32_t> inputs_, outputs_;
  std::vector<uint64_t> buffer_sizes_ = {0};
};

class ProgramBuilder {
 public:
  // Adds a method. The reference stays valid until Build().
  MethodBuilder& AddMethod(const std::string& name);
  // The Program structure in tree form, for PteInput::program.
  ProgramStructure Build() &&;

 private:
  std::deque<MethodBuilder> methods_;
};

}  // namespace etpack

#endif  // ETPACK_PROGRAM_BUILDER_H_
