// libFuzzer target: a Program flatbuffer handed to the planner
// (ProgramStructure::FromFlatbuffer + PlanPte): the verifier, the reads the
// planner makes of the program and the copy with its fields replaced.
#include "etpack/pte.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  etpack::PteInput input;
  input.program = etpack::ProgramStructure::FromFlatbuffer(
      etpack::OwnedSource(std::vector<uint8_t>(data, data + size)));
  // One constant and one delegate payload for the program to refer to.
  input.constants = {etpack::OwnedSource({}), etpack::OwnedSource({1, 2, 3, 4})};
  input.delegates = {etpack::OwnedSource({5, 6, 7})};
  (void)etpack::PlanPte(std::move(input));
  return 0;
}
