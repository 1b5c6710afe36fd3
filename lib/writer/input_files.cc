#include "writer/input_files.h"

#include "writer/plan_behind.h"

namespace etpack {

void InputFiles::Add(const SourcePtr& source) {
  if (source == nullptr) return;
  if (const ArtifactPlan* nested = PlanBehind(*source)) {
    Add(*nested);
    return;
  }
  const FileRange* r = source->file_range();
  if (r != nullptr && fds_.insert(r->fd).second) kept_.push_back(source);
}

void InputFiles::Add(const std::vector<SourcePtr>& sources) {
  for (const SourcePtr& s : sources) Add(s);
}

void InputFiles::Add(const ArtifactPlan& plan) {
  for (const Placement& p : plan.placements) Add(p.source);
  Add(plan.inputs);
  Add(plan.base);
}

std::vector<const Source*> SourcesRead(const ArtifactPlan& plan) {
  std::vector<const Source*> out;
  out.reserve(plan.placements.size() + plan.inputs.size());
  for (const Placement& p : plan.placements) out.push_back(p.source.get());
  for (const SourcePtr& s : plan.inputs) out.push_back(s.get());
  if (plan.base != nullptr) out.push_back(plan.base.get());
  return out;
}

}  // namespace etpack
