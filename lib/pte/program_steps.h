// pte/program_steps.h (internal) — the moves of data into and out of a
// program as steps of one EditedInput (pte/edited_input.h), so that a
// caller chaining them (`share`: a program's own .ptd data taken inside and
// its shared tensors moved out) copies the program once. The public calls
// of etpack/external_data.h are each one step and ApplyEdits.

#ifndef ETPACK_PTE_PROGRAM_STEPS_H_
#define ETPACK_PTE_PROGRAM_STEPS_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "etpack/external_data.h"
#include "etpack/ptd_file.h"
#include "etpack/pte_file.h"
#include "pte/edited_input.h"

namespace etpack {

// InternalizeData's step: `thin`'s EXTERNAL tensors whose keys `data`
// holds (those in `only`, when given) brought inside, and its blobs.
// REQUIRES: `edited` is EditedInputOf(thin), with no step's edits yet that
// touch thin's EXTERNAL tensors.
Status Internalize(const PteFile& thin, const std::vector<const PtdFile*>& data,
                   InternalizeStats* stats, const std::set<std::string>* only, EditedInput* edited);

// ExternalizeConstants' step (`chosen` null: every constant, keyed as the
// exporter keys them, each at `alignment`) or ExternalizeTensors' (the
// tensors `chosen` names, under its keys): the moved data is the result.
// Tensors are those of edited->program(), as it was read. `name` starts
// errors.
Result<PtdInput> Externalize(const std::string& name, uint64_t alignment, const TensorKeys* chosen,
                             EditedInput* edited);

}  // namespace etpack

#endif  // ETPACK_PTE_PROGRAM_STEPS_H_
