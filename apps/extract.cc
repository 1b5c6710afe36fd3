// `etpack extract FILE.pte --delegate N [--entry ID] -o OUT`: one delegate
// payload, or one entry of an NFAT container, written out as it is in the
// file, streaming (a file range copied in the kernel) and atomically.

#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "etpack/inspect.h"
#include "etpack/nfat.h"
#include "etpack/pte_file.h"
#include "write_job.h"

namespace etpack::cli {

int Extract(const std::vector<std::string>& argv, const Env& env) {
  Result<Args> args = ParseArgs(argv, {"-o", "--output", "--delegate", "--entry"}, {kJsonFlag});
  if (!args.ok()) return UsageError("extract", args.status().message());
  if (args->positional.size() != 1) return UsageError("extract", "takes exactly one FILE.pte");
  const std::string& path = args->positional[0];
  const std::string* out = args->Output();
  if (out == nullptr) return UsageError("extract", "missing -o OUT");
  const std::string* n_text = args->Value("--delegate");
  if (n_text == nullptr) return UsageError("extract", "missing --delegate N");
  uint64_t n = 0;
  if (n_text->empty() || n_text->find_first_not_of("0123456789") != std::string::npos ||
      n_text->size() > 9) {
    return UsageError("extract", "--delegate " + *n_text + " is not a delegate index");
  }
  n = std::stoull(*n_text);

  SourcePtr opened;
  Result<ArtifactKind> kind = DetectArtifactKind(path, &opened, env);
  if (!kind.ok()) return Failure(kind.status());
  if (*kind != ArtifactKind::kPte) return Failure(InvalidArgument(path + ": extract reads a .pte"));
  Result<std::unique_ptr<PteFile>> file = PteFile::Open(path, opened);
  if (!file.ok()) return Failure(file.status());
  const std::vector<const PteDelegate*> delegates = AllDelegates(**file);
  if (n >= delegates.size()) {
    return Failure(NotFound(
        path + ": --delegate " + std::to_string(n) + " is out of range: " + "the program has " +
        std::to_string(delegates.size()) + " delegates (etpack inspect lists them)"));
  }
  SourcePtr bytes = (*file)->DelegateSource(*delegates[n]);
  std::string what = "delegate " + std::to_string(n) + " payload";
  if (const std::string* id = args->Value("--entry")) {
    const std::string name = DelegateName(**file, n);
    Result<bool> nfat = HasNfatMagic(*bytes);
    if (!nfat.ok()) return Failure(nfat.status().WithContext(name));
    if (!*nfat) {
      return Failure(InvalidArgument(name + ": the payload is not an NFAT container, so it has "
                                            "no entries; leave out --entry to extract it whole"));
    }
    Result<NfatContainer> c = NfatContainer::Open(bytes, name);
    if (!c.ok()) return Failure(c.status());
    Result<size_t> i = c->Find(*id);
    if (!i.ok()) return Failure(i.status());
    bytes = c->EntrySource(*i);
    what = "delegate " + std::to_string(n) + " entry \"" + *id + "\"";
  }
  const Writing w{env, args->Has(kJsonFlag)};
  if (Status s = WritePlanned(*out, WholeSourcePlan(bytes), w); !s.ok()) return Failure(s);
  if (w.json) return kExitOk;
  std::printf("wrote %s (%" PRIu64 " bytes: %s of %s)\n", out->c_str(), bytes->size(), what.c_str(),
              path.c_str());
  return kExitOk;
}

}  // namespace etpack::cli
