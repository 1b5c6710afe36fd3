#include "usage.h"

#include <cstdio>

namespace etpack::cli {

const char kUsage[] =
    "usage: etpack COMMAND [ARGS]\n"
    "\n"
    "Commands:\n"
    "  inspect FILE [--json | --digest sha256]\n"
    "                              show the layout of a .pte (header, methods,\n"
    "                              segments, constants, delegates, named data,\n"
    "                              external tensors) or a .ptd (header,\n"
    "                              segments, entries with their layouts)\n"
    "  verify FILE [--data X.ptd ...] [--deep]\n"
    "                              validate a .pte or .ptd completely; with\n"
    "                              --data, also check that every EXTERNAL\n"
    "                              tensor of the .pte resolves in the .ptd\n"
    "                              files with identical dtype, sizes, dim_order;\n"
    "                              checks an integrity table when present;\n"
    "                              --deep prints every part's XXH3-64\n"
    "  repack IN.pte -o OUT.pte [--external-constants OUT.ptd]\n"
    "         [--segment-alignment N] [--constant-alignment N]\n"
    "                              lay a .pte out again with new alignments\n"
    "                              (unset: the input's, as its layout shows);\n"
    "                              --external-constants moves every constant\n"
    "                              into OUT.ptd and marks it EXTERNAL\n"
    "  pack MANIFEST.json -o OUT [--segment-alignment N] [--constant-alignment N]\n"
    "                              write a .pte or .ptd from a JSON manifest\n"
    "                              (docs/manifest.md); flags override the\n"
    "                              manifest's serializer_options\n"
    "  ptd WEIGHTS.safetensors [MORE.safetensors | model.safetensors.index.json ...]\n"
    "      -o OUT.ptd [--align N]\n"
    "                              convert a (sharded) safetensors checkpoint\n"
    "                              to a .ptd, streaming file to file; --align\n"
    "                              places every tensor at a multiple of N\n"
    "                              in the file (e.g. 4096 for page-aligned mmap)\n"
    "  bundle IN.pte --cases CASES.json -o OUT.bpte [--layout standard|segmented]\n"
    "         [--program-alignment N]\n"
    "                              write a bundled program: IN.pte plus the test\n"
    "                              cases of CASES.json (docs/bundle-cases.md);\n"
    "                              segmented (no 2 GiB limit) places the program\n"
    "                              N-aligned (power of two >= 128)\n"
    "  unbundle IN.bpte -o OUT.pte  extract the program of a bundled program\n"
    "  extract FILE.pte --delegate N [--entry ID] -o OUT\n"
    "                              write delegate N's payload (N as inspect\n"
    "                              numbers them), or with --entry the entry of\n"
    "                              backend ID of its NFAT (fat) container\n"
    "  demo [--size BYTES] [-o DIR]\n"
    "                              write, verify and summarise an LLM-shaped\n"
    "                              program with BYTES of weights (default\n"
    "                              512MiB; suffixes K M G KiB MiB GiB) as\n"
    "                              DIR/demo.pte (default DIR: .)\n"
    "  compress FILE -o FILE.zst [--level N]\n"
    "                              seekable zstd archive of FILE (default level\n"
    "                              3), frames cut on the artifact's segments,\n"
    "                              restorable by stock `zstd -d`\n"
    "  decompress FILE.zst -o FILE [--tensor KEY | --segment N]\n"
    "                              restore the file, or only one named tensor or\n"
    "                              segment (decompressing only its frames)\n"
    "\n"
    "pack, repack, ptd and bundle also take --integrity (embed an integrity\n"
    "table, docs/integrity.md) and --digest sha256 (print SHA-256 per segment\n"
    "and key, computed while writing).\n"
    "Alignments are powers of two; defaults: segment 128, constant 16.\n"
    "Exit status: 0 success, 1 failure, 2 usage error.\n";

int UsageError(const std::string& message) {
  std::fprintf(stderr, "etpack: %s\n\n%s", message.c_str(), kUsage);
  return kExitUsage;
}

int Failure(const Status& status) {
  std::fprintf(stderr, "etpack: %s\n", status.message().c_str());
  return kExitFailure;
}

namespace {

// Library messages start with the file name; `verify` prints it first
// itself, so drop it from the message.
std::string WithoutPrefix(std::string message, const std::string& path) {
  const std::string prefix = path + ": ";
  if (message.compare(0, prefix.size(), prefix) == 0) message.erase(0, prefix.size());
  return message;
}

}  // namespace

int CannotRead(const std::string& path, const Status& status) {
  std::fprintf(stderr, "etpack: cannot read %s: %s\n", path.c_str(),
               WithoutPrefix(status.message(), path).c_str());
  return kExitFailure;
}

int Invalid(const std::string& path, const Status& status) {
  // A file that cannot be read is not an invalid file: say which it is.
  if (status.code() == Code::kIoError) return CannotRead(path, status);
  std::fprintf(stderr, "%s: invalid: %s\n", path.c_str(),
               WithoutPrefix(status.message(), path).c_str());
  return kExitFailure;
}

}  // namespace etpack::cli
