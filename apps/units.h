// apps/units.h — byte counts and alignments as people write and read them.

#ifndef ETPACK_APPS_UNITS_H_
#define ETPACK_APPS_UNITS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "etpack/status.h"
#include "etpack/writer.h"

namespace etpack::cli {

// A byte count: plain digits, or digits followed by K, M, G, T, P, E, KiB,
// MiB, GiB, TiB, PiB or EiB (all 1024-based; case-insensitive). `what`
// names the option in errors: kInvalidArgument "<what> = 'TEXT' is not a
// byte count (...)", or kOutOfRange "<what> = 'TEXT' is too large: a byte
// count is at most 18446744073709551615 (16 EiB - 1)" for one past 2^64 - 1.
Result<uint64_t> ParseByteSize(std::string_view text, std::string_view what);

// A byte count that must be a power of two no larger than `max` ("<what> =
// N is not a power of two", "<what> = TEXT (N) exceeds the maximum of M
// (1 GiB)" otherwise): the library's bound for the option, so that a flag
// is refused as a usage error before any file is touched.
Result<uint64_t> ParseAlignment(std::string_view text, std::string_view what,
                                uint64_t max = kMaxAlignment);

// "1 tensor", "2 tensors"; `many` when the plural is not `one` + "s".
std::string Count(uint64_t n, std::string_view one, std::string_view many = {});

// "1.5 GiB", "512 MiB", "123 bytes".
std::string HumanBytes(uint64_t bytes);
// "123 bytes", or "5368709120 bytes (5.0 GiB)" from 1 KiB on.
std::string BytesText(uint64_t bytes);

}  // namespace etpack::cli

#endif  // ETPACK_APPS_UNITS_H_
