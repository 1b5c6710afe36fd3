#include "pte/pte_format.h"

#include <cstring>
#include <string>

#include "etpack/layout.h"

namespace etpack::pte {

Result<uint64_t> InsertExtendedHeader(std::vector<uint8_t>& fb, uint64_t max_force_align) {
  // Padding to the largest force_align keeps every aligned vector aligned.
  ETPACK_ASSIGN_OR_RETURN(uint64_t padded, AlignUp(kHeaderLength, max_force_align));
  ETPACK_RETURN_IF_ERROR(InsertAfterIdentifier(fb, padded));
  uint8_t* h = fb.data() + kHeaderOffset;
  std::memcpy(h, kHeaderMagic, 4);
  StoreLE32(h + 4, kHeaderLength);
  return fb.size();
}

void WriteExtendedHeaderFields(uint8_t* file_start, uint64_t program_size,
                               uint64_t segment_base_offset, uint64_t segment_data_size) {
  uint8_t* h = file_start + kHeaderOffset;
  StoreLE64(h + 8, program_size);
  StoreLE64(h + 16, segment_base_offset);
  StoreLE64(h + 24, segment_data_size);
}

}  // namespace etpack::pte
