// libFuzzer target: a .npy file's header (ReadNpy). The input is written
// to a file.
#include "etpack/npy.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& scratch = etpack::fuzz::Scratch::Get();
  (void)etpack::ReadNpy(scratch.Write("array.npy", data, size));
  return 0;
}
