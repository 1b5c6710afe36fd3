// libFuzzer target: a sharded checkpoint's index (ReadCheckpoint of one
// model.safetensors.index.json). Its weight_map may name the shard
// "model-00001-of-00001.safetensors" beside it (one F32 tensor "w", [2]).
#include "etpack/safetensors.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& scratch = etpack::fuzz::Scratch::Get();
  static const bool fixtures = [&] {
    scratch.Write("model-00001-of-00001.safetensors", etpack::fuzz::SmallSafetensors());
    return true;
  }();
  (void)fixtures;
  (void)etpack::ReadCheckpoint({scratch.Write("model.safetensors.index.json", data, size)});
  return 0;
}
