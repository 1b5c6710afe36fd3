// mapped_file.h (internal) — the head of a file, mapped read-only: what
// ArtifactFile keeps in memory of an artifact opened from a file.

#ifndef ETPACK_MAPPED_FILE_H_
#define ETPACK_MAPPED_FILE_H_

#include <cstdint>
#include <memory>

#include "etpack/source.h"
#include "etpack/status.h"

namespace etpack {

// Bytes [0, length) of a file source, mapped read-only and kept mapped
// while the returned owner lives. `*data` receives the first byte (the
// source's offset need not be page-aligned). Errors name the source.
// REQUIRES: file.file_range() != nullptr; length <= file.size().
Result<std::shared_ptr<const void>> MapFileHead(const Source& file, uint64_t length,
                                                const uint8_t** data);

}  // namespace etpack

#endif  // ETPACK_MAPPED_FILE_H_
