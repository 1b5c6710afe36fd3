#include "etpack/writer.h"

#include <algorithm>
#include <string>

namespace etpack {
namespace {

// Large placements are written in slices of this size so progress is
// reported at least this often.
constexpr uint64_t kProgressStep = uint64_t{64} << 20;

Status ValidatePlan(const ArtifactPlan& plan) {
  const uint64_t head = plan.head.size();
  if (head > plan.file_size) {
    return InvalidArgument("artifact plan: head is " + std::to_string(head) +
                           " bytes but file_size = " + std::to_string(plan.file_size));
  }
  uint64_t prev_end = head;
  for (size_t i = 0; i < plan.placements.size(); ++i) {
    const Placement& p = plan.placements[i];
    // Built only on the way out: plans can hold many thousands of items.
    auto field = [i] { return "artifact plan: placements[" + std::to_string(i) + "]"; };
    if (p.source == nullptr) return InvalidArgument(field() + ".source is null");
    if (p.alignment == 0 || (p.alignment & (p.alignment - 1)) != 0) {
      return InvalidArgument(field() + ".alignment = " + std::to_string(p.alignment) +
                             " is not a power of two");
    }
    if (p.offset % p.alignment != 0) {
      return InvalidArgument(field() + ".offset = " + std::to_string(p.offset) +
                             " is not a multiple of its alignment " +
                             std::to_string(p.alignment));
    }
    if (p.offset < prev_end) {
      return InvalidArgument(
          field() + ".offset = " + std::to_string(p.offset) +
          (i == 0 ? " lies inside the head, which ends at "
                  : " overlaps or precedes placements[" + std::to_string(i - 1) +
                        "], which ends at ") +
          std::to_string(prev_end));
    }
    const uint64_t size = p.source->size();
    if (p.offset > plan.file_size || size > plan.file_size - p.offset) {
      return InvalidArgument(field() + " [" + std::to_string(p.offset) + ", +" +
                             std::to_string(size) + ") of " + p.source->Describe() +
                             " runs past file_size = " + std::to_string(plan.file_size));
    }
    prev_end = p.offset + size;
  }
  return Status::OK();
}

// WriteArtifact for a plan that ValidatePlan accepted.
Status WriteValidPlan(const ArtifactPlan& plan, Sink& sink, const ProgressFn& progress) {
  // Sizes are bounded by file_size (validated), so this cannot overflow.
  uint64_t total = plan.head.size();
  for (const Placement& p : plan.placements) total += p.source->size();

  ETPACK_RETURN_IF_ERROR(sink.Reserve(plan.file_size));
  uint64_t done = 0;
  uint64_t reported = 0;
  auto advance = [&](uint64_t n) {
    done += n;
    if (progress && done - reported >= kProgressStep) {
      progress(done, total);
      reported = done;
    }
  };
  if (!plan.head.empty()) {
    ETPACK_RETURN_IF_ERROR(sink.Write(0, plan.head.data(), plan.head.size()));
    advance(plan.head.size());
  }
  for (const Placement& p : plan.placements) {
    const uint64_t size = p.source->size();
    if (size <= kProgressStep) {
      ETPACK_RETURN_IF_ERROR(sink.Write(p.offset, *p.source));
      advance(size);
      continue;
    }
    for (uint64_t pos = 0; pos < size; pos += kProgressStep) {
      const uint64_t n = std::min(kProgressStep, size - pos);
      ETPACK_RETURN_IF_ERROR(sink.Write(p.offset + pos, *SliceSource(p.source, pos, n)));
      advance(n);
    }
  }
  if (progress) progress(done, total);
  return Status::OK();
}

}  // namespace

Status WriteArtifact(const ArtifactPlan& plan, Sink& sink, const ProgressFn& progress) {
  ETPACK_RETURN_IF_ERROR(ValidatePlan(plan));
  return WriteValidPlan(plan, sink, progress);
}

Status WriteArtifactFile(const std::string& path, const ArtifactPlan& plan,
                         const FileSinkOptions& options, const ProgressFn& progress) {
  // Checked before the temporary file exists, so a bad plan touches nothing.
  ETPACK_RETURN_IF_ERROR(ValidatePlan(plan).WithContext(path));
  ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<Sink> sink, OpenFileSink(path, options));
  Status s = WriteValidPlan(plan, *sink, progress);
  if (!s.ok()) {
    sink->Abandon();
    return s;
  }
  return sink->Finish();
}

}  // namespace etpack
