#include "usage.h"

#include <cctype>
#include <cstdio>

namespace etpack::cli {
namespace {

// One command's help. `synopsis` follows "etpack "; `summary` is its line
// in `etpack --help`; `details` (what it does beyond the summary, and each
// option) is printed by `etpack COMMAND --help` only.
struct CommandHelp {
  const char* name;
  const char* synopsis;
  const char* summary;
  const char* details;
};

const CommandHelp kCommands[] = {
    {"inspect", "inspect FILE... [--json | --digest sha256] [--sizes [--all]]",
     "show the layout of a .pte, .ptd or .bpte",
     "A .pte: header, methods, segments, constants, delegates, named data and\n"
     "EXTERNAL tensors. A .ptd: header, segments, entries with their layouts.\n"
     "A .bpte: layout, test suites, and the embedded program as for a .pte.\n"
     "Several files (the shards of a .ptd): each in turn (--json: an array).\n"
     "\n"
     "Fat (NFAT) delegates are listed with their entries, and \"dedup\" counts\n"
     "the entries stored in bytes another entry holds and the bytes saved.\n"
     "\n"
     "  --json            print one JSON object with the same content\n"
     "  --digest sha256   print SHA-256 of every part and named key instead\n"
     "  --sizes           instead, where every byte goes: a row per item\n"
     "                    (header, flatbuffer, constant, delegate, named data,\n"
     "                    entry, padding, ...) whose sizes sum to the file's;\n"
     "                    for several files also the bytes they hold alike, by\n"
     "                    content, and which of them a cross-file share saves\n"
     "  --all             with --sizes: every row (else rows under 0.1% of the\n"
     "                    file are summed per kind)\n"},
    {"verify", "verify FILE... [--data X.ptd ...] [--deep] [--json]",
     "validate a .pte, .ptd or .bpte completely",
     "Checks everything a loader relies on and prints \"FILE: ok (...)\", or\n"
     "\"FILE: invalid: why\" and exits 1. Several .ptd files (the shards of one)\n"
     "are checked as a set: each valid, no key in two of them. A .pte given with\n"
     ".ptd files takes them as --data.\n"
     "\n"
     "  --data X.ptd   (repeatable; a .pte only) also check that every EXTERNAL\n"
     "                 tensor of the program resolves in these files with\n"
     "                 identical dtype, sizes and dim_order\n"
     "  --deep         also print every part's XXH3-64 (an integrity table, when\n"
     "                 present, is always checked: docs/integrity.md)\n"
     "  --json         print the report as one JSON object (\"ok\", \"files\",\n"
     "                 and when invalid \"failed\" and \"error\"), exit 1 if not ok\n"},
    {"repack",
     "repack IN.pte -o OUT.pte [--external-constants OUT.ptd [--max-shard-bytes N]]\n"
     "       [--data X.ptd ...] [--segment-alignment N] [--constant-alignment N]\n"
     "       [--align N] [--dedup]",
     "lay a .pte out again, optionally moving its constants into a .ptd or back",
     "  -o, --output OUT.pte           the program to write\n"
     "  --external-constants OUT.ptd   move every constant into OUT.ptd and mark\n"
     "                                 it EXTERNAL; both files appear together\n"
     "  --data X.ptd                   (repeatable) the way back: every EXTERNAL\n"
     "                                 tensor's bytes from X.ptd as a constant\n"
     "                                 again, and its named data (blobs) inside:\n"
     "                                 OUT.pte needs no .ptd (docs/cli.md)\n"
     "  --max-shard-bytes N            write OUT.ptd as shards of at most N bytes\n"
     "                                 each, OUT-<hash>.ptd (docs/sharding.md)\n"
     "  --segment-alignment N          every segment at a multiple of N\n"
     "                                 (power of two, at most 1GiB)\n"
     "  --constant-alignment N         every constant at a multiple of N in its\n"
     "                                 segment (power of two, at most 64KiB)\n"
     "  --align N                      both alignments N: with 4096, copies of\n"
     "                                 the file share its disk blocks where the\n"
     "                                 file system can (docs/performance.md)\n"
     "  --dedup                        store identical constants once (kept when\n"
     "                                 IN.pte already does; a .ptd always does)\n"},
    {"pack",
     "pack MANIFEST.json -o OUT [--segment-alignment N] [--constant-alignment N]\n"
     "       [--align N] [--dedup] [--external-named-data OUT.ptd] [--max-shard-bytes N]",
     "write a .pte or .ptd from a JSON manifest (docs/manifest.md)",
     "The manifest's \"format\" (\"pte\", the default, or \"ptd\") decides what is\n"
     "written; the flags override its serializer_options.\n"
     "\n"
     "  -o, --output OUT            the file to write\n"
     "  --segment-alignment N       every segment at a multiple of N\n"
     "                              (power of two, at most 1GiB)\n"
     "  --constant-alignment N      (.pte only) every constant at a multiple of N\n"
     "                              in its segment (power of two, at most 64KiB)\n"
     "  --align N                   segment and constant alignment N (4096: see\n"
     "                              docs/performance.md, \"Shared extents\")\n"
     "  --dedup                     store identical constants once (a .ptd stores\n"
     "                              every content once anyway)\n"
     "  --external-named-data OUT.ptd\n"
     "                              (.pte only) write the program's named data, fat\n"
     "                              delegates' included, to OUT.ptd instead; both\n"
     "                              files appear together\n"
     "  --max-shard-bytes N         write the .ptd as shards of at most N bytes\n"
     "                              each, OUT-<hash>.ptd (docs/sharding.md)\n"},
    {"ptd",
     "ptd WEIGHTS.safetensors [MORE.safetensors | model.safetensors.index.json ...]\n"
     "       -o OUT.ptd [--align N] [--max-shard-bytes N]",
     "convert a (sharded) safetensors checkpoint to a .ptd, file to file",
     "Every tensor becomes an entry keyed by its name, with its dtype and shape.\n"
     "An index (model.safetensors.index.json) stands for the shards it names.\n"
     "Tensors with identical bytes are stored once (only same-size ones are read).\n"
     "\n"
     "  -o, --output OUT.ptd   the file to write\n"
     "  --align N              every tensor at a multiple of N in the file, e.g.\n"
     "                         4096 for page-aligned mmap (power of two, at most\n"
     "                         1GiB; default: segments 128-aligned)\n"
     "  --max-shard-bytes N    shards of at most N bytes each as files (e.g. 1GiB),\n"
     "                         OUT-<hash of their keys>.ptd, published together\n"
     "                         (docs/sharding.md)\n"},
    {"update",
     "update MODEL.pte|MODEL.ptd --from NEW.safetensors [--from MORE | index.json | NEW.ptd ...]\n"
     "       [--json]",
     "replace weights in place: every tensor whose key, dtype and shape match",
     "Each new tensor must match one of the file by key and layout (scalar type,\n"
     "sizes, dim_order; a blob by byte size): a .ptd entry, a .pte constant (its\n"
     "fully_qualified_name, else constant.<method>.<value>, as repack\n"
     "--external-constants names it) or named data. Anything else refuses the\n"
     "whole update before a byte changes. Equal bytes are skipped. The file is\n"
     "replaced atomically; on XFS (reflink) or btrfs the new file shares the old\n"
     "one's extents and only the changes are written. An integrity table is\n"
     "updated too.\n"
     "\n"
     "  --from FILE   new weights (repeatable): .safetensors, *.index.json, .ptd\n"
     "  --json        the report as JSON\n"},
    {"bundle",
     "bundle IN.pte --cases CASES.json -o OUT.bpte [--layout standard|segmented]\n"
     "       [--program-alignment N]",
     "write a bundled program: IN.pte plus test cases (docs/bundle-cases.md)",
     "  --cases CASES.json        the test cases (docs/bundle-cases.md)\n"
     "  -o, --output OUT.bpte     the file to write\n"
     "  --layout standard         the program inside the flatbuffer (2 GiB limit)\n"
     "  --layout segmented        the program in a segment of its own (no limit)\n"
     "  --program-alignment N     (segmented) the program at a multiple of N\n"
     "                            (power of two, 128 to 1GiB; default: what its\n"
     "                            segments need)\n"},
    {"unbundle", "unbundle IN.bpte -o OUT.pte", "extract the program of a bundled program",
     "  -o, --output OUT.pte   the file to write (the program's bytes, unchanged)\n"},
    {"extract", "extract FILE.pte --delegate N [--entry ID] -o OUT",
     "write one delegate payload, or one entry of a fat (NFAT) delegate",
     "  --delegate N         the delegate, numbered as inspect lists them\n"
     "  --entry ID           the entry of backend ID in its NFAT container\n"
     "  -o, --output OUT     the file to write (streamed, published whole)\n"},
    {"compress", "compress FILE -o FILE.zst [--level N]",
     "seekable zstd archive, frames cut on the artifact's segments (docs/archive.md)",
     "Stock `zstd -d` restores the exact bytes.\n"
     "\n"
     "  -o, --output FILE.zst   the archive to write\n"
     "  --level N               zstd level (default 3)\n"},
    {"decompress", "decompress FILE.zst -o FILE [--tensor KEY | --segment N]",
     "restore a file, or one named tensor or segment, from a seekable archive",
     "  -o, --output FILE   the file to write\n"
     "  --tensor KEY        only the named tensor KEY (decompresses its frames only)\n"
     "  --segment N         only segment N\n"},
    {"demo", "demo [--size BYTES] [-o DIR]", "write, verify and summarise an LLM-shaped program",
     "Writes DIR/demo.pte, reads it back and reports layout, speed and memory.\n"
     "\n"
     "  --size BYTES        weights to generate (default 512MiB, at most 1TiB;\n"
     "                      suffixes K M G T, KiB MiB GiB TiB)\n"
     "  -o, --output DIR    the folder to write into, made if missing (default .)\n"},
};

const char kFooter[] =
    "pack, repack, ptd and bundle also take --integrity (embed an integrity\n"
    "table, docs/integrity.md) and --digest sha256 (print SHA-256 per segment\n"
    "and key, computed while writing).\n"
    "Every writing command says how many bytes it wrote and how many of those\n"
    "share the disk blocks of the file they came from (XFS with reflink,\n"
    "btrfs) instead of being copied; with --json it prints that as one JSON\n"
    "object instead of its report.\n"
    "Alignments are powers of two (suffixes K M G, KiB MiB GiB); defaults:\n"
    "segment 128, constant 16. Outputs are files (not '-'), published whole.\n"
    "Exit status: 0 success, 1 failure, 2 usage error.\n";

const CommandHelp* Find(const std::string& name) {
  for (const CommandHelp& c : kCommands) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

}  // namespace

void PrintUsage() {
  std::printf("usage: etpack COMMAND [ARGS]\n\nCommands:\n");
  for (const CommandHelp& c : kCommands) std::printf("  %-10s %s\n", c.name, c.summary);
  std::printf("\nRun 'etpack COMMAND --help' for its arguments and options.\n%s", kFooter);
}

bool PrintCommandHelp(const std::string& command) {
  const CommandHelp* c = Find(command);
  if (c == nullptr) return false;
  std::string summary = c->summary;
  summary[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(summary[0])));
  std::printf("usage: etpack %s\n\n%s.\n\n%s\n%s", c->synopsis, summary.c_str(), c->details,
              kFooter);
  return true;
}

int UsageError(const std::string& command, const std::string& message) {
  std::fprintf(stderr, "etpack: %s: %s\ntry 'etpack %s --help'\n", command.c_str(), message.c_str(),
               command.c_str());
  return kExitUsage;
}

int UsageError(const std::string& message) {
  std::fprintf(stderr, "etpack: %s\ntry 'etpack --help'\n", message.c_str());
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
