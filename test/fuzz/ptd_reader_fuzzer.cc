// libFuzzer target: a .ptd file from memory (PtdFile::FromMemory).
#include "etpack/ptd_file.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto bytes = etpack::fuzz::ExactCopy(data, size);
  (void)etpack::PtdFile::FromMemory("fuzz.ptd", bytes.get(), size, bytes);
  return 0;
}
