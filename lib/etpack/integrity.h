// etpack/integrity.h — checksums of an artifact's parts: the integrity
// table a writer can embed (PteOptions::integrity_table,
// PtdOptions::integrity_table; format in docs/integrity.md) and the
// digests `etpack verify --deep` and `inspect --digest` print.
//
// An artifact's parts are its head (headers and flatbuffer) and each of
// its segments; an integrity table covers all of them but itself. Checking
// reads every covered byte once.

#ifndef ETPACK_INTEGRITY_H_
#define ETPACK_INTEGRITY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "etpack/ptd_file.h"
#include "etpack/pte_file.h"
#include "etpack/status.h"

namespace etpack {

struct ArtifactPart {
  // "head", or "segment 3 (named_data 'w')": index, kind and key(s).
  std::string name;
  uint64_t offset = 0;  // from the artifact's first byte
  uint64_t size = 0;
  bool is_table = false;  // the integrity table itself (covered by nothing)
};

// The head, then every segment in segment-table order.
std::vector<ArtifactPart> PartsOf(const PteFile& file);
std::vector<ArtifactPart> PartsOf(const PtdFile& file);

struct IntegrityCheck {
  bool has_table = false;
  // XXH3-64 of every part but the table (in PartsOf order), when the file
  // has a table or `deep` was asked for; empty otherwise.
  std::vector<ArtifactPart> parts;
  std::vector<uint64_t> xxh3;
};

// Checks `file` against its integrity table, if it has one. kCorrupt names
// the first part whose bytes differ from what the table records — "segment
// 3 (named_data 'w') [offset, +size): XXH3-64 is 0x... but the integrity
// table records 0x..." — or a table that does not describe the file's parts.
// Without a table nothing is read unless `deep`, which hashes every part.
Result<IntegrityCheck> CheckIntegrity(const PteFile& file, bool deep);
Result<IntegrityCheck> CheckIntegrity(const PtdFile& file, bool deep);

// Lower-case hex SHA-256 of each part's bytes, in order.
Result<std::vector<std::string>> Sha256OfParts(const ArtifactFile& file,
                                               const std::vector<ArtifactPart>& parts);

// Lower-case hex of a digest (the writer's ArtifactSha256).
std::string ToHex(const std::vector<uint8_t>& digest);

}  // namespace etpack

#endif  // ETPACK_INTEGRITY_H_
