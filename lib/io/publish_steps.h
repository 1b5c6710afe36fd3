// publish_steps.h (internal) — the way to the protected steps of
// OutputFile, for Publish() and for outputs that wrap other outputs.

#ifndef ETPACK_IO_PUBLISH_STEPS_H_
#define ETPACK_IO_PUBLISH_STEPS_H_

#include <memory>
#include <string>
#include <vector>

#include "etpack/output.h"

namespace etpack {

class PublishSteps {
 public:
  static Status Link(OutputFile& out) { return out.Link(); }
  static Status Rename(OutputFile& out) { return out.Rename(); }
  static void Unplace(OutputFile& out) { out.Unplace(); }
  static Status SyncDirectory(OutputFile& out) { return out.SyncDirectory(); }
  static bool replaced_existing(const OutputFile& out) { return out.replaced_existing(); }
  static std::string lock_directory(const OutputFile& out) { return out.lock_directory(); }
};

}  // namespace etpack

#endif  // ETPACK_IO_PUBLISH_STEPS_H_
