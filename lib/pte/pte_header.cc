#include "pte/pte_header.h"

#include <cstring>
#include <string>

#include "pte/pte_format.h"

namespace etpack {
namespace pte {
namespace {

void EncodeExtendedHeader(const HeadPlacement& l, uint8_t* header) {
  EncodeHeader(header, kHeaderMagic, kHeaderLength,
               {l.head_size, l.segment_base_offset, l.segment_data_size});
}

}  // namespace

Result<HeaderCodec> ExtendedHeaderCodec(uint64_t max_force_align) {
  ETPACK_RETURN_IF_ERROR(CheckPowerOfTwo(max_force_align, "eh00 header padding"));
  ETPACK_ASSIGN_OR_RETURN(uint64_t padded, AlignUp(kHeaderLength, max_force_align));
  return HeaderCodec{padded, &EncodeExtendedHeader};
}

}  // namespace pte

Result<ExtendedHeader> ParseExtendedHeader(const uint8_t* data, uint64_t size) {
  if (size < pte::kRuntimeHeadBytes) {
    return Corrupt("file is " + std::to_string(size) + " bytes; a .pte needs at least " +
                   std::to_string(pte::kRuntimeHeadBytes));
  }
  ExtendedHeader h;
  const uint8_t* p = data + pte::kHeaderOffset;
  if (std::memcmp(p, pte::kHeaderMagic, 4) != 0) return h;
  h.present = true;
  h.length = LoadLE32(p + 4);
  if (h.length < pte::kMinHeaderLength) {
    return Corrupt("extended header length = " + std::to_string(h.length) +
                   " is below the minimum of " + std::to_string(pte::kMinHeaderLength));
  }
  h.program_size = HeaderField(p, 0);
  h.segment_base_offset = HeaderField(p, 1);
  if (h.length >= pte::kHeaderLength) h.segment_data_size = HeaderField(p, 2);
  return h;
}

}  // namespace etpack
