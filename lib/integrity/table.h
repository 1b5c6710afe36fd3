// table.h (internal) — the integrity table's bytes (docs/integrity.md):
// encoder (the writer) and decoder (verify) side by side.
//
//   [0, 4)     magic "EPIT"
//   [4, 8)     u32 version = 1
//   [8, 12)    u32 hash = 1 (XXH3-64, seed 0)
//   [12, 16)   u32 count = E
//   [16, ..)   E entries of 24 bytes: u64 offset (from the artifact's first
//              byte), u64 size, u64 XXH3-64 of those bytes
//
// Entry 0 is the head (headers and flatbuffer); entry k is segment k - 1.
// The table is its artifact's last segment and has no entry of its own.
// All numbers little-endian.

#ifndef ETPACK_INTEGRITY_TABLE_H_
#define ETPACK_INTEGRITY_TABLE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "etpack/source.h"
#include "etpack/status.h"

namespace etpack {

// Every key of the table starts with this; a planner refuses user keys
// that do.
inline constexpr std::string_view kIntegrityKeyPrefix = "etpack.integrity.";

struct IntegrityEntry {
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t xxh3 = 0;
};

// Bytes of a table with `entries` entries.
uint64_t IntegrityTableSize(uint64_t entries);

std::vector<uint8_t> EncodeIntegrityTable(const std::vector<IntegrityEntry>& entries);

// kCorrupt naming the field for a wrong magic, version, hash or size.
Result<std::vector<IntegrityEntry>> DecodeIntegrityTable(const std::vector<uint8_t>& bytes);

// The key under which an artifact stores its table: the prefix and 16 hex
// digits of XXH3-64 over `format` and the artifact's other keys, so two
// files that can be loaded together (whose keys must differ) get different
// table keys, and planning the same input twice gives the same bytes.
std::string IntegrityKey(std::string_view format, const std::vector<std::string_view>& keys);

bool IsIntegrityKey(std::string_view key);

// kInvalidArgument naming `what` when `key` uses the reserved prefix.
Status CheckNotIntegrityKey(std::string_view key, const std::string& what);

// What a planner puts in the table's segment: a source of the table's size
// whose bytes only the writer produces (reading it fails, naming why).
SourcePtr IntegrityTablePlaceholder(uint64_t entries);

}  // namespace etpack

#endif  // ETPACK_INTEGRITY_TABLE_H_
