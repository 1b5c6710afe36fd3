// `etpack compress FILE -o FILE.zst [--level N]` and
// `etpack decompress FILE.zst -o FILE [--tensor KEY | --segment N]`:
// seekable zstd transport archives (etpack/archive.h).

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "etpack/archive.h"
#include "progress.h"
#include "write_job.h"

namespace etpack::cli {
namespace {

// The archive's size on disk, for the report; 0 when it cannot be asked.
uint64_t PackedSize(const std::string& path, const Env& env) {
  Result<std::shared_ptr<const InputFile>> file = env.in().Open(path);
  if (!file.ok()) return 0;
  Result<uint64_t> size = (*file)->Size();
  return size.ok() ? *size : 0;
}

}  // namespace

int Compress(const std::vector<std::string>& argv, const Env& env) {
  Result<Args> args = ParseArgs(argv, {"-o", "--output", "--level"}, {});
  if (!args.ok()) return UsageError("compress", args.status().message());
  if (args->positional.size() != 1) return UsageError("compress", "takes exactly one FILE");
  const std::string* out = args->Output();
  if (!out) return UsageError("compress", "missing -o FILE.zst");
  ArchiveOptions options;
  if (const std::string* level = args->Value("--level")) {
    char* end = nullptr;
    const long v = std::strtol(level->c_str(), &end, 10);
    if (level->empty() || *end != '\0' || v < 1 || v > 19) {
      return UsageError("compress", "--level " + *level + " is not a number from 1 to 19");
    }
    options.level = static_cast<int>(v);
  }
  const std::string& input = args->positional[0];
  {
    Result<ArtifactPlan> plan = CompressPlan(input, options, env);
    if (!plan.ok()) return Failure(plan.status());
    ProgressLine progress("compressing " + input);
    if (Status s = WriteArtifactFiles({{*out, &*plan}}, progress.options(), env); !s.ok()) {
      return Failure(s);
    }
  }
  Result<std::unique_ptr<Archive>> archive = Archive::Open(*out, env);
  if (!archive.ok()) return Failure(archive.status());
  const uint64_t packed = PackedSize(*out, env);
  const uint64_t size = (*archive)->size();
  std::printf("wrote %s (%s from %s, %.1f%%, %zu frames, %zu regions indexed)\n", out->c_str(),
              BytesText(packed).c_str(), BytesText(size).c_str(),
              size ? 100.0 * static_cast<double>(packed) / static_cast<double>(size) : 100.0,
              (*archive)->frames().size(), (*archive)->regions().size());
  return kExitOk;
}

int Decompress(const std::vector<std::string>& argv, const Env& env) {
  Result<Args> args = ParseArgs(argv, {"-o", "--output", "--tensor", "--segment"}, {});
  if (!args.ok()) return UsageError("decompress", args.status().message());
  if (args->positional.size() != 1) return UsageError("decompress", "takes exactly one FILE.zst");
  const std::string* out = args->Output();
  if (!out) return UsageError("decompress", "missing -o FILE");
  const std::string* tensor = args->Value("--tensor");
  const std::string* segment = args->Value("--segment");
  if (tensor && segment) return UsageError("decompress", "give --tensor or --segment, not both");
  const std::string& path = args->positional[0];
  Result<std::unique_ptr<Archive>> archive = Archive::Open(path, env);
  if (!archive.ok()) return Failure(archive.status());
  const Archive& a = **archive;
  const ArchiveRegion* region = nullptr;
  if (tensor || segment) {
    const RegionKind kind = tensor ? RegionKind::kTensor : RegionKind::kSegment;
    const std::string& name = tensor ? *tensor : *segment;
    region = a.Find(kind, name);
    if (region == nullptr) {
      return Failure(NotFound(
          path + ": no " + RegionKindName(kind) + " '" + name + "' in the archive's index" +
          (a.regions().empty() ? " (it has none: not made by etpack compress from an artifact, "
                                 "or by an etpack whose index had no region checksums)"
                               : " (" + std::to_string(a.regions().size()) + " regions)")));
    }
  }
  {
    Result<ArtifactPlan> plan = region ? a.RegionPlan(*region) : a.ExtractPlan(0, a.size());
    if (!plan.ok()) return Failure(plan.status());
    ProgressLine progress("decompressing " + path);
    if (Status s = WriteArtifactFiles({{*out, &*plan}}, progress.options(), env); !s.ok()) {
      return Failure(s);
    }
  }
  std::printf("wrote %s (%s)\n", out->c_str(), BytesText(region ? region->size : a.size()).c_str());
  return kExitOk;
}

}  // namespace etpack::cli
