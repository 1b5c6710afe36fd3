// apps/digests.h — `--integrity` and `--digest sha256`, shared by the
// writing commands (pack, repack, ptd, bundle), and `inspect --digest`.

#ifndef ETPACK_APPS_DIGESTS_H_
#define ETPACK_APPS_DIGESTS_H_

#include <string>
#include <vector>

#include "args.h"
#include "etpack/status.h"
#include "etpack/writer.h"

namespace etpack::cli {

inline constexpr char kIntegrityFlag[] = "--integrity";
inline constexpr char kDigestOption[] = "--digest";

struct DigestFlags {
  bool integrity_table = false;  // --integrity
  bool sha256 = false;           // --digest sha256
};

// Reads the two options; an unknown --digest value is an error naming it.
Result<DigestFlags> ParseDigestFlags(const Args& args);

// Prints the SHA-256 of each written file's head and segments (computed by
// the writer in the same pass, one entry per file), per part and per key.
void PrintWrittenDigests(const ArtifactFiles& files, const std::vector<ArtifactSha256>& digests,
                         const Env& env);

// `inspect --digest`: SHA-256 of every part and key of a written file.
Status PrintFileDigests(const std::string& path, const Env& env);

}  // namespace etpack::cli

#endif  // ETPACK_APPS_DIGESTS_H_
