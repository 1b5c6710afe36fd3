// EditedInput (pte/edited_input.h): edits gathered by the steps between a
// program and the planner, applied by one copy. EditedInputOf(PteFile) is
// with the rest of a .pte's reading, in pte_file.cc.

#include "pte/edited_input.h"

#include <utility>

#include "pte/program_structure.h"

namespace etpack {

Result<EditedInput> EditedInputOf(PteInput input) {
  EditedInput edited;
  ETPACK_ASSIGN_OR_RETURN(edited.keep, std::move(input.program).TakeFlatbuffer());
  edited.input = std::move(input);
  edited.bytes = edited.keep->contiguous();
  edited.size = edited.keep->size();
  return edited;
}

Result<PteInput> ApplyEdits(EditedInput edited) {
  const ProgramEdits& e = edited.edits;
  if (edited.keep != nullptr && e.tensors.empty() && e.delegates.empty() && !e.drop_inline_bytes) {
    // Nothing to change: the verified bytes as they are, no copy.
    edited.input.program = VerifiedPrograms::Of(std::move(edited.keep));
    return std::move(edited.input);
  }
  Result<ProgramStructure> program = EditProgram(edited.bytes, edited.size, edited.edits);
  if (!program.ok()) {
    return edited.name.empty() ? program.status() : program.status().WithContext(edited.name);
  }
  edited.input.program = std::move(program).value();
  return std::move(edited.input);
}

}  // namespace etpack
