// `etpack share A.pte B.pte [X.ptd ...] -o OUTDIR`: one copy of the data a
// family of programs holds alike (etpack/share.h, docs/share.md).

#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"
#include "digests.h"
#include "etpack/json.h"
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
    std::string into;
    for (const std::string& o : f.into) into += (into.empty() ? "" : ", ") + o;
    return "not written: its entries are in " + (into.empty() ? std::string("no output") : into);
  }
  std::string s = f.output + " (" + Count(f.items_moved, "item") + " moved";
  if (f.items_taken > 0) {
    std::string from;
    for (const std::string& d : f.taken_from) from += (from.empty() ? "" : ", ") + d;
    s += ", " + Count(f.items_taken, "item") + " of its own (" + HumanBytes(f.bytes_taken) +
         ") taken in from " + from;
  }
  return s + ")";
}

void PrintReport(const SharePlan& plan, bool dry_run) {
  const ShareReport& r = plan.report;
  std::printf("%s:\n", dry_run ? "would write (--dry-run: nothing written)" : "share");
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
}

}  // namespace

int Share(const std::vector<std::string>& argv) {
  Result<Args> args = ParseArgs(
      argv, {"-o", "--output", kDataOption, kMaxShardOption, kAlignOption, kMinBytesOption},
      {kDryRunFlag, kJsonFlag, kIntegrityFlag});
  if (!args.ok()) return UsageError("share", args.status().message());
  SetJsonReport(args->Has(kJsonFlag));
  if (args->positional.size() < 2) {
    return UsageError("share", "give two or more .pte files (and the .ptd files they use)");
  }
  const std::string* out = args->Output();
  if (!out) return UsageError("share", "missing -o OUTDIR");
  ShareOptions options;
  options.out_dir = *out;
  if (const std::string* name = args->Value(kDataOption)) options.data_name = *name;
  Result<uint64_t> max_shard = ParseMaxShardBytes(*args);
  if (!max_shard.ok()) return UsageError("share", max_shard.status().message());
  options.max_shard_bytes = *max_shard;
  if (const std::string* text = args->Value(kAlignOption)) {
    Result<uint64_t> align = ParseAlignment(*text, kAlignOption, kMaxInlineAlignment);
    if (!align.ok()) return UsageError("share", align.status().message());
    options.alignment = *align;
  }
  if (const std::string* text = args->Value(kMinBytesOption)) {
    Result<uint64_t> min = ParseByteSize(*text, kMinBytesOption);
    if (!min.ok()) return UsageError("share", min.status().message());
    options.min_bytes = *min;
  }
  options.integrity_table = args->Has(kIntegrityFlag);
  const bool dry_run = args->Has(kDryRunFlag);

  Result<SharePlan> plan = PlanShare(args->positional, options);
  if (!plan.ok()) return Failure(plan.status());
  if (dry_run) {
    if (JsonReport()) {
      std::printf("%s\n", json::Print(ShareReportJson(plan->report)).c_str());
    } else {
      PrintReport(*plan, true);
    }
    return kExitOk;
  }
  const ArtifactFiles files = plan->files();
  WriteStats stats;
  {
    ProgressLine progress("writing " + options.out_dir);
    WriteOptions write;
    write.progress = progress.callback();
    write.stats = &stats;
    if (Status s = WriteShare(*plan, write, CommandOutputFs()); !s.ok()) return Failure(s);
  }
  if (JsonReport()) {
    json::Value report = ShareReportJson(plan->report, &stats);
    AddWriteStats(files, stats, &report);  // and "written", as every writing command
    std::printf("%s\n", json::Print(report).c_str());
    return kExitOk;
  }
  PrintReport(*plan, false);
  PrintWriteStats(stats);
  return kExitOk;
}

}  // namespace etpack::cli
