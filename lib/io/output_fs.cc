// What an OutputFs does where its outputs are not files (etpack/output.h):
// no folder to make, nothing to lock.

#include <memory>
#include <string>

#include "etpack/output.h"

namespace etpack {
namespace {

class NothingLocked final : public UpdateLock {
 public:
  bool Covers(const InputFile&) const override { return true; }
};

}  // namespace

Status OutputFs::MakeFolders(const std::string&) { return Status::OK(); }

Result<std::unique_ptr<UpdateLock>> OutputFs::LockForUpdate(const std::string&, const CancelFn&) {
  return std::unique_ptr<UpdateLock>(std::make_unique<NothingLocked>());
}

}  // namespace etpack
