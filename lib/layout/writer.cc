#include "etpack/writer.h"

#include <algorithm>
#include <string>

#include "layout/assembler.h"

namespace etpack {
namespace {

// Large placements are written in slices of this size so progress is
// reported at least this often.
constexpr uint64_t kProgressStep = uint64_t{64} << 20;

// WriteArtifact for a plan that ValidateArtifactPlan accepted.
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
  ETPACK_RETURN_IF_ERROR(ValidateArtifactPlan(plan));
  return WriteValidPlan(plan, sink, progress);
}

Status WriteArtifactFile(const std::string& path, const ArtifactPlan& plan,
                         const FileSinkOptions& options, const ProgressFn& progress) {
  // Checked before the temporary file exists, so a bad plan touches nothing.
  ETPACK_RETURN_IF_ERROR(ValidateArtifactPlan(plan).WithContext(path));
  ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<Sink> sink, OpenFileSink(path, options));
  Status s = WriteValidPlan(plan, *sink, progress);
  if (!s.ok()) {
    sink->Abandon();
    return s;
  }
  return sink->Finish();
}

}  // namespace etpack
