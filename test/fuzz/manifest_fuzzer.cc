// libFuzzer target: a pack manifest of either format (LoadManifest). The
// input is written to a file; blobs may name "weights.bin" beside it.
#include "etpack/manifest.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& scratch = etpack::fuzz::Scratch::Get();
  static const bool fixtures = [&] {
    scratch.Write("weights.bin", std::string(256, '\x5a'));
    return true;
  }();
  (void)fixtures;
  (void)etpack::LoadManifest(scratch.Write("manifest.json", data, size));
  return 0;
}
