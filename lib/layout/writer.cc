#include "etpack/writer.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "io/publish_steps.h"
#include "layout/assembler.h"

namespace etpack {
namespace {

// Large placements are written in slices of this size so progress is
// reported at least this often.
constexpr uint64_t kProgressStep = uint64_t{64} << 20;

// Adds up the bytes of several plans for one progress line.
class Progress {
 public:
  Progress(const ProgressFn& fn, uint64_t total) : fn_(fn), total_(total) {}

  void Advance(uint64_t n) {
    done_ += n;
    if (fn_ && done_ - reported_ >= kProgressStep) {
      fn_(done_, total_);
      reported_ = done_;
    }
  }
  void Report() const {
    if (fn_) fn_(done_, total_);
  }

 private:
  const ProgressFn& fn_;
  const uint64_t total_;
  uint64_t done_ = 0;
  uint64_t reported_ = 0;
};

// Sizes are bounded by file_size (validated), so this cannot overflow.
uint64_t PayloadBytes(const ArtifactPlan& plan) {
  uint64_t total = plan.head.size();
  for (const Placement& p : plan.placements) total += p.source->size();
  return total;
}

// WriteArtifact for a plan that ValidatePlan accepted.
Status WriteValidPlan(const ArtifactPlan& plan, OutputFile& output, Progress& progress) {
  ETPACK_RETURN_IF_ERROR(output.Reserve(plan.file_size));
  if (!plan.head.empty()) {
    ETPACK_RETURN_IF_ERROR(output.Write(0, plan.head.data(), plan.head.size()));
    progress.Advance(plan.head.size());
  }
  for (const Placement& p : plan.placements) {
    const uint64_t size = p.source->size();
    if (size <= kProgressStep) {
      ETPACK_RETURN_IF_ERROR(output.Write(p.offset, *p.source));
      progress.Advance(size);
      continue;
    }
    for (uint64_t pos = 0; pos < size; pos += kProgressStep) {
      const uint64_t n = std::min(kProgressStep, size - pos);
      ETPACK_RETURN_IF_ERROR(output.Write(p.offset + pos, *SliceSource(p.source, pos, n)));
      progress.Advance(n);
    }
  }
  return Status::OK();
}

}  // namespace

ArtifactPlan PlanOfSource(SourcePtr source) {
  ArtifactPlan plan;
  plan.file_size = source->size();
  if (plan.file_size > 0) plan.placements.push_back({0, 1, std::move(source)});
  return plan;
}

Status WriteArtifact(const ArtifactPlan& plan, OutputFile& output, const ProgressFn& progress) {
  ETPACK_RETURN_IF_ERROR(ValidateArtifactPlan(plan));
  Progress p(progress, PayloadBytes(plan));
  ETPACK_RETURN_IF_ERROR(WriteValidPlan(plan, output, p));
  p.Report();
  return Status::OK();
}

Status WriteArtifactFiles(OutputFs& fs, const ArtifactFiles& files, const ProgressFn& progress) {
  // Everything that can be checked is checked before the first output
  // exists, so a bad plan or destination touches nothing.
  uint64_t total = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    const auto& [path, plan] = files[i];
    if (plan == nullptr) return InvalidArgument(path + ": no plan to write");
    ETPACK_RETURN_IF_ERROR(ValidateArtifactPlan(*plan).WithContext(path));
    total += PayloadBytes(*plan);
  }
  std::vector<std::unique_ptr<OutputFile>> outputs;
  for (const auto& file : files) {
    ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<OutputFile> out, fs.Create(file.first));
    outputs.push_back(std::move(out));
  }
  ETPACK_RETURN_IF_ERROR(CheckOutputsDistinct(outputs));
  Progress p(progress, total);
  for (size_t i = 0; i < files.size(); ++i) {
    ETPACK_RETURN_IF_ERROR(WriteValidPlan(*files[i].second, *outputs[i], p));
  }
  p.Report();
  return Publish(std::move(outputs));
}

Status WriteArtifactFiles(const ArtifactFiles& files, const OutputOptions& options,
                          const ProgressFn& progress) {
  return WriteArtifactFiles(*NewPosixOutputFs(options), files, progress);
}

Status WriteArtifactFile(const std::string& path, const ArtifactPlan& plan,
                         const OutputOptions& options, const ProgressFn& progress) {
  return WriteArtifactFiles({{path, &plan}}, options, progress);
}

Result<std::vector<uint8_t>> WriteArtifactToMemory(const ArtifactPlan& plan) {
  MemoryOutputFs fs;
  ETPACK_RETURN_IF_ERROR(WriteArtifactFiles(fs, {{"memory", &plan}}));
  return fs.files().begin()->second;
}

}  // namespace etpack
