// publish.h (internal) — what io offers the writer about a unit of outputs
// before it writes them (Publish() itself is public, etpack/output.h).

#ifndef ETPACK_IO_PUBLISH_H_
#define ETPACK_IO_PUBLISH_H_

#include <memory>
#include <vector>

#include "etpack/output.h"

namespace etpack {

// kInvalidArgument when an output is null or two outputs would land on
// the same file (the later one would replace the earlier, and the unit
// would report success with one file missing).
Status CheckOutputsDistinct(const std::vector<std::unique_ptr<OutputFile>>& outputs);

}  // namespace etpack

#endif  // ETPACK_IO_PUBLISH_H_
