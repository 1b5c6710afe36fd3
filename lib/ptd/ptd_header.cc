#include "ptd/ptd_header.h"

#include <cstring>
#include <string>

#include "plan/header_insert.h"
#include "ptd/ptd_format.h"

namespace etpack::ptd {
namespace {

void EncodeFlatTensorHeader(const HeadPlacement& l, uint8_t* header) {
  EncodeHeader(header, kHeaderMagic, kHeaderLength,
               {l.header_size, l.flatbuffer_size, l.segment_base_offset, l.segment_data_size});
}

}  // namespace

const HeaderCodec kHeaderCodec{kPaddedHeaderLength, &EncodeFlatTensorHeader};

Result<FlatTensorHeader> ParseHeader(const uint8_t* data, uint64_t size) {
  if (size < kRuntimeHeadBytes) {
    return Corrupt("file is " + std::to_string(size) + " bytes; a .ptd needs at least " +
                   std::to_string(kRuntimeHeadBytes));
  }
  const uint8_t* h = data + kInsertedHeaderOffset;
  if (std::memcmp(h, kHeaderMagic, 4) != 0) {
    return Corrupt("no FH01 header at offset 8 (not a .ptd file)");
  }
  FlatTensorHeader out;
  out.length = LoadLE32(h + 4);
  if (out.length < kHeaderLength) {
    return Corrupt("FH01 header length = " + std::to_string(out.length) +
                   " is below the minimum of " + std::to_string(kHeaderLength));
  }
  out.flatbuffer_offset = HeaderField(h, 0);
  out.flatbuffer_size = HeaderField(h, 1);
  out.segment_base_offset = HeaderField(h, 2);
  out.segment_data_size = HeaderField(h, 3);
  return out;
}

}  // namespace etpack::ptd
