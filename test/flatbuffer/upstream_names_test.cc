// An export tool that already compiles ExecuTorch's generated flatbuffers
// headers (namespace executorch_flatbuffer, program_generated.h, ...) can
// use etpack in the same translation unit: etpack's public headers and its
// own generated code live under other names. The upstream-named headers here
// are generated at build time from etpack's schemas with the namespaces
// renamed back (test/flatbuffer/upstream_schema.py).

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>
#include "catch.h"

#include "bundled_program_generated.h"
#include "flat_tensor_generated.h"
#include "program_generated.h"
#include "scalar_type_generated.h"

#include "bundled_program_etpack_generated.h"
#include "etpack/bpte.h"
#include "etpack/ptd.h"
#include "etpack/pte.h"
#include "etpack/pte_file.h"
#include "flat_tensor_etpack_generated.h"
#include "program_etpack_generated.h"

TEST_CASE("a Program built with upstream-named code is read by etpack") {
  flatbuffers::FlatBufferBuilder b;
  namespace up = executorch_flatbuffer;
  std::vector<flatbuffers::Offset<up::EValue>> values;
  std::vector<int32_t> none;
  // The runtime needs at least one chain, even without instructions.
  std::vector<flatbuffers::Offset<up::Instruction>> instructions;
  std::vector<flatbuffers::Offset<up::Chain>> chains{
      up::CreateChainDirect(b, &none, &none, &instructions)};
  std::vector<flatbuffers::Offset<up::Operator>> operators;
  std::vector<flatbuffers::Offset<up::BackendDelegate>> delegates;
  std::vector<int64_t> buffer_sizes{0};
  auto plan = up::CreateExecutionPlanDirect(b, "forward", /*container_meta_type=*/0, &values, &none,
                                            &none, &chains, &operators, &delegates, &buffer_sizes);
  std::vector<flatbuffers::Offset<executorch_flatbuffer::ExecutionPlan>> plans{plan};
  auto program = executorch_flatbuffer::CreateProgramDirect(b, /*version=*/0, &plans);
  executorch_flatbuffer::FinishProgramBuffer(b, program);

  // The reader wants 16-aligned bytes, and at least the runtime's 64.
  auto bytes = std::make_shared<std::vector<uint64_t>>(std::max<size_t>(b.GetSize(), 64) / 8 + 2);
  std::memcpy(bytes->data(), b.GetBufferPointer(), b.GetSize());
  auto file =
      etpack::PteFile::FromMemory("upstream.pte", reinterpret_cast<const uint8_t*>(bytes->data()),
                                  std::max<size_t>(b.GetSize(), 64), bytes);
  INFO(file.status().ToString());
  REQUIRE(file.ok());
  const etpack::pte_fb::Program& ours = (*file)->program();
  REQUIRE(ours.execution_plan()->size() == 1);
  CHECK(ours.execution_plan()->Get(0)->name()->str() == "forward");
  // The two sets of generated types are distinct types with equal layouts.
  CHECK(static_cast<int>(executorch_flatbuffer::ScalarType::BFLOAT16) ==
        static_cast<int>(etpack::pte_fb::ScalarType::BFLOAT16));
}
