// `etpack share A.pte B.pte [X.ptd ...] -o OUTDIR`: one copy of the data a
// family of programs holds alike (etpack/share.h, docs/share.md).

#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"
#include "etpack/json.h"
#include "etpack/list_text.h"
#include "etpack/ptd.h"
#include "etpack/share.h"
#include "etpack/writer.h"
#include "progress.h"
#include "write_job.h"

namespace etpack::cli {
namespace {

constexpr char kDataOption[] = "--data";
constexpr char kMinBytesOption[] = "--min-bytes";
constexpr char kDryRunFlag[] = "--dry-run";

// Where an input went: a thin program's file and what moved out of and
// into it, or for a .ptd input the outputs that now hold its entries.
std::string Fate(const ShareFileReport& f) {
  if (f.kind == ArtifactKind::kPtd) {
    return "not written: its entries are in " + (f.into.empty() ? "no output" : ListText(f.into));
  }
  std::string s = f.output + " (" + Count(f.items_moved, "item") + " moved";
  if (f.items_taken > 0) {
    s += ", " + Count(f.items_taken, "item") + " of its own (" + HumanBytes(f.bytes_taken) +
         ") taken in from " + ListText(f.taken_from);
  }
  return s + ")";
}

// The report as text, or with --json as the library renders it.
void PrintReport(const ShareResult& result, bool json) {
  if (json) {
    std::printf("%s\n", json::Print(ShareReportJson(result)).c_str());
    return;
  }
  const SharePlan& plan = result.plan;
  const ShareReport& r = plan.report;
  std::printf("%s:\n", result.written ? "share" : "would write (--dry-run: nothing written)");
  std::printf("  %-32s %14s %14s %14s  %s\n", "input", "before", "after", "moved", "output");
  for (const ShareFileReport& f : r.files) {
    std::printf("  %-32s %14" PRIu64 " %14" PRIu64 " %14" PRIu64 "  %s\n", f.input.c_str(),
                f.bytes_before, f.bytes_after, f.bytes_moved, Fate(f).c_str());
  }
  // The shared file(s) lead the plan's data files.
  for (size_t i = 0; i < r.shared_files.size(); ++i) {
    const PtdFilePlan& d = plan.data[i];
    std::printf("  %-32s %14s %14" PRIu64 " %14s  %s (%s)\n", "(shared)", "",
                d.plan.artifact.file_size, "", d.path.c_str(), Count(d.entries, "key").c_str());
  }
  std::printf("  %-32s %14" PRIu64 " %14" PRIu64 "%s\n", "total", r.bytes_before, r.bytes_after,
              r.shared_files.empty() ? "                 (no shared file: nothing moves)" : "");
  if (r.bytes_before >= r.bytes_after) {
    std::printf("saved:   %" PRIu64 " bytes (%s)\n", r.bytes_before - r.bytes_after,
                HumanBytes(r.bytes_before - r.bytes_after).c_str());
  } else {
    // Many small items each aligned in the shared file and referenced by
    // name from every program can cost more than they save: say so.
    std::printf("grew:    %" PRIu64
                " bytes (%s): the outputs are larger than the inputs; "
                "a larger --min-bytes keeps small items where they are\n",
                r.bytes_after - r.bytes_before, HumanBytes(r.bytes_after - r.bytes_before).c_str());
  }
  // The largest first (as analysis lists them); the rest summed.
  constexpr size_t kListed = 10;
  size_t listed = 0, more = 0;
  uint64_t more_bytes = 0;
  for (const SharedContent& c : r.analysis.contents) {
    if (c.shareable) continue;
    if (listed == kListed) {
      ++more;
      more_bytes += (c.copies - 1) * c.size;
      continue;
    }
    if (listed++ == 0) std::printf("stayed duplicated:\n");
    std::string names;
    for (size_t i = 0; i < c.items.size() && i < 4; ++i) {
      names += (i ? ", " : "") + r.files[c.items[i].file].input + " '" + c.items[i].name + "'";
    }
    if (c.items.size() > 4) names += ", ...";
    std::printf("  %" PRIu64 " bytes x %" PRIu64 " copies: %s (%s)\n", c.size, c.copies,
                c.reason.c_str(), names.c_str());
  }
  if (more > 0) {
    std::printf("  and %s more, %" PRIu64 " bytes held more than once (--json lists them)\n",
                Count(more, "content").c_str(), more_bytes);
  }
  for (const KeyConflict& k : r.analysis.conflicts) {
    std::string files;
    for (size_t i = 0; i < k.files.size(); ++i) {
      files += (i ? ", " : "") + r.files[k.files[i]].input;
    }
    std::printf("conflict: key '%s' names different bytes in %s: not moved\n", k.key.c_str(),
                files.c_str());
  }
  if (result.written) PrintWriteStats(*result.written);
}

// What `etpack share ...` asks for.
struct ShareArgs {
  std::vector<std::string> inputs;
  ShareOptions options;
  bool dry_run = false;
  bool json = false;  // --json
};

// `argv` as ShareArgs, or the usage error's message.
Result<ShareArgs> ParseShareArgs(const std::vector<std::string>& argv) {
  ETPACK_ASSIGN_OR_RETURN(Args args, ParseArgs(argv,
                                               {"-o", "--output", kDataOption, kMaxShardOption,
                                                kAlignOption, kMinBytesOption},
                                               {kDryRunFlag, kJsonFlag, kIntegrityFlag}));
  if (args.positional.size() < 2) {
    return InvalidArgument("give two or more .pte files (and the .ptd files they use)");
  }
  const std::string* out = args.Output();
  if (!out) return InvalidArgument("missing -o OUTDIR");
  ShareArgs a;
  a.inputs = args.positional;
  a.options.out_dir = *out;
  if (const std::string* name = args.Value(kDataOption)) a.options.data_name = *name;
  ETPACK_ASSIGN_OR_RETURN(a.options.max_shard_bytes, ParseMaxShardBytes(args));
  if (const std::string* text = args.Value(kAlignOption)) {
    ETPACK_ASSIGN_OR_RETURN(a.options.alignment,
                            ParseAlignment(*text, kAlignOption, kMaxInlineAlignment));
  }
  if (const std::string* text = args.Value(kMinBytesOption)) {
    ETPACK_ASSIGN_OR_RETURN(a.options.min_bytes, ParseByteSize(*text, kMinBytesOption));
  }
  a.options.integrity_table = args.Has(kIntegrityFlag);
  a.dry_run = args.Has(kDryRunFlag);
  a.json = args.Has(kJsonFlag);
  return a;
}

// The share `a` asks for, with a progress line while it writes (erased
// before anything is printed).
Result<ShareResult> RunShare(const ShareArgs& a, const Env& env) {
  ProgressLine progress("writing " + a.options.out_dir);
  return etpack::Share(a.inputs, a.options, a.dry_run, progress.options(), env);
}

}  // namespace

int Share(const std::vector<std::string>& argv, const Env& env) {
  Result<ShareArgs> a = ParseShareArgs(argv);
  if (!a.ok()) return UsageError("share", a.status().message());
  Result<ShareResult> done = RunShare(*a, env);
  if (!done.ok()) return Failure(done.status());
  PrintReport(*done, a->json);
  return kExitOk;
}

}  // namespace etpack::cli
