// ptd_format.h (internal) — .ptd wire constants shared by the planner and
// the reader. The FH01 header has its own file, ptd_header.h. See
// docs/formats.md §3.

#ifndef ETPACK_PTD_FORMAT_H_
#define ETPACK_PTD_FORMAT_H_

#include <cstdint>

namespace etpack::ptd {

inline constexpr char kFileIdentifier[4] = {'F', 'T', '0', '1'};
inline constexpr uint64_t kRuntimeHeadBytes = 64;  // the runtime reads this much first

}  // namespace etpack::ptd

#endif  // ETPACK_PTD_FORMAT_H_
