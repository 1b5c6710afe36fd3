#include "etpack/artifact_source.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "plan/assembler.h"
#include "writer/plan_behind.h"

namespace etpack {
namespace {

class ArtifactSourceImpl final : public Source {
 public:
  ArtifactSourceImpl(ArtifactPlan plan, std::string name)
      : plan_(std::move(plan)), name_(std::move(name)) {}

  uint64_t size() const override { return plan_.file_size; }

  Status ReadAt(uint64_t offset, void* dst, size_t n) const override {
    if (offset > plan_.file_size || n > plan_.file_size - offset) {
      return OutOfRange(Describe() + ": read [" + std::to_string(offset) + ", +" +
                        std::to_string(n) + ") runs past its end");
    }
    auto* out = static_cast<uint8_t*>(dst);
    const uint64_t end = offset + n;
    uint64_t pos = offset;
    const uint64_t head = plan_.head.size();
    if (pos < head) {
      const uint64_t k = std::min(end, head) - pos;
      std::memcpy(out, plan_.head.data() + pos, k);
      pos += k;
    }
    // The last placement starting at or before `pos` may reach into the
    // range; everything after it that starts before `end` does.
    const std::vector<Placement>& ps = plan_.placements;
    auto it = std::upper_bound(ps.begin(), ps.end(), pos,
                               [](uint64_t v, const Placement& p) { return v < p.offset; });
    if (it != ps.begin()) --it;
    for (; it != ps.end() && pos < end && it->offset < end; ++it) {
      const uint64_t p_end = it->offset + it->source->size();  // <= file_size: validated
      if (p_end <= pos) continue;
      if (it->offset > pos) {
        std::memset(out + (pos - offset), 0, it->offset - pos);
        pos = it->offset;
      }
      const uint64_t k = std::min(end, p_end) - pos;
      Status s = it->source->ReadAt(pos - it->offset, out + (pos - offset), k);
      if (!s.ok()) return s.WithContext(Describe());
      pos += k;
    }
    if (pos < end) std::memset(out + (pos - offset), 0, end - pos);
    return Status::OK();
  }

  std::string Describe() const override {
    return name_ + " (" + std::to_string(plan_.file_size) + " bytes)";
  }

  const ArtifactPlan& plan() const { return plan_; }

 private:
  const ArtifactPlan plan_;
  const std::string name_;
};

}  // namespace

const ArtifactPlan* PlanBehind(const Source& source) {
  const auto* impl = dynamic_cast<const ArtifactSourceImpl*>(&source);
  return impl == nullptr ? nullptr : &impl->plan();
}

Result<SourcePtr> ArtifactSource(ArtifactPlan plan, std::string name) {
  ETPACK_RETURN_IF_ERROR(ValidateArtifactPlan(plan).WithContext(name));
  // Such a plan's bytes are known only to the writer, as it writes them.
  if (plan.base != nullptr || plan.tail != nullptr) {
    return InvalidArgument(name + ": a plan with a base or a tail cannot be read as a source");
  }
  // A plan of one source and nothing else (WholeSourcePlan) is that source:
  // handing it back keeps its file range for in-kernel copies.
  if (plan.head.empty() && plan.placements.size() == 1 && plan.placements[0].offset == 0 &&
      plan.placements[0].source->size() == plan.file_size) {
    return plan.placements[0].source;
  }
  return SourcePtr(std::make_shared<ArtifactSourceImpl>(std::move(plan), std::move(name)));
}

}  // namespace etpack
