// The typed program builder: what it builds plans, and reads back as the
// fields it was given.
#include "catch.h"

#include "etpack/program_builder.h"
#include "etpack/pte.h"
#include "etpack/pte_file.h"
#include "program_etpack_generated.h"
#include "test_programs.h"

using namespace etpack;
using namespace etpack::testing;
namespace fb = etpack::pte_fb;

TEST_CASE("every kind of value, instruction and delegate reads back as given") {
  ProgramBuilder program;
  MethodBuilder& forward = program.AddMethod("forward");
  const uint64_t high = (uint64_t{3} << 32) + 48;
  const int32_t x = forward.PlannedTensor({6, {2, 3}, {}}, 1, high);
  const int32_t w = forward.ConstantTensor({6, {3, 2}, {1, 0}}, 1);
  const int32_t e = forward.ExternalTensor({5, {4}, {}}, "layer.bias");
  const int32_t state = forward.PlannedTensor({4, {1}, {}}, 1, 0, /*mutable_index=*/1);
  const int32_t one = forward.Int(-1);
  const int32_t yes = forward.Bool(true);
  const int32_t eps = forward.Double(0.5);
  const int32_t mm = forward.Operator("aten::mm", "out");
  const int32_t add = forward.Operator("aten::add");
  forward.KernelCall(mm, {x, w, x});
  forward.KernelCall(add, {x, e, one, x});
  const int32_t delegate = forward.Delegate("XnnpackBackend", 0);
  forward.SetInputs({x});
  forward.SetOutputs({x, state});
  forward.SetContainerMeta("in-spec", "out-spec");
  forward.SetNonConstBufferSizes({0, high + 24});
  program.AddMethod("empty");
  CHECK(x == 0);
  CHECK(eps == 6);
  CHECK(add == 1);
  CHECK(delegate == 0);
  (void)yes;

  PteInput in;
  in.program = std::move(program).Build();
  in.constants = {Bytes({}), Pattern(24, 1)};
  in.mutable_data = {Bytes({}), Pattern(8, 2)};
  in.delegates = {Pattern(100, 3)};
  auto plan = PlanPte(std::move(in));
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  auto f = ReadPte(Materialize(plan->artifact));

  const fb::Program& p = f->program();
  REQUIRE(p.execution_plan()->size() == 2);
  const fb::ExecutionPlan& m = *p.execution_plan()->Get(0);
  CHECK(m.name()->str() == "forward");
  CHECK(m.container_meta_type()->encoded_inp_str()->str() == "in-spec");
  CHECK(m.container_meta_type()->encoded_out_str()->str() == "out-spec");
  REQUIRE(m.values()->size() == 7);

  const fb::Tensor* tx = m.values()->Get(0)->val_as_Tensor();
  REQUIRE(tx != nullptr);
  CHECK(tx->scalar_type() == fb::ScalarType::FLOAT);
  CHECK(std::vector<int32_t>(tx->sizes()->begin(), tx->sizes()->end()) ==
        std::vector<int32_t>{2, 3});
  CHECK(std::vector<uint8_t>(tx->dim_order()->begin(), tx->dim_order()->end()) ==
        std::vector<uint8_t>{0, 1});
  CHECK(tx->allocation_info()->memory_id() == 1);
  CHECK(tx->allocation_info()->memory_offset_low() == 48);
  CHECK(tx->allocation_info()->memory_offset_high() == 3);

  const fb::Tensor* tw = m.values()->Get(1)->val_as_Tensor();
  CHECK(tw->data_buffer_idx() == 1);
  CHECK(tw->allocation_info() == nullptr);
  CHECK(std::vector<uint8_t>(tw->dim_order()->begin(), tw->dim_order()->end()) ==
        std::vector<uint8_t>{1, 0});

  const fb::Tensor* te = m.values()->Get(2)->val_as_Tensor();
  CHECK(te->extra_tensor_info()->fully_qualified_name()->str() == "layer.bias");
  CHECK(te->extra_tensor_info()->location() == fb::TensorDataLocation::EXTERNAL);

  CHECK(m.values()->Get(3)->val_as_Tensor()->data_buffer_idx() == 1);
  CHECK(m.values()->Get(4)->val_as_Int()->int_val() == -1);
  CHECK(m.values()->Get(5)->val_as_Bool()->bool_val());
  CHECK(m.values()->Get(6)->val_as_Double()->double_val() == 0.5);

  REQUIRE(m.operators()->size() == 2);
  CHECK(m.operators()->Get(0)->name()->str() == "aten::mm");
  CHECK(m.operators()->Get(0)->overload()->str() == "out");
  REQUIRE(m.chains()->size() == 1);
  const fb::Chain& chain = *m.chains()->Get(0);
  CHECK(chain.inputs()->size() == 1);
  CHECK(chain.outputs()->size() == 2);
  REQUIRE(chain.instructions()->size() == 2);
  const fb::KernelCall* call = chain.instructions()->Get(1)->instr_args_as_KernelCall();
  CHECK(call->op_index() == 1);
  CHECK(std::vector<int32_t>(call->args()->begin(), call->args()->end()) ==
        std::vector<int32_t>{0, 2, 4, 0});

  REQUIRE(m.delegates()->size() == 1);
  CHECK(m.delegates()->Get(0)->id()->str() == "XnnpackBackend");
  CHECK(m.delegates()->Get(0)->processed()->location() == fb::DataLocation::SEGMENT);
  CHECK(m.non_const_buffer_sizes()->Get(1) == static_cast<int64_t>(high + 24));

  // The data went where the indices said.
  CHECK(p.mutable_data_segments()->size() == 1);
  CHECK(f->layout().segments.size() == 3);  // constants, mutable, delegate

  const fb::ExecutionPlan& empty = *p.execution_plan()->Get(1);
  CHECK(empty.name()->str() == "empty");
  CHECK(empty.values()->size() == 0);
  CHECK(empty.non_const_buffer_sizes()->Get(0) == 0);
}
