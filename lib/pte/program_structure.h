// pte/program_structure.h (internal) — the fact "this Program flatbuffer
// is valid" that a ProgramStructure carries (etpack/pte.h): set where the
// library builds the bytes, read where it would verify them again.

#ifndef ETPACK_PTE_PROGRAM_STRUCTURE_H_
#define ETPACK_PTE_PROGRAM_STRUCTURE_H_

#include "etpack/pte.h"
#include "etpack/source.h"
#include "etpack/status.h"
#include "program_etpack_generated.h"

namespace etpack {

struct VerifiedPrograms {
  // A flatbuffer the library built (valid by construction) or verified.
  // REQUIRES: bytes->contiguous() != nullptr, and the bytes pass
  // pte_fb::VerifyProgramBuffer.
  static ProgramStructure Of(SourcePtr bytes);
  static bool IsVerified(const ProgramStructure& p) { return p.verified_; }
  // The program's flatbuffer, valid: verified unless the library built it
  // (a tree is built, which needs no verifying). For a walk; `keep` holds
  // the bytes the result points into.
  static Result<const pte_fb::Program*> Verify(const ProgramStructure& p, SourcePtr* keep);
};

}  // namespace etpack

#endif  // ETPACK_PTE_PROGRAM_STRUCTURE_H_
