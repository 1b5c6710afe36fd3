// libFuzzer target: one .safetensors file's header (ReadSafetensors). The
// input is written to a file.
#include "etpack/safetensors.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& scratch = etpack::fuzz::Scratch::Get();
  (void)etpack::ReadSafetensors(scratch.Write("model.safetensors", data, size));
  return 0;
}
