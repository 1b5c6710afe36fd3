// The whole of `etpack share` (etpack/share.h, Share): plan, then write.

#include <utility>

#include "etpack/share.h"

namespace etpack {

Result<ShareResult> Share(const std::vector<std::string>& inputs, const ShareOptions& options,
                          bool dry_run, WriteOptions write, const Env& env) {
  ETPACK_ASSIGN_OR_RETURN(SharePlan plan, PlanShare(inputs, options, env));
  std::optional<WriteStats> written;
  if (!dry_run) {
    WriteStats stats;
    write.stats = &stats;
    ETPACK_RETURN_IF_ERROR(WriteShare(plan, write, env));
    written = stats;
  }
  return ShareResult{std::move(plan), written};
}

}  // namespace etpack
