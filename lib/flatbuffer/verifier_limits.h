// flatbuffer/verifier_limits.h (internal) — the limits of the FlatBuffers
// verifier that readers of etpack's files run, and the one rule that keeps
// writers inside them.
//
// flatbuffers::Verifier refuses a buffer with more than 1,000,000 tables or
// tables nested deeper than 64 unless its caller raises the limits. The
// ExecuTorch runtime verifies a program with the defaults, and etpack's own
// readers (`verify`, `inspect`, load_ptd, ...) verify every .pte, .ptd and
// .bpte flatbuffer with them, so a file over a limit is one nothing loads:
// planners count their tables with CheckTableCount before building, and the
// readers say which limit a file exceeds instead of calling it corrupt.

#ifndef ETPACK_FLATBUFFER_VERIFIER_LIMITS_H_
#define ETPACK_FLATBUFFER_VERIFIER_LIMITS_H_

#include <flatbuffers/verifier.h>

#include <cstdint>
#include <string>

#include "etpack/status.h"
#include "flatbuffer/schema_info.h"

namespace etpack {

// flatbuffers::Verifier::Options' defaults.
inline constexpr uint64_t kVerifierMaxTables = 1000000;
inline constexpr uint64_t kVerifierMaxDepth = 64;

// OK when a flatbuffer of `tables` tables fits the verifier; otherwise
// kOutOfRange "WHAT need(s) N flatbuffer tables; the runtime's verifier
// accepts at most 1000000". `what` names what costs the tables
// ("600000 entries").
Status CheckTableCount(uint64_t tables, const std::string& what);

// Tables of a flatbuffer and the deepest nesting of them, counted by walking
// it with the schema. REQUIRES: the buffer passed the schema's verifier
// (with any limits).
struct TableCount {
  uint64_t tables = 0;
  uint64_t depth = 0;
};
TableCount CountTables(SchemaId schema, const uint8_t* data, uint64_t size);

// Runs `verify` (a generated VerifyXBuffer) over [data, data + size) with
// the default limits. When it fails, tells a buffer that is only too large
// for them (it passes with the limits lifted) from a broken one: the first
// is kCorrupt "NAME (bytes [0, size)) has N tables; the verifier of the
// runtime and of etpack's readers accepts at most 1000000" (or the same of
// the depth), the second kCorrupt "NAME (bytes [0, size)) fails
// verification: `broken`".
template <typename Verify>
Status VerifyFlatbuffer(SchemaId schema, Verify verify, const uint8_t* data, uint64_t size,
                        const std::string& name, const std::string& broken);

// The error of VerifyFlatbuffer for a buffer that failed with the default
// limits (out of line).
Status VerifyFailure(SchemaId schema, bool passes_lifted, const uint8_t* data, uint64_t size,
                     const std::string& name, const std::string& broken);

template <typename Verify>
Status VerifyFlatbuffer(SchemaId schema, Verify verify, const uint8_t* data, uint64_t size,
                        const std::string& name, const std::string& broken) {
  flatbuffers::Verifier verifier(data, static_cast<size_t>(size));
  if (verify(verifier)) return Status::OK();
  flatbuffers::Verifier::Options lifted;
  lifted.max_tables = ~flatbuffers::uoffset_t{0};
  lifted.max_depth = ~flatbuffers::uoffset_t{0};
  flatbuffers::Verifier again(data, static_cast<size_t>(size), lifted);
  return VerifyFailure(schema, verify(again), data, size, name, broken);
}

}  // namespace etpack

#endif  // ETPACK_FLATBUFFER_VERIFIER_LIMITS_H_
