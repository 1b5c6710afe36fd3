// nfat_format.h (internal) — the NFAT preamble and entry table (docs/formats.md
// §5), encoded and decoded here and nowhere else. The layout is in
// etpack/nfat.h.

#ifndef ETPACK_NFAT_FORMAT_H_
#define ETPACK_NFAT_FORMAT_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace etpack::nfat {

inline constexpr char kMagic[4] = {'N', 'F', 'A', 'T'};
inline constexpr uint64_t kPreambleSize = 12;  // magic, version, count
inline constexpr uint64_t kIdSize = 32;
inline constexpr uint64_t kEntrySize = 48;  // id, u64 offset, u64 length

// Why `id` (the characters before the padding) cannot be a backend id, or
// "" when it can: 1 to 32 bytes, each 0x01-0x7f.
std::string BackendIdProblem(std::string_view id);

// `id` and its text for error messages: printable ASCII quoted, anything
// else escaped as \xNN.
std::string ShownId(std::string_view id);

}  // namespace etpack::nfat

#endif  // ETPACK_NFAT_FORMAT_H_
