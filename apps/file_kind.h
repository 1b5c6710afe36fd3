// apps/file_kind.h — telling .pte, .ptd and .bpte apart.

#ifndef ETPACK_APPS_FILE_KIND_H_
#define ETPACK_APPS_FILE_KIND_H_

#include <string>

#include "etpack/status.h"

namespace etpack::cli {

// What a file is, from its identifier at bytes 4..7.
enum class FileKind { kPte, kPtd, kBpte };

// Fails naming the file when it cannot be read (kNotFound, kIoError), or is
// shorter than 8 bytes or carries none of ET12, FT01, BP08 (kCorrupt).
Result<FileKind> DetectFileKind(const std::string& path);

}  // namespace etpack::cli

#endif  // ETPACK_APPS_FILE_KIND_H_
