// libFuzzer target: a .pte file from memory (PteFile::FromMemory), and
// the size rows of every file it accepts.
#include <cstdlib>

#include "etpack/pte_file.h"
#include "etpack/sizes.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto bytes = etpack::fuzz::ExactCopy(data, size);
  auto file = etpack::PteFile::FromMemory("fuzz.pte", bytes.get(), size, bytes);
  // Every file the reader accepts partitions into size rows (etpack/sizes.h):
  // a failure there is a bug (kInvalidArgument), unlike a malformed fat
  // delegate container, which the reader does not open (kCorrupt).
  if (file.ok()) {
    const etpack::Status s = etpack::SizesOf(**file).status();
    if (!s.ok() && s.code() != etpack::Code::kCorrupt) std::abort();
  }
  return 0;
}
