// pte_format.h (internal) — .pte wire constants shared by the planner and
// the reader. The extended header has its own file, pte_header.h. See
// docs/formats.md §2.

#ifndef ETPACK_PTE_FORMAT_H_
#define ETPACK_PTE_FORMAT_H_

#include <cstdint>

#include "plan/header_insert.h"

namespace etpack::pte {

inline constexpr char kFileIdentifier[4] = {'E', 'T', '1', '2'};
inline constexpr uint64_t kRuntimeHeadBytes = 64;  // the runtime reads this much first

// DataLocation values of BackendDelegateDataReference.
inline constexpr int kLocationInline = 0;
inline constexpr int kLocationSegment = 1;

// The formats are little-endian whatever the host is.
using etpack::LoadLE32;
using etpack::LoadLE64;
using etpack::StoreLE32;
using etpack::StoreLE64;

}  // namespace etpack::pte

#endif  // ETPACK_PTE_FORMAT_H_
