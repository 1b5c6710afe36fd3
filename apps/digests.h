// apps/digests.h — `--integrity` and `--digest sha256`, shared by the
// writing commands (pack, repack, ptd, bundle), and `inspect --digest`.

#ifndef ETPACK_APPS_DIGESTS_H_
#define ETPACK_APPS_DIGESTS_H_

#include <string>

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

// Writes `files` as one unit with a progress line labelled `label`; with
// `sha256`, the writer also computes SHA-256 of each file's head and
// segments in the same pass, printed afterwards per part and per key.
Status WriteFiles(const ArtifactFiles& files, const std::string& label, bool sha256);

// `inspect --digest`: SHA-256 of every part and key of a written file.
Status PrintFileDigests(const std::string& path);

}  // namespace etpack::cli

#endif  // ETPACK_APPS_DIGESTS_H_
