// The checks go beyond what the runtime does at load (it trusts the segment
// table until a method touches it, and checks a method's indices only when
// the method is initialised): a file that passes loads without out-of-bounds
// reads whatever method is executed.
//
// Cost stays linear in the head's size even when a crafted file shares one
// table among many entries (FlatBuffers references form a DAG): a shared
// plan is checked once, and so is a shared list or call with arguments.

#include "pte/program_checks.h"
#include "etpack/plan.h"
#include "etpack/tensor_layout.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "core/utf8.h"
#include "flatbuffer/scalar_type.h"
#include "flatbuffer/unaligned_vector.h"
#include "flatbuffer/verifier_limits.h"
#include "plan/named_store.h"
#include "plan/segment_table.h"
#include "program_etpack_generated.h"
#include "pte/program_walk.h"
#include "pte/pte_format.h"
#include "pte/pte_header.h"

namespace etpack {

namespace fb = etpack::pte_fb;

namespace {

std::string Printable4(const uint8_t* p) {
  std::string s;
  for (int i = 0; i < 4; ++i) {
    if (p[i] >= 0x20 && p[i] < 0x7f) {
      s += static_cast<char>(p[i]);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", p[i]);
      s += buf;
    }
  }
  return s;
}

// A string field: present when `required`, and valid UTF-8 (FlatBuffers
// strings are UTF-8 by definition; the verifier does not look).
template <typename PathFn>
Status CheckString(const flatbuffers::String* s, bool required, PathFn path) {
  if (s == nullptr) return required ? Corrupt(path() + " is missing") : Status::OK();
  if (!IsValidUtf8(std::string_view(s->c_str(), s->size()))) {
    std::string hex;
    for (size_t i = 0; i < s->size() && i < 16; ++i) {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%02x", static_cast<unsigned char>(s->c_str()[i]));
      hex += buf;
    }
    return Corrupt(path() + " is not valid UTF-8 (bytes " + hex + (s->size() > 16 ? "..." : "") +
                   ")");
  }
  return Status::OK();
}

// One method, as the runtime validates the program and initialises it.
class MethodChecker {
 public:
  MethodChecker(const fb::ExecutionPlan& plan, uint32_t index)
      : plan_(plan), index_(index), path_("execution_plan[" + std::to_string(index) + "]") {}

  Status Check() {
    ETPACK_RETURN_IF_ERROR(CheckString(plan_.name(), true, [&] { return path_ + ".name"; }));
    if (plan_.values() == nullptr) return Corrupt(path_ + ".values is missing");
    nvalues_ = plan_.values()->size();
    is_input_.assign(nvalues_, false);
    ETPACK_RETURN_IF_ERROR(CheckIndexList(plan_.inputs(), "inputs", true));
    for (int32_t i : *plan_.inputs()) is_input_[i] = true;
    ETPACK_RETURN_IF_ERROR(CheckIndexList(plan_.outputs(), "outputs", true));
    ETPACK_RETURN_IF_ERROR(CheckValues());
    ETPACK_RETURN_IF_ERROR(CheckChains());
    ETPACK_RETURN_IF_ERROR(CheckOperators());
    ETPACK_RETURN_IF_ERROR(CheckDelegates());
    if (const auto* meta = plan_.container_meta_type()) {
      ETPACK_RETURN_IF_ERROR(CheckString(meta->encoded_inp_str(), false, [&] {
        return path_ + ".container_meta_type.encoded_inp_str";
      }));
      ETPACK_RETURN_IF_ERROR(CheckString(meta->encoded_out_str(), false, [&] {
        return path_ + ".container_meta_type.encoded_out_str";
      }));
    }
    return Status::OK();
  }

 private:
  // A value index: in [0, values).
  template <typename PathFn>
  Status CheckIndex(int64_t index, PathFn path) const {
    if (index >= 0 && static_cast<uint64_t>(index) < nvalues_) return Status::OK();
    return Corrupt(path() + " = " + std::to_string(index) + " is out of range: " + path_ + " has " +
                   std::to_string(nvalues_) + " values");
  }

  // A value index that must name a Tensor value.
  template <typename PathFn>
  Status CheckTensorIndex(int64_t index, PathFn path) const {
    ETPACK_RETURN_IF_ERROR(CheckIndex(index, path));
    if (plan_.values()->Get(static_cast<uint32_t>(index))->val_type() == fb::KernelTypes::Tensor) {
      return Status::OK();
    }
    return Corrupt(path() + " = " + std::to_string(index) + " names a value that is not a Tensor");
  }

  // A vector of value indices `field` of the plan (or of `owner`).
  Status CheckIndexList(const flatbuffers::Vector<int32_t>* list, const std::string& field,
                        bool required) const {
    if (list == nullptr) {
      return required ? Corrupt(path_ + "." + field + " is missing") : Status::OK();
    }
    for (uint32_t i = 0; i < list->size(); ++i) {
      ETPACK_RETURN_IF_ERROR(CheckIndex(
          list->Get(i), [&] { return path_ + "." + field + "[" + std::to_string(i) + "]"; }));
    }
    return Status::OK();
  }

  // True the first time `table` is seen: a shared table is checked once.
  bool FirstVisit(const void* table) { return visited_.insert(table).second; }

  Status CheckValues() {
    for (uint32_t v = 0; v < nvalues_; ++v) {
      const auto* value = plan_.values()->Get(v);
      auto vpath = [&] { return path_ + ".values[" + std::to_string(v) + "]"; };
      const int type = static_cast<int>(value->val_type());
      if (type < 1 || type > static_cast<int>(fb::KernelTypes::MAX) || value->val() == nullptr) {
        return Corrupt(vpath() + ".val_type = " + std::to_string(type) +
                       (value->val() == nullptr ? " with no value" : " is not a value type"));
      }
      switch (value->val_type()) {
        case fb::KernelTypes::Tensor:
          // Not memoised: whether v is an input matters, and rank is bounded.
          ETPACK_RETURN_IF_ERROR(CheckTensor(*value->val_as_Tensor(), v));
          break;
        case fb::KernelTypes::String:
          ETPACK_RETURN_IF_ERROR(CheckString(value->val_as_String()->string_val(), true,
                                             [&] { return vpath() + ".val.string_val"; }));
          break;
        case fb::KernelTypes::IntList: {
          if (!FirstVisit(value->val())) break;
          const auto* items = value->val_as_IntList()->items();
          if (items == nullptr) return Corrupt(vpath() + ".val.items is missing");
          for (uint32_t i = 0; i < items->size(); ++i) {
            ETPACK_RETURN_IF_ERROR(CheckIndex(UnalignedAt(*items, i), [&] {
              return vpath() + ".val.items[" + std::to_string(i) + "]";
            }));
          }
          break;
        }
        case fb::KernelTypes::TensorList:
        case fb::KernelTypes::OptionalTensorList: {
          if (!FirstVisit(value->val())) break;
          const bool optional = value->val_type() == fb::KernelTypes::OptionalTensorList;
          const auto* items = optional ? value->val_as_OptionalTensorList()->items()
                                       : value->val_as_TensorList()->items();
          if (items == nullptr) return Corrupt(vpath() + ".val.items is missing");
          for (uint32_t i = 0; i < items->size(); ++i) {
            if (optional && items->Get(i) == -1) continue;  // None
            ETPACK_RETURN_IF_ERROR(CheckTensorIndex(
                items->Get(i), [&] { return vpath() + ".val.items[" + std::to_string(i) + "]"; }));
          }
          break;
        }
        default: break;
      }
    }
    return Status::OK();
  }

  Status CheckTensor(const fb::Tensor& t, uint32_t v) const {
    auto path = [&] { return TensorPath(index_, v); };
    const int st = static_cast<int>(t.scalar_type());
    if (st < 0 || st > static_cast<int>(fb::ScalarType::MAX)) {
      return Corrupt(path() + ".scalar_type = " + std::to_string(st) + " is not a scalar type");
    }
    const auto* sizes = t.sizes();
    if (sizes == nullptr) return Corrupt(path() + ".sizes is missing");
    const uint32_t rank = sizes->size();
    // The path is built only for a rank CheckRank refuses.
    if (rank > kMaxTensorRank) return Corrupt(CheckRank(rank, path() + ".sizes").message());
    const auto* dim_order = t.dim_order();
    if (dim_order == nullptr || dim_order->size() != rank) {
      return Corrupt(path() + ".dim_order must have one entry per dimension (" +
                     std::to_string(rank) + ")");
    }
    uint32_t seen = 0;
    for (uint32_t d = 0; d < rank; ++d) {
      const uint32_t dim = dim_order->Get(d);
      if (dim >= rank || (seen & (1u << dim)) != 0) {
        return Corrupt(path() + ".dim_order[" + std::to_string(d) + "] = " + std::to_string(dim) +
                       ": dim_order must be a permutation of 0.." + std::to_string(rank - 1));
      }
      seen |= 1u << dim;
    }
    for (uint32_t d = 0; d < rank; ++d) {
      if (sizes->Get(d) < 0) {
        return Corrupt(path() + ".sizes[" + std::to_string(d) +
                       "] = " + std::to_string(sizes->Get(d)) + " is negative");
      }
    }
    // The runtime computes every tensor's byte size but a dynamic-shape
    // input's (its sizes are bounds); reserved types have no size.
    const bool dynamic_input =
        is_input_[v] && t.shape_dynamism() != fb::TensorShapeDynamism::STATIC;
    if (!dynamic_input && ScalarTypeElementSize(st) != 0) {
      ETPACK_RETURN_IF_ERROR(TensorNbytes(st, *sizes, path).status());
    }
    if (const auto* extra = t.extra_tensor_info()) {
      ETPACK_RETURN_IF_ERROR(CheckString(extra->fully_qualified_name(), false, [&] {
        return path() + ".extra_tensor_info.fully_qualified_name";
      }));
    }
    return Status::OK();
  }

  Status CheckChains() {
    const auto* chains = plan_.chains();
    if (chains == nullptr || chains->size() == 0) {
      return Corrupt(path_ + ".chains is " + (chains == nullptr ? "missing" : "empty") +
                     ": a method needs at least one chain");
    }
    const uint32_t noperators = plan_.operators() ? plan_.operators()->size() : 0;
    const uint32_t ndelegates = plan_.delegates() ? plan_.delegates()->size() : 0;
    for (uint32_t c = 0; c < chains->size(); ++c) {
      const auto* chain = chains->Get(c);
      const std::string cpath = "chains[" + std::to_string(c) + "]";
      ETPACK_RETURN_IF_ERROR(CheckIndexList(chain->inputs(), cpath + ".inputs", false));
      ETPACK_RETURN_IF_ERROR(CheckIndexList(chain->outputs(), cpath + ".outputs", false));
      const auto* instructions = chain->instructions();
      if (instructions == nullptr) return Corrupt(path_ + "." + cpath + ".instructions is missing");
      for (uint32_t i = 0; i < instructions->size(); ++i) {
        const auto* instr = instructions->Get(i);
        auto ipath = [&] {
          return path_ + "." + cpath + ".instructions[" + std::to_string(i) + "]";
        };
        auto field = [&](const char* name) { return [&, name] { return ipath() + name; }; };
        const int type = static_cast<int>(instr->instr_args_type());
        if (type < 1 || type > static_cast<int>(fb::InstructionArguments::MAX) ||
            instr->instr_args() == nullptr) {
          return Corrupt(ipath() + ".instr_args_type = " + std::to_string(type) +
                         (instr->instr_args() == nullptr ? " with no arguments"
                                                         : " is not an instruction type"));
        }
        switch (instr->instr_args_type()) {
          case fb::InstructionArguments::KernelCall: {
            if (!FirstVisit(instr->instr_args())) break;
            const auto* call = instr->instr_args_as_KernelCall();
            if (call->op_index() < 0 || static_cast<uint32_t>(call->op_index()) >= noperators) {
              return Corrupt(ipath() + ".instr_args.op_index = " +
                             std::to_string(call->op_index()) + " is out of range: " + path_ +
                             " has " + std::to_string(noperators) + " operators");
            }
            ETPACK_RETURN_IF_ERROR(CheckArgs(call->args(), ipath));
            break;
          }
          case fb::InstructionArguments::DelegateCall: {
            if (!FirstVisit(instr->instr_args())) break;
            const auto* call = instr->instr_args_as_DelegateCall();
            if (call->delegate_index() < 0 ||
                static_cast<uint32_t>(call->delegate_index()) >= ndelegates) {
              return Corrupt(ipath() + ".instr_args.delegate_index = " +
                             std::to_string(call->delegate_index()) + " is out of range: " + path_ +
                             " has " + std::to_string(ndelegates) + " delegates");
            }
            ETPACK_RETURN_IF_ERROR(CheckArgs(call->args(), ipath));
            break;
          }
          case fb::InstructionArguments::MoveCall: {
            const auto* call = instr->instr_args_as_MoveCall();
            ETPACK_RETURN_IF_ERROR(CheckIndex(call->move_from(), field(".instr_args.move_from")));
            ETPACK_RETURN_IF_ERROR(CheckIndex(call->move_to(), field(".instr_args.move_to")));
            break;
          }
          case fb::InstructionArguments::JumpFalseCall: {
            const auto* call = instr->instr_args_as_JumpFalseCall();
            ETPACK_RETURN_IF_ERROR(
                CheckIndex(call->cond_value_index(), field(".instr_args.cond_value_index")));
            const int32_t to = call->destination_instruction();
            if (to < 0 || static_cast<uint32_t>(to) >= instructions->size()) {
              return Corrupt(ipath() + ".instr_args.destination_instruction = " +
                             std::to_string(to) + " is out of range: " + path_ + "." + cpath +
                             " has " + std::to_string(instructions->size()) + " instructions");
            }
            break;
          }
          case fb::InstructionArguments::FreeCall:
            ETPACK_RETURN_IF_ERROR(CheckIndex(instr->instr_args_as_FreeCall()->value_index(),
                                              field(".instr_args.value_index")));
            break;
          default: break;
        }
      }
      if (const auto* stack = chain->stacktrace()) {
        ETPACK_RETURN_IF_ERROR(CheckStacktrace(*stack, cpath));
      }
    }
    return Status::OK();
  }

  template <typename PathFn>
  Status CheckArgs(const flatbuffers::Vector<int32_t>* args, PathFn ipath) const {
    if (args == nullptr) return Corrupt(ipath() + ".instr_args.args is missing");
    for (uint32_t a = 0; a < args->size(); ++a) {
      ETPACK_RETURN_IF_ERROR(CheckIndex(
          args->Get(a), [&] { return ipath() + ".instr_args.args[" + std::to_string(a) + "]"; }));
    }
    return Status::OK();
  }

  Status CheckStacktrace(const flatbuffers::Vector<flatbuffers::Offset<fb::FrameList>>& stack,
                         const std::string& cpath) {
    for (uint32_t s = 0; s < stack.size(); ++s) {
      const auto* items = stack.Get(s)->items();
      if (items == nullptr || !FirstVisit(items)) continue;
      for (uint32_t f = 0; f < items->size(); ++f) {
        const auto* frame = items->Get(f);
        auto fpath = [&](const char* name) {
          return [&, name] {
            return path_ + "." + cpath + ".stacktrace[" + std::to_string(s) + "].items[" +
                   std::to_string(f) + "]." + name;
          };
        };
        ETPACK_RETURN_IF_ERROR(CheckString(frame->filename(), false, fpath("filename")));
        ETPACK_RETURN_IF_ERROR(CheckString(frame->name(), false, fpath("name")));
        ETPACK_RETURN_IF_ERROR(CheckString(frame->context(), false, fpath("context")));
      }
    }
    return Status::OK();
  }

  Status CheckOperators() const {
    const auto* operators = plan_.operators();
    if (operators == nullptr) return Status::OK();
    for (uint32_t o = 0; o < operators->size(); ++o) {
      const auto* op = operators->Get(o);
      auto opath = [&](const char* name) {
        return [&, name] { return path_ + ".operators[" + std::to_string(o) + "]." + name; };
      };
      ETPACK_RETURN_IF_ERROR(CheckString(op->name(), true, opath("name")));
      ETPACK_RETURN_IF_ERROR(CheckString(op->overload(), false, opath("overload")));
    }
    return Status::OK();
  }

  Status CheckDelegates() const {
    const auto* delegates = plan_.delegates();
    if (delegates == nullptr) {
      return Corrupt(path_ + ".delegates is missing (the runtime needs it, even empty)");
    }
    for (uint32_t d = 0; d < delegates->size(); ++d) {
      const auto* delegate = delegates->Get(d);
      const std::string dpath = path_ + ".delegates[" + std::to_string(d) + "]";
      ETPACK_RETURN_IF_ERROR(CheckString(delegate->id(), true, [&] { return dpath + ".id"; }));
      const auto* ref = delegate->processed();
      if (ref == nullptr) return Corrupt(dpath + ".processed is missing");
      const int loc = static_cast<int>(ref->location());
      if (loc != pte::kLocationInline && loc != pte::kLocationSegment) {
        return Corrupt(dpath + ".processed.location = " + std::to_string(loc) +
                       " is neither INLINE (0) nor SEGMENT (1)");
      }
      const auto* specs = delegate->compile_specs();
      if (specs == nullptr) continue;
      for (uint32_t k = 0; k < specs->size(); ++k) {
        const auto* spec = specs->Get(k);
        const std::string kpath = dpath + ".compile_specs[" + std::to_string(k) + "]";
        ETPACK_RETURN_IF_ERROR(CheckString(spec->key(), true, [&] { return kpath + ".key"; }));
        if (spec->value() == nullptr) return Corrupt(kpath + ".value is missing");
      }
    }
    return Status::OK();
  }

  const fb::ExecutionPlan& plan_;
  const uint32_t index_;
  const std::string path_;
  uint32_t nvalues_ = 0;
  std::vector<bool> is_input_;
  std::unordered_set<const void*> visited_;
};

Status CheckMethods(const fb::Program& prog) {
  const auto* plans = prog.execution_plan();
  if (plans == nullptr) return Corrupt("execution_plan is missing");
  std::unordered_set<const fb::ExecutionPlan*> checked;
  for (uint32_t p = 0; p < plans->size(); ++p) {
    const fb::ExecutionPlan* plan = plans->Get(p);
    if (!checked.insert(plan).second) continue;
    ETPACK_RETURN_IF_ERROR(MethodChecker(*plan, p).Check());
  }
  return Status::OK();
}

// The segment table and every reference into it. Fills layout->segments.
class SegmentChecker {
 public:
  SegmentChecker(const fb::Program& prog, uint64_t base, PteSegmentMap* layout)
      : prog_(prog), base_(base), layout_(*layout) {
    segments_ = prog.segments();
    nseg_ = segments_ ? segments_->size() : 0;
  }

  Status Check(uint64_t segment_data_size) {
    ETPACK_RETURN_IF_ERROR(CheckSegmentTable(segments_, base_, segment_data_size));
    for (uint32_t i = 0; i < nseg_; ++i) {
      const auto* s = segments_->Get(i);
      layout_.segments.push_back({SegmentRole::kUnreferenced, s->offset(), s->size(),
                                  OffsetAlignment(base_ + s->offset())});
    }
    // The base is where segment_alignment put it, any positive multiple
    // (the reference writes 1272 for 12): what a segment achieves is in its
    // alignment above, reported, never a reason to refuse the file.
    ETPACK_RETURN_IF_ERROR(CheckConstants());
    ETPACK_RETURN_IF_ERROR(CheckMutable());
    ETPACK_RETURN_IF_ERROR(CheckDelegateData());
    return CheckNamedData();
  }

 private:
  Status CheckSegmentIndex(uint64_t index, const std::string& what) const {
    if (index >= nseg_) {
      return Corrupt(what + " = " + std::to_string(index) +
                     " is out of range: " + std::to_string(nseg_) + " segments");
    }
    return Status::OK();
  }

  // A sub-buffer table: in range, offsets inside the segment, and every
  // tensor that uses it fits and is aligned for its element type.
  template <typename Select>
  Status CheckSubsegments(const fb::SubsegmentOffsets& sub, const std::string& what,
                          SegmentRole role, Select select) {
    ETPACK_RETURN_IF_ERROR(CheckSegmentIndex(sub.segment_index(), what + ".segment_index"));
    if (sub.offsets() == nullptr) return Corrupt(what + ".offsets is missing");
    layout_.segments[sub.segment_index()].role = role;
    const auto* seg = segments_->Get(sub.segment_index());
    for (uint32_t k = 0; k < sub.offsets()->size(); ++k) {
      const uint64_t off = UnalignedAt(*sub.offsets(), k);
      if (off > seg->size()) {
        return Corrupt(what + ".offsets[" + std::to_string(k) + "] = " + std::to_string(off) +
                       " is past the end of segment " + std::to_string(sub.segment_index()) + " (" +
                       std::to_string(seg->size()) + " bytes)");
      }
    }
    return ForEachTensor(prog_, [&](uint32_t p, uint32_t v, const fb::Tensor& t) -> Status {
      if (!select(t)) return Status::OK();
      // Named only for an error.
      const auto path = [&] { return TensorPath(p, v); };
      if (t.data_buffer_idx() >= sub.offsets()->size()) {
        return Corrupt(path() + ".data_buffer_idx = " + std::to_string(t.data_buffer_idx()) +
                       " is out of range: " + what + " has " +
                       std::to_string(sub.offsets()->size()) + " offsets");
      }
      const int type = static_cast<int>(t.scalar_type());
      ETPACK_ASSIGN_OR_RETURN(uint64_t nbytes, TensorNbytes(type, *t.sizes(), path));
      const uint64_t off = UnalignedAt(*sub.offsets(), t.data_buffer_idx());
      if (nbytes > seg->size() - off) {
        return Corrupt(path() + ": " + std::to_string(nbytes) + " bytes at offset " +
                       std::to_string(off) + " run past the end of segment " +
                       std::to_string(sub.segment_index()) + " (" + std::to_string(seg->size()) +
                       " bytes)");
      }
      const uint64_t abs = base_ + seg->offset() + off;
      if (role == SegmentRole::kConstants && nbytes > 0 && abs % ScalarTypeElementSize(type) != 0) {
        return Corrupt(path() + ": data at file offset " + std::to_string(abs) +
                       " is not aligned to its element size " +
                       std::to_string(ScalarTypeElementSize(type)));
      }
      return Status::OK();
    });
  }

  // Constants: in the constant segment, or (deprecated) inline buffers. The
  // runtime reads constants from the segment only when it has more than the
  // placeholder offset; otherwise from inline constant_buffer.
  Status CheckConstants() {
    const auto* cs = prog_.constant_segment();
    if (cs && cs->offsets() && cs->offsets()->size() > 1) {
      if (prog_.constant_buffer() && prog_.constant_buffer()->size() > 0) {
        return Corrupt("both constant_segment (" + std::to_string(cs->offsets()->size()) +
                       " offsets) and inline constant_buffer (" +
                       std::to_string(prog_.constant_buffer()->size()) + " entries) are present");
      }
      return CheckSubsegments(*cs, "constant_segment", SegmentRole::kConstants, IsConstantTensor);
    }
    if (cs && cs->segment_index() < nseg_) {
      layout_.segments[cs->segment_index()].role = SegmentRole::kConstants;
    }
    const uint32_t n = prog_.constant_buffer() ? prog_.constant_buffer()->size() : 0;
    return ForEachTensor(prog_, [&](uint32_t p, uint32_t v, const fb::Tensor& t) -> Status {
      if (!IsConstantTensor(t)) return Status::OK();
      // Named only for an error.
      const auto path = [&] { return TensorPath(p, v); };
      if (t.data_buffer_idx() >= n) {
        return Corrupt(path() + ".data_buffer_idx = " + std::to_string(t.data_buffer_idx()) +
                       " is out of range: constant_buffer has " + std::to_string(n) + " entries");
      }
      ETPACK_ASSIGN_OR_RETURN(uint64_t nbytes,
                              TensorNbytes(static_cast<int>(t.scalar_type()), *t.sizes(), path));
      const auto* storage = prog_.constant_buffer()->Get(t.data_buffer_idx())->storage();
      const uint64_t have = storage ? storage->size() : 0;
      if (have < nbytes) {
        return Corrupt(path() + ": needs " + std::to_string(nbytes) +
                       " bytes but constant_buffer[" + std::to_string(t.data_buffer_idx()) +
                       "] holds " + std::to_string(have));
      }
      return Status::OK();
    });
  }

  // Mutable initial values: the runtime only ever reads entry 0.
  Status CheckMutable() {
    const auto* mds = prog_.mutable_data_segments();
    if (mds == nullptr) {
      return ForEachTensor(prog_, [&](uint32_t p, uint32_t v, const fb::Tensor& t) -> Status {
        if (!IsMutableWithInit(t)) return Status::OK();
        return Corrupt(TensorPath(p, v) +
                       ".data_buffer_idx = " + std::to_string(t.data_buffer_idx()) +
                       " asks for an initial value but mutable_data_segments is missing");
      });
    }
    for (uint32_t k = 0; k < mds->size(); ++k) {
      const std::string what = "mutable_data_segments[" + std::to_string(k) + "]";
      if (k == 0) {
        ETPACK_RETURN_IF_ERROR(
            CheckSubsegments(*mds->Get(0), what, SegmentRole::kMutable, IsMutableWithInit));
      } else {
        ETPACK_RETURN_IF_ERROR(
            CheckSegmentIndex(mds->Get(k)->segment_index(), what + ".segment_index"));
        layout_.segments[mds->Get(k)->segment_index()].role = SegmentRole::kMutable;
      }
    }
    return Status::OK();
  }

  // Delegate payload references (their locations were checked with the
  // methods).
  Status CheckDelegateData() {
    const uint32_t ninline =
        prog_.backend_delegate_data() ? prog_.backend_delegate_data()->size() : 0;
    const auto* plans = prog_.execution_plan();
    for (uint32_t p = 0; p < plans->size(); ++p) {
      const auto* delegates = plans->Get(p)->delegates();
      for (uint32_t d = 0; d < delegates->size(); ++d) {
        const std::string what = "execution_plan[" + std::to_string(p) + "].delegates[" +
                                 std::to_string(d) + "].processed";
        const auto* ref = delegates->Get(d)->processed();
        if (ref->location() == fb::DataLocation::SEGMENT) {
          ETPACK_RETURN_IF_ERROR(CheckSegmentIndex(ref->index(), what + ".index"));
          layout_.segments[ref->index()].role = SegmentRole::kDelegate;
        } else if (ref->index() >= ninline) {
          return Corrupt(what + ".index = " + std::to_string(ref->index()) +
                         " is out of range: backend_delegate_data has " + std::to_string(ninline) +
                         " entries");
        }
      }
    }
    return Status::OK();
  }

  Status CheckNamedData() {
    const auto* named = prog_.named_data();
    if (named == nullptr) return Status::OK();
    if (segments_ == nullptr) {
      return Corrupt("named_data is present but segments is missing (the runtime refuses this)");
    }
    for (uint32_t i = 0; i < named->size(); ++i) {
      const std::string what = "named_data[" + std::to_string(i) + "]";
      ETPACK_RETURN_IF_ERROR(
          CheckString(named->Get(i)->key(), true, [&] { return what + ".key"; }));
      const flatbuffers::String* key = named->Get(i)->key();
      if (Status s = CheckKeyText(key->string_view(), what); !s.ok()) return Corrupt(s.message());
      ETPACK_RETURN_IF_ERROR(
          CheckSegmentIndex(named->Get(i)->segment_index(), what + ".segment_index"));
      layout_.segments[named->Get(i)->segment_index()].role = SegmentRole::kNamedData;
    }
    return Status::OK();
  }

  const fb::Program& prog_;
  const uint64_t base_;
  PteSegmentMap& layout_;
  const flatbuffers::Vector<flatbuffers::Offset<fb::DataSegment>>* segments_;
  uint32_t nseg_;
};

}  // namespace

Result<CheckedPte> CheckPte(const uint8_t* head, uint64_t head_size, uint64_t file_size) {
  CheckedPte out;
  ETPACK_ASSIGN_OR_RETURN(out.header, ParseExtendedHeader(head, head_size));
  const ExtendedHeader& h = out.header;
  if (std::memcmp(head + 4, pte::kFileIdentifier, 4) != 0) {
    return Corrupt("file identifier is '" + Printable4(head + 4) +
                   "', expected 'ET12' (not an ExecuTorch program, or an incompatible version)");
  }
  uint64_t fb_size = file_size;
  if (h.present) {
    // Which field is wrong decides the message: a length past the file
    // is the length's fault whatever program_size says.
    const uint64_t header_end = pte::kHeaderOffset + h.length;
    if (header_end > file_size) {
      return Corrupt("extended header length = " + std::to_string(h.length) +
                     " would end the header at byte " + std::to_string(header_end) +
                     ", past the end of the " + std::to_string(file_size) + "-byte file");
    }
    if (h.program_size < header_end) {
      return Corrupt("extended header program_size = " + std::to_string(h.program_size) +
                     " ends before the header itself (byte " + std::to_string(header_end) +
                     ", from its length = " + std::to_string(h.length) + ")");
    }
    if (h.program_size > file_size) {
      return Corrupt("extended header program_size = " + std::to_string(h.program_size) +
                     " runs past the end of the " + std::to_string(file_size) + "-byte file");
    }
    fb_size = h.program_size;
    if (h.segment_base_offset == 0 && h.segment_data_size != 0) {
      return Corrupt("extended header segment_data_size = " + std::to_string(h.segment_data_size) +
                     " with segment_base_offset = 0");
    }
    if (h.segment_base_offset != 0) {
      if (h.segment_base_offset < h.program_size) {
        return Corrupt(
            "extended header segment_base_offset = " + std::to_string(h.segment_base_offset) +
            " lies inside the flatbuffer (program_size = " + std::to_string(h.program_size) + ")");
      }
      if (h.segment_base_offset > file_size ||
          h.segment_data_size > file_size - h.segment_base_offset) {
        return Corrupt("segment data [" + std::to_string(h.segment_base_offset) + ", +" +
                       std::to_string(h.segment_data_size) + ") runs past the end of the file (" +
                       std::to_string(file_size) + " bytes); the file is truncated");
      }
    }
  }
  if (fb_size >= FLATBUFFERS_MAX_BUFFER_SIZE) {
    return Corrupt("flatbuffer region of " + std::to_string(fb_size) +
                   " bytes exceeds the 2 GiB FlatBuffers limit");
  }
  if (fb_size > head_size) {
    return Corrupt(
        "the file changed while being opened: its header now puts the flatbuffer's "
        "end at " +
        std::to_string(fb_size) + ", past the " + std::to_string(head_size) + " bytes read first");
  }
  // A legacy 24-byte header has no segment_data_size: the runtime skips its
  // size check, so the segment data runs to the end of the file (base <=
  // file_size was checked above).
  uint64_t segment_data_size = h.segment_data_size;
  if (h.present && h.length < pte::kHeaderLength && h.segment_base_offset != 0) {
    segment_data_size = file_size - h.segment_base_offset;
  }
  ETPACK_RETURN_IF_ERROR(VerifyFlatbuffer(
      SchemaId::kProgram, [](flatbuffers::Verifier& v) { return fb::VerifyProgramBuffer(v); }, head,
      fb_size, "the Program flatbuffer", "truncated or not a program"));
  out.program = fb::GetProgram(head);
  ETPACK_RETURN_IF_ERROR(CheckMethods(*out.program));

  out.layout.program_size = h.present ? h.program_size : file_size;
  out.layout.segment_base_offset = h.segment_base_offset;
  out.layout.segment_data_size = segment_data_size;
  ETPACK_RETURN_IF_ERROR(
      SegmentChecker(*out.program, h.segment_base_offset, &out.layout).Check(segment_data_size));
  return out;
}

}  // namespace etpack
