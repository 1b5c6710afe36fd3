// fd_output.h (internal) — an output that is a byte range of a file the
// caller already has open (WriteArtifactAt, etpack/writer.h).

#ifndef ETPACK_IO_FD_OUTPUT_H_
#define ETPACK_IO_FD_OUTPUT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "etpack/output.h"
#include "etpack/source.h"
#include "etpack/status.h"

namespace etpack {

// An output whose byte i lands at `offset + i` of the open file `fd`, named
// `name` in errors. It is never published: the file is the caller's, so
// the publishing steps fail with kUnimplemented and the destructor leaves
// whatever was written. Reserve(size) makes every byte of the range read as
// zero until written (bytes of the file already inside the range are
// overwritten with zeros; the file grows to offset + size when shorter).
// Writes use pwrite, copy_file_range for file sources, and bounded reads for
// sources with neither a span nor a file range.
// Fails with kInvalidArgument for a descriptor opened with O_APPEND (the
// kernel would ignore every offset) or not open for writing. It Replaces()
// (CheckNotInputs) every descriptor of the same file (device and inode):
// writing the range overwrites that file in place.
Result<std::unique_ptr<OutputFile>> NewFdRangeOutput(int fd, uint64_t offset, std::string name);

// CheckNotInputs with the file open as `fd`, named `name`, as the output,
// whatever mode it is open in (an append-mode file written some other way).
Status CheckFdNotInputs(int fd, const std::string& name, const std::vector<const Source*>& inputs);

}  // namespace etpack

#endif  // ETPACK_IO_FD_OUTPUT_H_
