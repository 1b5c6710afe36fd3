// pte/edited_input.h (internal) — a program on its way to a PteInput: the
// sources taken out of it and the edits that will make its structure,
// applied by one copy (ApplyEdits).
//
// Why: the steps between a program read from a file and the planner —
// making it a writer input (PteFile::ToInput), taking data back inside
// (InternalizeData), moving tensors out (ExternalizeConstants,
// ExternalizeTensors, `share`) — each change a few fields. Each used to
// apply its change by copying the whole program; now each adds its edits
// here, so a program passing through any chain of them is copied once
// before the planner's own copy.

#ifndef ETPACK_PTE_EDITED_INPUT_H_
#define ETPACK_PTE_EDITED_INPUT_H_

#include <cstdint>
#include <string>

#include "etpack/pte.h"
#include "etpack/pte_file.h"
#include "etpack/status.h"
#include "program_etpack_generated.h"
#include "pte/program_edit.h"

namespace etpack {

struct EditedInput {
  // Every field but `program`, which ApplyEdits sets.
  PteInput input;
  // The program the edits are of: verified, `size` bytes in memory at
  // `bytes`, which `keep` holds alive (null: the PteFile it was read from,
  // which the caller keeps).
  const pte_fb::Program& program() const { return *pte_fb::GetProgram(bytes); }
  const uint8_t* bytes = nullptr;
  uint64_t size = 0;
  SourcePtr keep;
  // Starts errors: the file's name; empty for a caller's input.
  std::string name;
  // Each step appends its own; two steps never edit the same tensor.
  ProgramEdits edits;
};

// What PteFile::ToInput() gives, before the copy: the file's bulk bytes as
// sources of the file, and the edits that drop its inline bytes and point
// its delegates at them. Errors start with the file's name.
Result<EditedInput> EditedInputOf(const PteFile& pte);

// A caller's input, its program verified (or built from the tree form) once
// and no edit yet.
Result<EditedInput> EditedInputOf(PteInput input);

// The input with its program copied once, every edit applied; verified by
// construction. Errors start with `name`.
Result<PteInput> ApplyEdits(EditedInput edited);

}  // namespace etpack

#endif  // ETPACK_PTE_EDITED_INPUT_H_
