// Reading a .pte: map, validate everything once, then hand out views.
//
// Validation goes beyond what the runtime checks at load (it trusts the
// segment table until a method touches it); a file that passes here loads
// without out-of-bounds reads whatever method is executed.

#include "etpack/pte_file.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "flatbuffer/scalar_type.h"
#include "flatbuffer/tree_reader.h"
#include "flatbuffer/unaligned_vector.h"
#include "integrity/table.h"
#include "layout/layout.h"
#include "layout/segment_table.h"
#include "program_etpack_generated.h"
#include "pte/program_walk.h"
#include "pte/pte_format.h"
#include "pte/pte_header.h"

namespace etpack {

namespace fb = etpack::pte_fb;

// The runtime's kTensorDimensionLimit.
constexpr uint32_t kMaxTensorRank = 16;

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

// Largest power of two dividing `offset` (capped: 0 is aligned to anything).
uint64_t OffsetAlignment(uint64_t offset) {
  constexpr uint64_t kCap = 65536;
  return std::min(AlignmentOf(offset), kCap);
}

bool IsConstantTensor(const fb::Tensor& t) {
  const bool external = t.extra_tensor_info() != nullptr &&
                        t.extra_tensor_info()->location() == fb::TensorDataLocation::EXTERNAL;
  return !external && t.data_buffer_idx() > 0 && t.allocation_info() == nullptr;
}

bool IsMutableWithInit(const fb::Tensor& t) {
  const bool external = t.extra_tensor_info() != nullptr &&
                        t.extra_tensor_info()->location() == fb::TensorDataLocation::EXTERNAL;
  return !external && t.data_buffer_idx() > 0 && t.allocation_info() != nullptr;
}

std::string TensorPath(uint32_t p, uint32_t v) {
  return "execution_plan[" + std::to_string(p) + "].values[" + std::to_string(v) + "]";
}

// What the verifier does not check but the runtime relies on: union types
// with their values, tensor shapes within the runtime's limits, known enum
// values. Runs once per value, so its cost is bounded by the file size even
// when many vector entries share one table (bounding rank first keeps a
// shared tensor with a huge `sizes` from being re-walked 100k times).
Status CheckStructure(const fb::Program& prog) {
  if (prog.execution_plan() == nullptr) return Corrupt("execution_plan is missing");
  for (uint32_t p = 0; p < prog.execution_plan()->size(); ++p) {
    const auto* plan = prog.execution_plan()->Get(p);
    const std::string ppath = "execution_plan[" + std::to_string(p) + "]";
    if (plan->values() == nullptr) return Corrupt(ppath + ".values is missing");
    for (uint32_t v = 0; v < plan->values()->size(); ++v) {
      const auto* value = plan->values()->Get(v);
      const int type = static_cast<int>(value->val_type());
      if (type < 1 || type > static_cast<int>(fb::KernelTypes::MAX) || value->val() == nullptr) {
        return Corrupt(TensorPath(p, v) + ".val_type = " + std::to_string(type) +
                       (value->val() == nullptr ? " with no value" : " is not a value type"));
      }
      const fb::Tensor* t = value->val_as_Tensor();
      if (t == nullptr) continue;
      const std::string path = TensorPath(p, v);
      const int st = static_cast<int>(t->scalar_type());
      if (st < 0 || st > static_cast<int>(fb::ScalarType::MAX)) {
        return Corrupt(path + ".scalar_type = " + std::to_string(st) + " is not a scalar type");
      }
      if (t->sizes() == nullptr) return Corrupt(path + ".sizes is missing");
      if (t->sizes()->size() > kMaxTensorRank) {
        return Corrupt(path + ".sizes has " + std::to_string(t->sizes()->size()) +
                       " dimensions; the runtime allows at most " + std::to_string(kMaxTensorRank));
      }
      if (t->dim_order() == nullptr || t->dim_order()->size() != t->sizes()->size()) {
        return Corrupt(path + ".dim_order must have one entry per dimension (" +
                       std::to_string(t->sizes()->size()) + ")");
      }
    }
    if (plan->chains() != nullptr) {
      for (uint32_t c = 0; c < plan->chains()->size(); ++c) {
        const auto* instructions = plan->chains()->Get(c)->instructions();
        if (instructions == nullptr) continue;
        for (uint32_t i = 0; i < instructions->size(); ++i) {
          const auto* instr = instructions->Get(i);
          const int type = static_cast<int>(instr->instr_args_type());
          if (type < 1 || type > static_cast<int>(fb::InstructionArguments::MAX) ||
              instr->instr_args() == nullptr) {
            return Corrupt(ppath + ".chains[" + std::to_string(c) + "].instructions[" +
                           std::to_string(i) + "].instr_args_type = " + std::to_string(type) +
                           (instr->instr_args() == nullptr ? " with no arguments"
                                                           : " is not an instruction type"));
          }
        }
      }
    }
    if (plan->delegates() != nullptr) {
      for (uint32_t d = 0; d < plan->delegates()->size(); ++d) {
        const auto* ref = plan->delegates()->Get(d)->processed();
        const int loc = ref ? static_cast<int>(ref->location()) : 0;
        if (loc != pte::kLocationInline && loc != pte::kLocationSegment) {
          return Corrupt(ppath + ".delegates[" + std::to_string(d) + "].processed.location = " +
                         std::to_string(loc) + " is neither INLINE (0) nor SEGMENT (1)");
        }
      }
    }
  }
  return Status::OK();
}

// For every sub-buffer of a segment, the bytes the program needs from it:
// the largest nbytes of the tensors that use it (0 when none does).
template <typename Select>
Result<std::vector<uint64_t>> NeededBytes(const fb::Program& program, size_t count, Select select) {
  std::vector<uint64_t> need(count, 0);
  ETPACK_RETURN_IF_ERROR(
      ForEachTensor(program, [&](uint32_t p, uint32_t v, const fb::Tensor& t) -> Status {
        if (!select(t)) return Status::OK();
        const std::string path = TensorPath(p, v);
        if (t.data_buffer_idx() >= count) {
          return Corrupt(path + ".data_buffer_idx = " + std::to_string(t.data_buffer_idx()) +
                         " is out of range: the segment has " + std::to_string(count) +
                         " sub-buffers");
        }
        if (t.sizes() == nullptr) return Corrupt(path + ".sizes is missing");
        ETPACK_ASSIGN_OR_RETURN(uint64_t n,
                                TensorNbytes(static_cast<int>(t.scalar_type()), *t.sizes(), path));
        need[t.data_buffer_idx()] = std::max(need[t.data_buffer_idx()], n);
        return Status::OK();
      }));
  return need;
}

}  // namespace

// Validate() reads the extended header and the flatbuffer [0, program_size);
// segments go through the file. Without a header the whole file is the
// flatbuffer, which Validate() refuses from 2 GiB on from its size alone.
uint64_t PteFile::MappedPrefix(const uint8_t* peek, uint64_t peek_size, uint64_t file_size) const {
  Result<ExtendedHeader> h = ParseExtendedHeader(peek, peek_size);
  if (!h.ok()) return peek_size;
  if (!h->present) return file_size < FLATBUFFERS_MAX_BUFFER_SIZE ? file_size : peek_size;
  return h->program_size <= file_size ? h->program_size : peek_size;
}

PteFile::~PteFile() = default;

Status PteFile::Validate() {
  ETPACK_RETURN_IF_ERROR(CheckFile());
  BuildViews();
  return Status::OK();
}

Status PteFile::CheckFile() {
  ETPACK_ASSIGN_OR_RETURN(header_, ParseExtendedHeader(head(), size()));
  if (std::memcmp(head() + 4, pte::kFileIdentifier, 4) != 0) {
    return Corrupt("file identifier is '" + Printable4(head() + 4) +
                   "', expected 'ET12' (not an ExecuTorch program, or an incompatible version)");
  }
  uint64_t fb_size = size();
  if (header_.present) {
    const uint64_t min_program = pte::kHeaderOffset + header_.length;
    if (header_.program_size < min_program || header_.program_size > size()) {
      return Corrupt("extended header program_size = " + std::to_string(header_.program_size) +
                     " is outside [" + std::to_string(min_program) + ", file size " +
                     std::to_string(size()) + "]");
    }
    fb_size = header_.program_size;
    if (header_.segment_base_offset == 0 && header_.segment_data_size != 0) {
      return Corrupt("extended header segment_data_size = " +
                     std::to_string(header_.segment_data_size) + " with segment_base_offset = 0");
    }
    if (header_.segment_base_offset != 0) {
      if (header_.segment_base_offset < header_.program_size) {
        return Corrupt(
            "extended header segment_base_offset = " + std::to_string(header_.segment_base_offset) +
            " lies inside the flatbuffer (program_size = " + std::to_string(header_.program_size) +
            ")");
      }
      if (header_.segment_base_offset > size() ||
          header_.segment_data_size > size() - header_.segment_base_offset) {
        return Corrupt("segment data [" + std::to_string(header_.segment_base_offset) + ", +" +
                       std::to_string(header_.segment_data_size) +
                       ") runs past the end of the file (" + std::to_string(size()) +
                       " bytes); the file is truncated");
      }
    }
  }
  if (fb_size >= FLATBUFFERS_MAX_BUFFER_SIZE) {
    return Corrupt("flatbuffer region of " + std::to_string(fb_size) +
                   " bytes exceeds the 2 GiB FlatBuffers limit");
  }
  // A legacy 24-byte header has no segment_data_size: the runtime skips its
  // size check, so the segment data runs to the end of the file (base <=
  // size() was checked above).
  uint64_t segment_data_size = header_.segment_data_size;
  if (header_.present && header_.length < pte::kHeaderLength && header_.segment_base_offset != 0) {
    segment_data_size = size() - header_.segment_base_offset;
  }
  ETPACK_RETURN_IF_ERROR(CheckInHead(fb_size));
  flatbuffers::Verifier verifier(head(), static_cast<size_t>(fb_size));
  if (!fb::VerifyProgramBuffer(verifier)) {
    return Corrupt("the Program flatbuffer (bytes [0, " + std::to_string(fb_size) +
                   ")) fails verification: truncated or not a program");
  }
  program_ = fb::GetProgram(head());
  const fb::Program& prog = *program_;
  ETPACK_RETURN_IF_ERROR(CheckStructure(prog));

  // The segment table.
  const auto* segments = prog.segments();
  const uint32_t nseg = segments ? segments->size() : 0;
  ETPACK_RETURN_IF_ERROR(
      CheckSegmentTable(segments, header_.segment_base_offset, segment_data_size));
  for (uint32_t i = 0; i < nseg; ++i) {
    const auto* s = segments->Get(i);
    layout_.segments.push_back({SegmentRole::kUnreferenced, s->offset(), s->size(),
                                OffsetAlignment(header_.segment_base_offset + s->offset())});
  }
  if (header_.segment_base_offset % 16 != 0) {
    return Corrupt("segment_base_offset = " + std::to_string(header_.segment_base_offset) +
                   " is not 16-byte aligned; segment data cannot be used in place");
  }
  layout_.program_size = header_.present ? header_.program_size : size();
  layout_.segment_base_offset = header_.segment_base_offset;
  layout_.segment_data_size = segment_data_size;

  auto check_segment_index = [&](uint64_t index, const std::string& what) -> Status {
    if (index >= nseg) {
      return Corrupt(what + " = " + std::to_string(index) +
                     " is out of range: " + std::to_string(nseg) + " segments");
    }
    return Status::OK();
  };
  // A sub-buffer table: in range, offsets inside the segment, and every
  // tensor that uses it fits and is aligned for its element type.
  auto check_subsegments = [&](const fb::SubsegmentOffsets& sub, const std::string& what,
                               SegmentRole role, auto select) -> Status {
    ETPACK_RETURN_IF_ERROR(check_segment_index(sub.segment_index(), what + ".segment_index"));
    if (sub.offsets() == nullptr) return Corrupt(what + ".offsets is missing");
    layout_.segments[sub.segment_index()].role = role;
    const auto* seg = segments->Get(sub.segment_index());
    for (uint32_t k = 0; k < sub.offsets()->size(); ++k) {
      const uint64_t off = UnalignedAt(*sub.offsets(), k);
      if (off > seg->size()) {
        return Corrupt(what + ".offsets[" + std::to_string(k) + "] = " + std::to_string(off) +
                       " is past the end of segment " + std::to_string(sub.segment_index()) + " (" +
                       std::to_string(seg->size()) + " bytes)");
      }
    }
    return ForEachTensor(prog, [&](uint32_t p, uint32_t v, const fb::Tensor& t) -> Status {
      if (!select(t)) return Status::OK();
      const std::string path = TensorPath(p, v);
      if (t.data_buffer_idx() >= sub.offsets()->size()) {
        return Corrupt(path + ".data_buffer_idx = " + std::to_string(t.data_buffer_idx()) +
                       " is out of range: " + what + " has " +
                       std::to_string(sub.offsets()->size()) + " offsets");
      }
      if (t.sizes() == nullptr) return Corrupt(path + ".sizes is missing");
      const int type = static_cast<int>(t.scalar_type());
      ETPACK_ASSIGN_OR_RETURN(uint64_t nbytes, TensorNbytes(type, *t.sizes(), path));
      const uint64_t off = UnalignedAt(*sub.offsets(), t.data_buffer_idx());
      if (nbytes > seg->size() - off) {
        return Corrupt(path + ": " + std::to_string(nbytes) + " bytes at offset " +
                       std::to_string(off) + " run past the end of segment " +
                       std::to_string(sub.segment_index()) + " (" + std::to_string(seg->size()) +
                       " bytes)");
      }
      const uint64_t abs = header_.segment_base_offset + seg->offset() + off;
      if (role == SegmentRole::kConstants && nbytes > 0 && abs % ScalarTypeElementSize(type) != 0) {
        return Corrupt(path + ": data at file offset " + std::to_string(abs) +
                       " is not aligned to its element size " +
                       std::to_string(ScalarTypeElementSize(type)));
      }
      return Status::OK();
    });
  };

  // Constants: in the constant segment, or (deprecated) inline buffers.
  const auto* cs = prog.constant_segment();
  // The runtime reads constants from the segment only when it has more
  // than the placeholder offset; otherwise from inline constant_buffer.
  const bool has_constant_segment = cs && cs->offsets() && cs->offsets()->size() > 1;
  if (has_constant_segment) {
    if (prog.constant_buffer() && prog.constant_buffer()->size() > 0) {
      return Corrupt("both constant_segment (" + std::to_string(cs->offsets()->size()) +
                     " offsets) and inline constant_buffer (" +
                     std::to_string(prog.constant_buffer()->size()) + " entries) are present");
    }
    ETPACK_RETURN_IF_ERROR(
        check_subsegments(*cs, "constant_segment", SegmentRole::kConstants, IsConstantTensor));
  } else {
    if (cs && cs->segment_index() < nseg) {
      layout_.segments[cs->segment_index()].role = SegmentRole::kConstants;
    }
    const uint32_t n = prog.constant_buffer() ? prog.constant_buffer()->size() : 0;
    ETPACK_RETURN_IF_ERROR(
        ForEachTensor(prog, [&](uint32_t p, uint32_t v, const fb::Tensor& t) -> Status {
          if (!IsConstantTensor(t)) return Status::OK();
          const std::string path = TensorPath(p, v);
          if (t.data_buffer_idx() >= n) {
            return Corrupt(path + ".data_buffer_idx = " + std::to_string(t.data_buffer_idx()) +
                           " is out of range: constant_buffer has " + std::to_string(n) +
                           " entries");
          }
          if (t.sizes() == nullptr) return Corrupt(path + ".sizes is missing");
          ETPACK_ASSIGN_OR_RETURN(
              uint64_t nbytes, TensorNbytes(static_cast<int>(t.scalar_type()), *t.sizes(), path));
          const auto* storage = prog.constant_buffer()->Get(t.data_buffer_idx())->storage();
          const uint64_t have = storage ? storage->size() : 0;
          if (have < nbytes) {
            return Corrupt(path + ": needs " + std::to_string(nbytes) +
                           " bytes but constant_buffer[" + std::to_string(t.data_buffer_idx()) +
                           "] holds " + std::to_string(have));
          }
          return Status::OK();
        }));
  }

  // Mutable initial values: the runtime only ever reads entry 0.
  if (const auto* mds = prog.mutable_data_segments()) {
    for (uint32_t k = 0; k < mds->size(); ++k) {
      const std::string what = "mutable_data_segments[" + std::to_string(k) + "]";
      if (k == 0) {
        ETPACK_RETURN_IF_ERROR(
            check_subsegments(*mds->Get(0), what, SegmentRole::kMutable, IsMutableWithInit));
      } else {
        ETPACK_RETURN_IF_ERROR(
            check_segment_index(mds->Get(k)->segment_index(), what + ".segment_index"));
        layout_.segments[mds->Get(k)->segment_index()].role = SegmentRole::kMutable;
      }
    }
  }

  // Delegate payload references.
  const uint32_t ninline = prog.backend_delegate_data() ? prog.backend_delegate_data()->size() : 0;
  for (uint32_t p = 0; p < prog.execution_plan()->size(); ++p) {
    const auto* plan = prog.execution_plan()->Get(p);
    if (plan->values() == nullptr) {
      return Corrupt("execution_plan[" + std::to_string(p) + "].values is missing");
    }
    if (plan->delegates() == nullptr) continue;
    for (uint32_t d = 0; d < plan->delegates()->size(); ++d) {
      const std::string what = "execution_plan[" + std::to_string(p) + "].delegates[" +
                               std::to_string(d) + "].processed";
      const auto* ref = plan->delegates()->Get(d)->processed();
      if (ref == nullptr) return Corrupt(what + " is missing");
      if (ref->location() == fb::DataLocation::SEGMENT) {
        ETPACK_RETURN_IF_ERROR(check_segment_index(ref->index(), what + ".index"));
        layout_.segments[ref->index()].role = SegmentRole::kDelegate;
      } else if (ref->index() >= ninline) {
        return Corrupt(what + ".index = " + std::to_string(ref->index()) +
                       " is out of range: backend_delegate_data has " + std::to_string(ninline) +
                       " entries");
      }
    }
  }

  // Named data.
  if (const auto* named = prog.named_data()) {
    if (segments == nullptr) {
      return Corrupt("named_data is present but segments is missing (the runtime refuses this)");
    }
    for (uint32_t i = 0; i < named->size(); ++i) {
      const std::string what = "named_data[" + std::to_string(i) + "]";
      if (named->Get(i)->key() == nullptr) return Corrupt(what + ".key is missing");
      ETPACK_RETURN_IF_ERROR(
          check_segment_index(named->Get(i)->segment_index(), what + ".segment_index"));
      layout_.segments[named->Get(i)->segment_index()].role = SegmentRole::kNamedData;
    }
  }
  return Status::OK();
}

SourcePtr PteFile::SegmentSource(size_t i) const {
  const auto& s = layout_.segments[i];
  return RangeSource(header_.segment_base_offset + s.offset, s.size);
}

SourcePtr PteFile::DelegateSource(const PteDelegate& delegate) const {
  if (delegate.in_segment) return SegmentSource(delegate.index);
  // Validated on open: the index is in range.
  const auto* data = program_->backend_delegate_data()->Get(delegate.index)->data();
  if (data == nullptr) return OwnedSource({});
  return RangeSource(static_cast<uint64_t>(data->data() - head()), data->size());
}

PteOptions PteFile::InferredOptions() const {
  // The largest power of two dividing every offset seen (0 says nothing).
  struct Alignment {
    uint64_t bits = 0;
    void Add(uint64_t offset) { bits |= offset; }
    uint64_t Get(uint64_t fallback) const {
      return bits == 0 ? fallback : std::min<uint64_t>(AlignmentOf(bits), 65536);
    }
  };
  const fb::Program& prog = *program_;
  PteOptions o;
  Alignment segment, constant, delegate;
  segment.Add(header_.segment_base_offset);
  for (const auto& s : layout_.segments) {
    if (s.size > 0) segment.Add(s.offset);
  }
  o.segment_alignment = segment.Get(o.segment_alignment);
  if (const auto* cs = prog.constant_segment(); cs && cs->offsets()) {
    for (uint64_t off : UnalignedCopy(*cs->offsets())) constant.Add(off);
  }
  o.constant_tensor_alignment = std::max<uint64_t>(constant.Get(16), 16);
  if (const auto* bdd = prog.backend_delegate_data()) {
    for (const auto* d : *bdd) {
      if (d->data() == nullptr || d->data()->size() == 0) continue;
      delegate.Add(static_cast<uint64_t>(d->data()->data() - head()));
      o.extract_delegate_segments = false;
    }
  }
  o.delegate_alignment = std::max<uint64_t>(delegate.Get(16), 16);
  return o;
}

Result<std::string> PteFile::ToFlatcJson() const {
  return FlatbufferToFlatcJson(SchemaId::kProgram, head(), layout_.program_size);
}

Result<PteInput> PteFile::ToInput() const {
  Result<PteInput> in = ToInputImpl();
  if (!in.ok()) return in.status().WithContext(name());
  return in;
}

Result<PteInput> PteFile::ToInputImpl() const {
  // Bulk bytes come out as sources of this file, never through the tree.
  TreeReadOptions read;
  read.omit = {"Buffer.storage", "BackendDelegateInlineData.data"};
  ETPACK_ASSIGN_OR_RETURN(json::Value tree,
                          FlatbufferToTree(SchemaId::kProgram, head(), layout_.program_size, read));
  PteInput in;
  const fb::Program& prog = *program_;
  // Inline bytes of the flatbuffer, as a source; absent = empty.
  auto inline_bytes = [&](const flatbuffers::Vector<uint8_t>* v) {
    if (v == nullptr) return OwnedSource({});
    return RangeSource(static_cast<uint64_t>(v->data() - head()), v->size());
  };
  const auto* segments = prog.segments();

  // Splits a sub-buffer table into one source per buffer. A buffer used by
  // tensors is exactly what they read (validated to fit; this also carries
  // no stale padding into a new alignment). Offsets may alias or run
  // backwards, so a buffer no tensor uses extends to the next larger offset
  // (or the segment end), never merely to the next entry's.
  auto split = [&](const fb::SubsegmentOffsets& sub, const std::vector<uint64_t>& need) {
    const auto* seg = segments->Get(sub.segment_index());
    const uint64_t start = header_.segment_base_offset + seg->offset();
    std::vector<uint64_t> sorted = UnalignedCopy(*sub.offsets());
    std::sort(sorted.begin(), sorted.end());
    std::vector<SourcePtr> out;
    for (uint32_t k = 0; k < sub.offsets()->size(); ++k) {
      const uint64_t off = UnalignedAt(*sub.offsets(), k);
      uint64_t len = need[k];
      if (len == 0 && k > 0) {  // entry 0 is the empty placeholder
        auto next = std::upper_bound(sorted.begin(), sorted.end(), off);
        len = (next == sorted.end() ? seg->size() : std::min(*next, seg->size())) - off;
      }
      out.push_back(RangeSource(start + off, len));
    }
    return out;
  };

  const auto* cs = prog.constant_segment();
  if (cs && cs->offsets() && cs->offsets()->size() > 1) {
    ETPACK_ASSIGN_OR_RETURN(auto need, NeededBytes(prog, cs->offsets()->size(), IsConstantTensor));
    in.constants = split(*cs, need);
  } else if (const auto* cb = prog.constant_buffer()) {
    // Constants kept inline (a file without a constant segment).
    for (const fb::Buffer* b : *cb) in.constants.push_back(inline_bytes(b->storage()));
  }

  if (const auto* mds = prog.mutable_data_segments(); mds && mds->size() > 0) {
    const auto& sub = *mds->Get(0);
    ETPACK_ASSIGN_OR_RETURN(auto need, NeededBytes(prog, sub.offsets()->size(), IsMutableWithInit));
    in.mutable_data = split(sub, need);
  }

  // Every delegate payload goes back INLINE by index; segments shared by
  // several delegates stay shared (one entry, deduplicated again on write).
  if (const auto* bdd = prog.backend_delegate_data()) {
    for (const fb::BackendDelegateInlineData* d : *bdd) {
      in.delegates.push_back(inline_bytes(d->data()));
    }
  }
  std::map<uint32_t, uint64_t> inline_of_segment;
  json::Value* plans = tree.Find("execution_plan");
  for (uint32_t p = 0; p < prog.execution_plan()->size(); ++p) {
    const auto* delegates = prog.execution_plan()->Get(p)->delegates();
    if (delegates == nullptr) continue;
    json::Value& tree_delegates = *plans->items()[p].Find("delegates");
    for (uint32_t d = 0; d < delegates->size(); ++d) {
      const auto* ref = delegates->Get(d)->processed();
      if (ref->location() != fb::DataLocation::SEGMENT) continue;
      auto it = inline_of_segment.find(ref->index());
      if (it == inline_of_segment.end()) {
        it = inline_of_segment.emplace(ref->index(), in.delegates.size()).first;
        in.delegates.push_back(SegmentSource(ref->index()));
      }
      tree_delegates.items()[d].Set(
          "processed", json::Value::Object({{"location", json::Value::Int(pte::kLocationInline)},
                                            {"index", json::Value::UInt(it->second)}}));
    }
  }

  // Named data: one buffer per distinct segment. The original alignment is
  // not recorded in the file; keep whatever alignment the segment had.
  if (const auto* named = prog.named_data()) {
    std::map<uint32_t, SourcePtr> source_of_segment;
    for (uint32_t i = 0; i < named->size(); ++i) {
      // An integrity table describes this file's layout, not the new one;
      // the planner writes a fresh one when asked.
      if (IsIntegrityKey(named->Get(i)->key()->string_view())) continue;
      const uint32_t seg = named->Get(i)->segment_index();
      SourcePtr& source = source_of_segment[seg];
      if (source == nullptr) source = SegmentSource(seg);
      const uint64_t rel = segments->Get(seg)->offset();
      in.named_data.push_back(
          {named->Get(i)->key()->str(), source, rel == 0 ? 1 : OffsetAlignment(rel)});
    }
  }
  in.program = ProgramStructure::FromTree(std::move(tree));
  return in;
}

}  // namespace etpack
