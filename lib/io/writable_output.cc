// The defaults of WritableOutput (etpack/output.h): what an output that
// cannot clone or shrink answers.

#include "etpack/output.h"

namespace etpack {

Status WritableOutput::Write(uint64_t offset, const void* data, uint64_t size) {
  return Write(offset, *MemorySource(data, size));
}

Result<bool> WritableOutput::ReserveClone(const Source&) { return false; }

Status WritableOutput::Truncate(uint64_t) {
  return Unimplemented(destination() + ": this output cannot be truncated");
}

}  // namespace etpack
