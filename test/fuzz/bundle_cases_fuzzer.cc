// libFuzzer target: a CASES.json (LoadBundleCases). The input is written to
// a file; tensors may name "x.npy" (float32, shape (2,)) and "data.bin"
// (64 bytes) beside it.
#include "etpack/bundle_cases.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& scratch = etpack::fuzz::Scratch::Get();
  static const bool fixtures = [&] {
    scratch.Write("x.npy", etpack::fuzz::SmallNpy());
    scratch.Write("data.bin", std::string(64, '\x11'));
    return true;
  }();
  (void)fixtures;
  (void)etpack::LoadBundleCases(scratch.Write("CASES.json", data, size));
  return 0;
}
