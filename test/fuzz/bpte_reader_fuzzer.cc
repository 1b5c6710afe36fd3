// libFuzzer target: a .bpte file from memory (BpteFile::FromMemory).
#include "etpack/bpte_file.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto bytes = etpack::fuzz::ExactCopy(data, size);
  (void)etpack::BpteFile::FromMemory("fuzz.bpte", bytes.get(), size, bytes);
  return 0;
}
