#include "flatbuffer/scalar_type.h"

#include "scalar_type_etpack_generated.h"

namespace etpack {

uint32_t ScalarTypeElementSize(int code) {
  // Indexed by the ScalarType code; 0 marks reserved codes (complex types
  // 8..10 and sub-byte bit types 18..21) whose size etpack cannot vouch for.
  static constexpr uint8_t kSizes[30] = {
      1, 1, 2, 4, 8, 2, 4, 8,  // BYTE CHAR SHORT INT LONG HALF FLOAT DOUBLE
      0, 0, 0,                 // complex (reserved)
      1, 1, 1, 4, 2, 1, 1,     // BOOL QINT8 QUINT8 QINT32 BFLOAT16 QUINT4X2 QUINT2X4
      0, 0, 0, 0,              // bits1x8 .. bits8 (reserved)
      2, 1, 1, 1, 1,           // BITS16 FLOAT8 x4
      2, 4, 8};                // UINT16 UINT32 UINT64
  if (code < 0 || code >= 30) return 0;
  return kSizes[code];
}

std::string ScalarTypeName(int code) {
  using etpack::pte_fb::ScalarType;
  const char* name = code >= 0 && code <= static_cast<int>(ScalarType::MAX)
                         ? etpack::pte_fb::EnumNameScalarType(static_cast<ScalarType>(code))
                         : "";
  return *name ? name : "scalar_type " + std::to_string(code);
}

}  // namespace etpack
