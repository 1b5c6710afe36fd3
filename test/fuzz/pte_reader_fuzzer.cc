// libFuzzer target: a .pte file from memory (PteFile::FromMemory).
#include "etpack/pte_file.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto bytes = etpack::fuzz::ExactCopy(data, size);
  (void)etpack::PteFile::FromMemory("fuzz.pte", bytes.get(), size, bytes);
  return 0;
}
