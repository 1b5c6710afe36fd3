// program_checks.h (internal) — everything a .pte must satisfy to load and
// to run any of its methods (docs/formats.md §2), checked in one place.
//
// The reader runs CheckPte on every file it opens (so `verify` and
// `inspect`); the planner runs it on the head it has just built, before a
// byte is written (so `pack` and `repack` never write what `verify`
// refuses). A new rule goes here and holds for both.

#ifndef ETPACK_PTE_PROGRAM_CHECKS_H_
#define ETPACK_PTE_PROGRAM_CHECKS_H_

#include <cstdint>

#include "etpack/pte.h"
#include "etpack/pte_file.h"  // ExtendedHeader
#include "etpack/status.h"

namespace etpack {

// What a .pte that passed CheckPte holds.
struct CheckedPte {
  ExtendedHeader header;
  const pte_fb::Program* program = nullptr;  // the root, inside the head
  // The segment table with the role each segment plays; a segment's
  // alignment is the largest power of two (up to 65536) dividing its
  // absolute file offset.
  PteSegmentMap layout;
};

// Checks a .pte of `file_size` bytes whose first `head_size` bytes are at
// `head`: the identifier, the extended header against the file size, the
// FlatBuffers verifier over [0, program_size), then the program as the
// runtime uses it when loading and initialising every method — tensors
// (scalar type, sizes, dim_order, rank, byte size), value indices of
// inputs, outputs, lists and instructions, operator and delegate indices,
// strings valid UTF-8, and the segment table with every constant, mutable
// and delegate reference and named-data key inside it. Only the head is
// read; segment bytes are never needed. Errors are kCorrupt and name the
// field path (`execution_plan[0].inputs[1]`) and the value.
// REQUIRES: head_size >= min(file_size, 64).
Result<CheckedPte> CheckPte(const uint8_t* head, uint64_t head_size, uint64_t file_size);

}  // namespace etpack

#endif  // ETPACK_PTE_PROGRAM_CHECKS_H_
