// libFuzzer target: an NFAT container from memory (NfatContainer::FromMemory),
// then every entry read through its source and looked up by its id.
#include "etpack/nfat.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto bytes = etpack::fuzz::ExactCopy(data, size);
  auto container = etpack::NfatContainer::FromMemory(bytes.get(), size, bytes, "fuzz.nfat");
  if (!container.ok()) return 0;
  for (size_t i = 0; i < container->entries().size(); ++i) {
    (void)etpack::ReadAll(*container->EntrySource(i));
    (void)container->Find(container->entries()[i].backend_id);
  }
  return 0;
}
