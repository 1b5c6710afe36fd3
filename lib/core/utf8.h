// utf8.h (internal) — UTF-8 validation, shared by the JSON parser and
// printer and the .pte checks (FlatBuffers strings must be UTF-8; the
// verifier does not check it).

#ifndef ETPACK_CORE_UTF8_H_
#define ETPACK_CORE_UTF8_H_

#include <cstddef>
#include <string_view>

namespace etpack {

// Length of the UTF-8 sequence at p (whose lead byte is >= 0x80) if it is
// a valid, shortest-form encoding of a Unicode scalar value within
// [p, end); 0 if not (overlong forms, surrogates, beyond U+10FFFF,
// truncated).
size_t Utf8SequenceLength(const unsigned char* p, const unsigned char* end);

// True when all of `s` is valid UTF-8.
bool IsValidUtf8(std::string_view s);

}  // namespace etpack

#endif  // ETPACK_CORE_UTF8_H_
