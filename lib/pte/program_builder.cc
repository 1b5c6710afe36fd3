#include "etpack/program_builder.h"

#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "pte/pte_format.h"

namespace etpack {
namespace {

using json::Value;

// ExtraTensorInfo.location: the bytes are in a .ptd, found by name.
constexpr int kTensorDataExternal = 1;

template <typename T>
Value IntArray(const std::vector<T>& v) {
  std::vector<Value> items;
  items.reserve(v.size());
  for (T x : v) {
    if constexpr (std::is_signed_v<T>) {
      items.push_back(Value::Int(x));
    } else {
      items.push_back(Value::UInt(x));
    }
  }
  return Value::Array(std::move(items));
}

Value Scalar(const char* type, const char* field, Value v) {
  return Value::Object(
      {{"val_type", Value::String(type)}, {"val", Value::Object({{field, std::move(v)}})}});
}

}  // namespace

int32_t MethodBuilder::AddValue(Value value) {
  values_.push_back(std::move(value));
  return static_cast<int32_t>(values_.size() - 1);
}

int32_t MethodBuilder::Tensor(const TensorShape& shape, uint32_t data_buffer_idx, Value allocation,
                              Value extra) {
  std::vector<uint8_t> order = shape.dim_order;
  if (order.empty()) {
    for (size_t d = 0; d < shape.sizes.size(); ++d) order.push_back(static_cast<uint8_t>(d));
  }
  std::vector<Value::Member> tensor = {{"scalar_type", Value::Int(shape.scalar_type)},
                                       {"sizes", IntArray(shape.sizes)},
                                       {"dim_order", IntArray(order)},
                                       {"data_buffer_idx", Value::UInt(data_buffer_idx)}};
  // Absent members rather than nulls: a program can hold 10^5 tensors.
  if (!allocation.is_null()) tensor.emplace_back("allocation_info", std::move(allocation));
  if (!extra.is_null()) tensor.emplace_back("extra_tensor_info", std::move(extra));
  return AddValue(Value::Object(
      {{"val_type", Value::String("Tensor")}, {"val", Value::Object(std::move(tensor))}}));
}

int32_t MethodBuilder::ConstantTensor(const TensorShape& shape, uint32_t constant_index) {
  return Tensor(shape, constant_index, Value(), Value());
}

int32_t MethodBuilder::PlannedTensor(const TensorShape& shape, uint32_t memory_id, uint64_t offset,
                                     uint32_t mutable_index) {
  constexpr uint64_t kLow = std::numeric_limits<uint32_t>::max();
  return Tensor(shape, mutable_index,
                Value::Object({{"memory_id", Value::UInt(memory_id)},
                               {"memory_offset_low", Value::UInt(offset & kLow)},
                               {"memory_offset_high", Value::UInt(offset >> 32)}}),
                Value());
}

int32_t MethodBuilder::ExternalTensor(const TensorShape& shape, const std::string& key) {
  return Tensor(shape, 0, Value(),
                Value::Object({{"fully_qualified_name", Value::String(key)},
                               {"location", Value::Int(kTensorDataExternal)}}));
}

int32_t MethodBuilder::Int(int64_t v) { return AddValue(Scalar("Int", "int_val", Value::Int(v))); }

int32_t MethodBuilder::Bool(bool v) { return AddValue(Scalar("Bool", "bool_val", Value::Bool(v))); }

int32_t MethodBuilder::Double(double v) {
  return AddValue(Scalar("Double", "double_val", Value::Double(v)));
}

int32_t MethodBuilder::Operator(const std::string& name, const std::string& overload) {
  operators_.push_back(
      Value::Object({{"name", Value::String(name)}, {"overload", Value::String(overload)}}));
  return static_cast<int32_t>(operators_.size() - 1);
}

void MethodBuilder::KernelCall(int32_t op_index, const std::vector<int32_t>& args) {
  instructions_.push_back(Value::Object(
      {{"instr_args_type", Value::String("KernelCall")},
       {"instr_args",
        Value::Object({{"op_index", Value::Int(op_index)}, {"args", IntArray(args)}})}}));
}

int32_t MethodBuilder::Delegate(const std::string& backend_id, uint32_t delegate_index) {
  delegates_.push_back(
      Value::Object({{"id", Value::String(backend_id)},
                     {"processed", Value::Object({{"location", Value::Int(pte::kLocationInline)},
                                                  {"index", Value::UInt(delegate_index)}})},
                     {"compile_specs", Value::Array()}}));
  return static_cast<int32_t>(delegates_.size() - 1);
}

void MethodBuilder::SetContainerMeta(const std::string& encoded_inputs,
                                     const std::string& encoded_outputs) {
  container_meta_ = Value::Object({{"encoded_inp_str", Value::String(encoded_inputs)},
                                   {"encoded_out_str", Value::String(encoded_outputs)}});
}

Value MethodBuilder::Build() && {
  Value chain = Value::Object({{"inputs", IntArray(inputs_)},
                               {"outputs", IntArray(outputs_)},
                               {"instructions", Value::Array(std::move(instructions_))}});
  return Value::Object({{"name", Value::String(name_)},
                        {"container_meta_type", std::move(container_meta_)},
                        {"values", Value::Array(std::move(values_))},
                        {"inputs", IntArray(inputs_)},
                        {"outputs", IntArray(outputs_)},
                        {"chains", Value::Array({std::move(chain)})},
                        {"operators", Value::Array(std::move(operators_))},
                        {"delegates", Value::Array(std::move(delegates_))},
                        {"non_const_buffer_sizes", IntArray(buffer_sizes_)}});
}

MethodBuilder& ProgramBuilder::AddMethod(const std::string& name) {
  methods_.push_back(MethodBuilder(name));
  return methods_.back();
}

ProgramStructure ProgramBuilder::Build() && {
  std::vector<Value> plans;
  plans.reserve(methods_.size());
  for (MethodBuilder& m : methods_) plans.push_back(std::move(m).Build());
  methods_.clear();
  return ProgramStructure::FromTree(
      Value::Object({{"version", Value::Int(0)},
                     {"execution_plan", Value::Array(std::move(plans))},
                     {"constant_buffer", Value::Array()},
                     {"backend_delegate_data", Value::Array()},
                     {"segments", Value::Array()}}));
}

}  // namespace etpack
