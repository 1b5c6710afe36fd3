// libFuzzer target: a seekable zstd archive (Archive::Open on the input
// written as a file), then the whole original and every indexed region
// decompressed into memory, as `etpack decompress` would.
#include "etpack/archive.h"
#include "etpack/output.h"
#include "fuzz_input.h"

namespace {

// Decompressed sizes come from the seek table, which the input controls;
// past this the target stops rather than measure zstd's expansion speed.
constexpr uint64_t kMaxExtract = uint64_t{16} << 20;

// The range, or with `region` that region checked against its checksum.
void Extract(const etpack::Archive& archive, uint64_t offset, uint64_t length,
             const etpack::ArchiveRegion* region = nullptr) {
  if (length > kMaxExtract) return;
  etpack::MemoryOutputFs fs;
  auto out = fs.Create("fuzz.out");
  if (!out.ok()) std::abort();
  if (region) {
    (void)archive.ExtractRegion(*region, **out);
  } else {
    (void)archive.Extract(offset, length, **out);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = etpack::fuzz::Scratch::Get().Write("fuzz.zst", data, size);
  auto archive = etpack::Archive::Open(path);
  if (!archive.ok()) return 0;
  const etpack::Archive& a = **archive;
  Extract(a, 0, a.size());
  for (const etpack::ArchiveRegion& r : a.regions()) {
    Extract(a, r.offset, r.size, &r);  // Open() holds regions inside the file
  }
  return 0;
}
