// pte/program_edit.h (internal) — typed edits of a verified Program
// flatbuffer: where each tensor's data is (data_buffer_idx, its
// extra_tensor_info's location and name) and each delegate's processed
// reference, applied by one copy of the program (flatbuffer/table_copy.h).
// How a program read from a file is re-pointed (PteFile::ToInput) and how
// constants move out to, or back from, a .ptd without a JSON tree.

#ifndef ETPACK_PTE_PROGRAM_EDIT_H_
#define ETPACK_PTE_PROGRAM_EDIT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "etpack/pte.h"
#include "etpack/status.h"
#include "flatbuffer/table_builder.h"
#include "program_etpack_generated.h"

namespace etpack {

// The data fields of the tensor execution_plan[plan].values[value].
struct TensorEdit {
  uint32_t plan = 0;
  uint32_t value = 0;
  // Unset: kept.
  std::optional<uint32_t> data_buffer_idx;
  enum class Info : uint8_t {
    kKeep,  // extra_tensor_info as it is
    kSet,   // its location and fully_qualified_name set to those below (an
            // empty name: left out), its other fields kept; made with
            // default fields when missing
    kDrop,  // left out
  };
  Info info = Info::kKeep;
  pte_fb::TensorDataLocation location = pte_fb::TensorDataLocation::SEGMENT;
  std::string fully_qualified_name;
};

// execution_plan[plan].delegates[delegate].processed becomes {location, index}.
struct DelegateEdit {
  uint32_t plan = 0;
  uint32_t delegate = 0;
  pte_fb::DataLocation location = pte_fb::DataLocation::INLINE;
  uint32_t index = 0;
};

struct ProgramEdits {
  std::vector<TensorEdit> tensors;      // at most one per value
  std::vector<DelegateEdit> delegates;  // at most one per delegate
  // Buffer.storage and BackendDelegateInlineData.data left out: the bytes
  // travel beside the program (PteInput::constants, ::delegates), where the
  // planner wants them.
  bool drop_inline_bytes = false;
};

// The program `verified` (`size` bytes, a Program flatbuffer that passed
// the verifier) with `edits` applied, in flatbuffer form, verified (the
// copy is valid by construction). Errors name the tensor or delegate an
// edit names that is not one ("execution_plan[0].values[3]: ..."), or an
// edit given twice; `root_path` starts the copy's own errors.
// REQUIRES: `verified` passed pte_fb::VerifyProgramBuffer.
Result<ProgramStructure> EditProgram(const uint8_t* verified, uint64_t size,
                                     const ProgramEdits& edits,
                                     const std::string& root_path = "program");

// A BackendDelegateDataReference table {location, index}, built as every
// input of the builder builds one (for a CopyEdits).
Result<fbs::uoffset_t> DataReferenceTable(fbs::TableBuilder& b, pte_fb::DataLocation location,
                                          uint32_t index);

}  // namespace etpack

#endif  // ETPACK_PTE_PROGRAM_EDIT_H_
