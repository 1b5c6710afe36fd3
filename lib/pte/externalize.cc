// The split of a program into one without constant bytes and the data
// that holds them (ExternalizeConstants, `repack --external-constants`), and
// the move of chosen tensors out (ExternalizeTensors, `share`): typed edits
// of the program (program_edit.h), the bytes' sources moved as they are.

#include "etpack/external_data.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/quote.h"
#include "flatbuffer/layout_of.h"
#include "flatbuffer/scalar_type.h"
#include "plan/segments.h"
#include "program_etpack_generated.h"
#include "pte/constant_keys.h"
#include "pte/edited_input.h"
#include "pte/external_refs.h"
#include "pte/program_checks.h"
#include "pte/program_edit.h"
#include "pte/program_steps.h"
#include "pte/program_structure.h"
#include "pte/program_walk.h"

namespace etpack {

namespace fb = etpack::pte_fb;

namespace {

// What differs between a tensor (`layout`, `bytes`) and the one (`first`,
// `first_bytes`) that already holds its key (LayoutDifferences' form, then
// the bytes): empty when they are the same tensor.
Result<std::string> Differences(const TensorLayout& first, const Source& first_bytes,
                                const TensorLayout& layout, const Source& bytes) {
  std::string text = LayoutDifferences(first, layout);
  std::string diff;
  if (first_bytes.size() != bytes.size()) {
    diff = "bytes: " + std::to_string(first_bytes.size()) + " there, " +
           std::to_string(bytes.size()) + " here";
  } else if (&first_bytes != &bytes) {
    ETPACK_ASSIGN_OR_RETURN(const std::optional<uint64_t> at, FirstDifference(first_bytes, bytes));
    if (at) {
      uint8_t there = 0, here = 0;
      ETPACK_RETURN_IF_ERROR(first_bytes.ReadAt(*at, &there, 1));
      ETPACK_RETURN_IF_ERROR(bytes.ReadAt(*at, &here, 1));
      diff = "bytes: " + std::to_string(bytes.size()) + " each, first different at byte " +
             std::to_string(*at) + " (" + std::to_string(there) + " there, " +
             std::to_string(here) + " here)";
    }
  }
  if (!diff.empty()) text += (text.empty() ? "" : "; ") + diff;
  return text;
}

}  // namespace

// The split itself, added to `edited` (whose program's tensors'
// data_buffer_idx index its input's constants); the data moved is the
// result. `name` starts errors. `chosen` null: every constant moves,
// numbered by key, and the constants go (ExternalizeConstants). Else only
// the tensors it names move, under its keys, keeping data_buffer_idx; a
// buffer no tensor inside reads any more is emptied (ExternalizeTensors).
Result<PtdInput> Externalize(const std::string& name, uint64_t alignment, const TensorKeys* chosen,
                             EditedInput* edited) {
  const fb::Program& prog = edited->program();
  PteInput& in = edited->input;
  const size_t nbuffers = in.constants.size();
  for (size_t i = 0; i < nbuffers; ++i) {
    // As the planner would refuse it.
    if (in.constants[i] == nullptr) {
      return InvalidArgument("constants[" + std::to_string(i) + "]: null source");
    }
  }
  std::vector<TensorEdit>& edits = edited->edits.tensors;

  ConstantKeys keys(prog);  // the one rule for constants' keys

  PtdInput ptd;
  // Tensors sharing a constant (one source) share its .ptd buffer.
  SourceIndex ptd_buffers(&ptd.buffers);
  struct KeyInfo {
    size_t entry;      // into ptd.entries, = the key's position
    std::string path;  // the first tensor that used it
  };
  std::map<std::string, KeyInfo> key_info;
  // With `chosen`: the buffers of tensors moved, and of tensors staying.
  std::set<uint32_t> moved_buffers, kept_buffers;
  size_t moved = 0;

  ETPACK_RETURN_IF_ERROR(
      ForEachTensor(prog, [&](uint32_t p, uint32_t v, const fb::Tensor& t) -> Status {
        if (!IsConstantTensor(t)) return Status::OK();
        const auto pick = chosen ? chosen->find({p, v}) : TensorKeys::const_iterator();
        if (chosen && pick == chosen->end()) {
          kept_buffers.insert(t.data_buffer_idx());
          return Status::OK();
        }
        const std::string path = TensorPath(p, v);
        const std::string what = name + ": " + path;
        ETPACK_ASSIGN_OR_RETURN(TensorLayout layout, LayoutOf(t, what));

        const std::string key = chosen ? pick->second : keys.Of(p, v, t);
        if (chosen) {
          moved_buffers.insert(t.data_buffer_idx());
          ++moved;
        }

        const uint32_t idx = t.data_buffer_idx();
        if (idx >= nbuffers) {
          return Corrupt(what + ".data_buffer_idx = " + std::to_string(idx) +
                         " is out of range: constant_buffer has " + std::to_string(nbuffers) +
                         " entries");
        }
        auto it = key_info.find(key);
        if (it == key_info.end()) {
          it = key_info.emplace(key, KeyInfo{ptd.entries.size(), path}).first;
          ptd.entries.push_back({key, ptd_buffers.Add(in.constants[idx]), alignment, layout});
        } else {
          // One key names one tensor's data: a second tensor may use it only
          // for the same layout and the same bytes (from any buffer).
          const PtdEntry& e = ptd.entries[it->second.entry];
          ETPACK_ASSIGN_OR_RETURN(
              const std::string differences,
              Differences(*e.layout, *ptd.buffers[e.buffer_index], layout, *in.constants[idx]));
          if (!differences.empty()) {
            return InvalidArgument(what + ": fully_qualified_name " + Quote(key) +
                                   " is also the name of " + it->second.path +
                                   ", a different tensor (" + differences +
                                   "); a .ptd key holds one tensor");
          }
        }

        TensorEdit edit;
        edit.plan = p;
        edit.value = v;
        edit.info = TensorEdit::Info::kSet;
        edit.location = fb::TensorDataLocation::EXTERNAL;
        edit.fully_qualified_name = key;
        // ExternalizeConstants numbers the moved tensors by key, as the
        // exporter numbers external constants; share keeps the index.
        if (!chosen) edit.data_buffer_idx = static_cast<uint32_t>(it->second.entry);
        edits.push_back(std::move(edit));
        return Status::OK();
      }));

  if (chosen) {
    if (moved != chosen->size()) {
      for (const auto& [pv, key] : *chosen) {
        const auto* values = pv.first < prog.execution_plan()->size()
                                 ? prog.execution_plan()->Get(pv.first)->values()
                                 : nullptr;
        const auto* t = values && pv.second < values->size()
                            ? values->Get(pv.second)->val_as_Tensor()
                            : nullptr;
        if (t == nullptr || !IsConstantTensor(*t)) {
          return InvalidArgument(name + ": " + TensorPath(pv.first, pv.second) +
                                 " is not a constant tensor; it cannot move under key " +
                                 Quote(key));
        }
      }
    }
    for (const uint32_t idx : moved_buffers) {
      if (kept_buffers.count(idx) == 0) in.constants[idx] = OwnedSource({});
    }
  } else if (nbuffers > 0) {
    in.constants = {OwnedSource({})};
  }
  return ptd;
}

namespace {

// `edited` split (Externalize) and copied once.
Result<std::pair<PteInput, PtdInput>> Split(EditedInput edited, const std::string& name,
                                            uint64_t alignment, const TensorKeys* chosen) {
  ETPACK_ASSIGN_OR_RETURN(PtdInput ptd, Externalize(name, alignment, chosen, &edited));
  ETPACK_ASSIGN_OR_RETURN(PteInput in, ApplyEdits(std::move(edited)));
  return std::make_pair(std::move(in), std::move(ptd));
}

}  // namespace

Result<std::pair<PteInput, PtdInput>> ExternalizeConstants(const PteFile& pte, uint64_t alignment) {
  ETPACK_RETURN_IF_ERROR(CheckAlignment(alignment, "external constant alignment"));
  ETPACK_ASSIGN_OR_RETURN(EditedInput edited, EditedInputOf(pte));
  return Split(std::move(edited), pte.name(), alignment, nullptr);
}

Result<PteInput> ExternalizeTensors(const PteFile& pte, const TensorKeys& keys) {
  ETPACK_ASSIGN_OR_RETURN(EditedInput edited, EditedInputOf(pte));
  ETPACK_ASSIGN_OR_RETURN(auto split, Split(std::move(edited), pte.name(), 1, &keys));
  return std::move(split.first);
}

Result<std::pair<PteInput, PtdInput>> ExternalizeConstants(PteInput input, uint64_t alignment) {
  ETPACK_RETURN_IF_ERROR(CheckAlignment(alignment, "external constant alignment"));
  // What PlanPte would refuse of this program it refuses of the thin one
  // alike, but for the constants, which the split checks itself.
  ETPACK_ASSIGN_OR_RETURN(EditedInput edited, EditedInputOf(std::move(input)));
  return Split(std::move(edited), "program", alignment, nullptr);
}

}  // namespace etpack
