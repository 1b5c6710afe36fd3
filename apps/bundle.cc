// `etpack bundle` and `etpack unbundle`: .pte + CASES.json <-> .bpte.

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "digests.h"
#include "etpack/bpte.h"
#include "etpack/bpte_file.h"
#include "etpack/bundle_cases.h"
#include "etpack/input.h"
#include "etpack/pte.h"
#include "etpack/pte_file.h"
#include "etpack/source.h"
#include "etpack/writer.h"
#include "measure.h"
#include "write_job.h"

namespace etpack::cli {

namespace {

// The most a program's segments can ask of the default program alignment:
// beyond the largest page size in use there is nothing left to gain.
constexpr uint64_t kMaxInferredAlignment = 16384;

// The alignment every segment of `pte` has in its file (capped), so that
// embedding the program at a multiple of it keeps each segment as aligned
// as it was. 1 when there are no segments.
uint64_t SegmentAlignmentOf(const PteFile& pte) {
  const PteSegmentMap& layout = pte.layout();
  if (layout.segments.empty()) return 1;
  uint64_t a = kMaxInferredAlignment;
  for (const PteSegmentMap::Segment& s : layout.segments) {
    const uint64_t at = layout.segment_base_offset + s.offset;
    if (at != 0) a = std::min(a, at & (~at + 1));  // lowest set bit
  }
  return a;
}

double MiBPerSecond(uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / (1024.0 * 1024.0) / seconds : 0;
}

const char* LayoutName(BpteLayout layout) {
  return layout == BpteLayout::kStandard ? "standard" : "segmented";
}

}  // namespace

int Bundle(const std::vector<std::string>& argv_list, const Env& env) {
  auto usage = [](const std::string& m) { return UsageError("bundle", m); };
  Result<Args> args = ParseArgs(
      argv_list, {"-o", "--output", "--cases", "--layout", "--program-alignment", kDigestOption},
      {kIntegrityFlag, kJsonFlag});
  if (!args.ok()) return usage(args.status().message());
  Result<DigestFlags> digest = ParseDigestFlags(*args);
  if (!digest.ok()) return usage(digest.status().message());
  if (args->positional.size() != 1) {
    return usage("expected exactly one IN.pte, got " + std::to_string(args->positional.size()));
  }
  const std::string input = args->positional[0];
  const std::string* cases = args->Value("--cases");
  if (!cases || cases->empty()) return usage("missing --cases CASES.json");
  const std::string* out = args->Output();
  if (!out) return usage("missing -o OUT.bpte");

  BpteOptions options;
  if (const std::string* layout = args->Value("--layout")) {
    if (*layout == "standard") {
      options.layout = BpteLayout::kStandard;
    } else if (*layout == "segmented") {
      options.layout = BpteLayout::kSegmented;
    } else {
      return usage("--layout = '" + *layout + "' is neither standard nor segmented");
    }
  }
  const std::string* alignment_text = args->Value("--program-alignment");
  if (alignment_text) {
    if (options.layout != BpteLayout::kSegmented) {
      return usage(
          "--program-alignment applies to --layout segmented only (the standard "
          "layout places the program where the format says)");
    }
    Result<uint64_t> a = ParseAlignment(*alignment_text, "--program-alignment");
    if (!a.ok()) return usage(a.status().message());
    if (*a < 128) {
      return usage("--program-alignment = " + std::to_string(*a) +
                   " is below 128, the alignment of a .pte's own segments");
    }
    options.program_alignment = *a;
  }

  const auto start = std::chrono::steady_clock::now();
  Result<std::unique_ptr<PteFile>> pte = PteFile::Open(input, env);
  if (!pte.ok()) return Failure(pte.status());
  SourcePtr cases_file;
  Result<std::vector<BundledTestSuite>> suites = LoadBundleCases(*cases, &cases_file, env);
  if (!suites.ok()) return Failure(suites.status());
  if (Status s = CheckAgainstProgram(*suites, **pte); !s.ok()) {
    return Failure(s.WithContext(*cases + " does not fit " + input));
  }
  const uint64_t inner_alignment = SegmentAlignmentOf(**pte);
  if (options.layout == BpteLayout::kSegmented) {
    if (!alignment_text) {
      options.program_alignment = std::max(options.program_alignment, inner_alignment);
    } else if (options.program_alignment < inner_alignment) {
      std::fprintf(stderr,
                   "etpack: note: the segments of %s are %" PRIu64
                   "-aligned; with --program-alignment %" PRIu64
                   " they are only that aligned in %s\n",
                   input.c_str(), inner_alignment, options.program_alignment, out->c_str());
    }
  }

  Result<SourcePtr> program = FileSource(env.in(), input);
  if (!program.ok()) return Failure(program.status());
  BpteInput bundle_input;
  bundle_input.program = WholeSourcePlan(*program);
  if (digest->integrity_table) {
    // The table lives in the program (the runtime ignores its key there),
    // so the program is laid out again with one, nested without a copy.
    PteOptions pte_options = (*pte)->InferredOptions();
    pte_options.integrity_table = true;
    Result<PteInput> pte_input = (*pte)->ToInput();
    if (!pte_input.ok()) return Failure(pte_input.status());
    Result<PtePlan> pte_plan = PlanPte(std::move(*pte_input), pte_options);
    if (!pte_plan.ok()) return Failure(pte_plan.status().WithContext(input));
    bundle_input.program = std::move(pte_plan->artifact);
  }
  bundle_input.suites = std::move(suites).value();
  bundle_input.read = {cases_file};
  Result<BptePlan> plan = PlanBpte(bundle_input, options);
  if (!plan.ok()) {
    Status s = plan.status().WithContext(*out);
    if (s.code() == Code::kOutOfRange && options.layout == BpteLayout::kStandard) {
      s = Status(s.code(), s.message() + ": give --layout segmented");
    }
    return Failure(s);
  }
  const double plan_s = SecondsSince(start);

  const Writing w{env, args->Has(kJsonFlag), digest->sha256};
  const auto write_start = std::chrono::steady_clock::now();
  if (Status s = WritePlanned(*out, plan->artifact, w); !s.ok()) return Failure(s);
  const double write_s = SecondsSince(write_start);
  if (w.json) return kExitOk;

  size_t case_count = 0;
  for (const BundledTestSuite& suite : bundle_input.suites) case_count += suite.test_cases.size();
  std::printf("read:    %s (%s); %s with %s from %s\n", input.c_str(),
              HumanBytes((*pte)->size()).c_str(),
              Count(bundle_input.suites.size(), "test suite").c_str(),
              Count(case_count, "case").c_str(), cases->c_str());
  std::printf("wrote:   %s\n", out->c_str());
  std::printf("  layout:              %s", LayoutName(plan->layout));
  if (plan->layout == BpteLayout::kSegmented) {
    std::printf(", program alignment %" PRIu64, options.program_alignment);
  }
  std::printf("\n  file size:           %s\n", BytesText(plan->artifact.file_size).c_str());
  std::printf("  program:             offset %" PRIu64 ", %s\n", plan->program_offset,
              BytesText(plan->program_size).c_str());
  std::printf("time:    open + check + plan %.3f s, write %.3f s (%.0f MiB/s), total %.3f s\n",
              plan_s, write_s, MiBPerSecond(plan->artifact.file_size, write_s),
              SecondsSince(start));
  std::printf("memory:  peak RSS %.1f MiB\n", PeakRssMiB());
  return kExitOk;
}

int Unbundle(const std::vector<std::string>& argv_list, const Env& env) {
  auto usage = [](const std::string& m) { return UsageError("unbundle", m); };
  Result<Args> args = ParseArgs(argv_list, {"-o", "--output"}, {kJsonFlag});
  if (!args.ok()) return usage(args.status().message());
  if (args->positional.size() != 1) {
    return usage("expected exactly one IN.bpte, got " + std::to_string(args->positional.size()));
  }
  const std::string input = args->positional[0];
  const std::string* out = args->Output();
  if (!out) return usage("missing -o OUT.pte");

  const auto start = std::chrono::steady_clock::now();
  Result<std::unique_ptr<BpteFile>> bpte = BpteFile::Open(input, env);
  if (!bpte.ok()) return Failure(bpte.status());
  const double open_s = SecondsSince(start);

  const auto write_start = std::chrono::steady_clock::now();
  const ArtifactPlan plan = WholeSourcePlan((*bpte)->ProgramSource());
  const Writing w{env, args->Has(kJsonFlag)};
  if (Status s = WritePlanned(*out, plan, w); !s.ok()) return Failure(s);
  const double write_s = SecondsSince(write_start);
  if (w.json) return kExitOk;

  std::printf("read:    %s (%s layout, %s); program at offset %" PRIu64 "\n", input.c_str(),
              LayoutName((*bpte)->layout()), HumanBytes((*bpte)->size()).c_str(),
              (*bpte)->program_offset());
  std::printf("wrote:   %s\n", out->c_str());
  std::printf("  file size:           %s\n", BytesText(plan.file_size).c_str());
  std::printf("time:    open + verify %.3f s, write %.3f s (%.0f MiB/s), total %.3f s\n", open_s,
              write_s, MiBPerSecond(plan.file_size, write_s), SecondsSince(start));
  std::printf("memory:  peak RSS %.1f MiB\n", PeakRssMiB());
  return kExitOk;
}

}  // namespace etpack::cli
