#include "bpte/bpte_header.h"

#include <cstring>
#include <string>

namespace etpack::bpte {
namespace {

void EncodeBundleHeader(const HeadPlacement& l, uint8_t* header) {
  EncodeHeader(header, kHeaderMagic, kHeaderLength,
               {l.head_size, l.segment_base_offset, l.segment_data_size});
}

}  // namespace

const HeaderCodec kHeaderCodec{kHeaderLength, &EncodeBundleHeader};

Result<Header> ParseHeader(const uint8_t* data, uint64_t size) {
  Header h;
  if (size < kHeaderOffset + kHeaderLength ||
      std::memcmp(data + kHeaderOffset, kHeaderMagic, 4) != 0) {
    return h;
  }
  const uint8_t* p = data + kHeaderOffset;
  h.present = true;
  h.length = LoadLE32(p + 4);
  if (h.length < kHeaderLength) {
    return Corrupt("bh00 header length = " + std::to_string(h.length) + " is below " +
                   std::to_string(kHeaderLength));
  }
  h.flatbuffer_size = HeaderField(p, 0);
  h.segment_base_offset = HeaderField(p, 1);
  h.segment_data_size = HeaderField(p, 2);
  return h;
}

}  // namespace etpack::bpte
