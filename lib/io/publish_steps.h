// publish_steps.h (internal to io) — the way to the protected steps of
// PublishableOutput, for Publish() and OutputFileWrapper. Everything else wraps an
// output through OutputFileWrapper (etpack/output.h).

#ifndef ETPACK_IO_PUBLISH_STEPS_H_
#define ETPACK_IO_PUBLISH_STEPS_H_

#include <string>

#include "etpack/output.h"

namespace etpack {

class PublishSteps {
 public:
  static Status Link(PublishableOutput& out) { return out.Link(); }
  static Status Rename(PublishableOutput& out) { return out.Rename(); }
  static void Unplace(PublishableOutput& out) { out.Unplace(); }
  static Status SyncDirectory(PublishableOutput& out) { return out.SyncDirectory(); }
  static bool replaced_existing(const PublishableOutput& out) { return out.replaced_existing(); }
  static bool DestinationExists(const PublishableOutput& out) { return out.DestinationExists(); }
  static Status Mark(PublishableOutput& out, const std::string& bytes) { return out.Mark(bytes); }
  static void Unmark(PublishableOutput& out, bool unit_placed) { out.Unmark(unit_placed); }
  static std::string lock_directory(const PublishableOutput& out) { return out.lock_directory(); }
};

}  // namespace etpack

#endif  // ETPACK_IO_PUBLISH_STEPS_H_
