// Reading a .pte: map, validate everything once (pte/program_checks.h, the
// checks the planner runs too), then hand out views.

#include "etpack/pte_file.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "etpack/plan.h"
#include "flatbuffer/scalar_type.h"
#include "flatbuffer/tree_reader.h"
#include "flatbuffer/unaligned_vector.h"
#include "integrity/table.h"
#include "plan/segments.h"
#include "program_etpack_generated.h"
#include "pte/edited_input.h"
#include "pte/program_checks.h"
#include "pte/program_edit.h"
#include "pte/program_walk.h"
#include "pte/pte_format.h"
#include "pte/pte_header.h"

namespace etpack {

namespace fb = etpack::pte_fb;

namespace {

// For every sub-buffer of a segment, the bytes the program needs from it:
// the largest nbytes of the tensors that use it (0 when none does).
template <typename Select>
Result<std::vector<uint64_t>> NeededBytes(const fb::Program& program, size_t count, Select select) {
  std::vector<uint64_t> need(count, 0);
  ETPACK_RETURN_IF_ERROR(
      ForEachTensor(program, [&](uint32_t p, uint32_t v, const fb::Tensor& t) -> Status {
        if (!select(t)) return Status::OK();
        // Named only for an error.
        const auto path = [&] { return TensorPath(p, v); };
        if (t.data_buffer_idx() >= count) {
          return Corrupt(path() + ".data_buffer_idx = " + std::to_string(t.data_buffer_idx()) +
                         " is out of range: the segment has " + std::to_string(count) +
                         " sub-buffers");
        }
        if (t.sizes() == nullptr) return Corrupt(path() + ".sizes is missing");
        ETPACK_ASSIGN_OR_RETURN(uint64_t n,
                                TensorNbytes(static_cast<int>(t.scalar_type()), *t.sizes(), path));
        need[t.data_buffer_idx()] = std::max(need[t.data_buffer_idx()], n);
        return Status::OK();
      }));
  return need;
}

// The length of each sub-buffer of a segment: exactly what the tensors
// using it read (validated to fit; this also carries no stale padding into
// a new alignment). Offsets may alias or run backwards, so a buffer no
// tensor uses extends to the next larger offset (or the segment end), never
// merely to the next entry's. Entry 0 is the empty placeholder.
std::vector<uint64_t> SubBufferLengths(const std::vector<uint64_t>& offsets,
                                       const std::vector<uint64_t>& need, uint64_t segment_size) {
  std::vector<uint64_t> sorted = offsets;
  std::sort(sorted.begin(), sorted.end());
  std::vector<uint64_t> lengths(offsets.size());
  for (size_t k = 0; k < offsets.size(); ++k) {
    lengths[k] = need[k];
    if (lengths[k] == 0 && k > 0) {
      auto next = std::upper_bound(sorted.begin(), sorted.end(), offsets[k]);
      lengths[k] =
          (next == sorted.end() ? segment_size : std::min(*next, segment_size)) - offsets[k];
    }
  }
  return lengths;
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
  ETPACK_ASSIGN_OR_RETURN(CheckedPte checked, CheckPte(head(), head_size(), size()));
  header_ = checked.header;
  program_ = checked.program;
  layout_ = std::move(checked.layout);
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

namespace {

// A writer places each item at the previous item's end rounded up to an
// alignment a (docs/formats.md §2.3). The placements seen bound a from both
// sides: it divides every start (at most `hi`) and exceeds every gap (at
// least `lo`); every a in [lo, hi] lays the items out exactly as found.
class AlignmentBounds {
 public:
  static constexpr uint64_t kMax = 65536;
  // An item starting at `start` whose alignment is unknown (only divides).
  void Start(uint64_t start) { bits_ |= start; }
  // An item placed at align_up(prev_end, a).
  void Next(uint64_t prev_end, uint64_t start) {
    bits_ |= start;
    if (start < prev_end) {
      consistent_ = false;
    } else {
      max_gap_ = std::max(max_gap_, start - prev_end);
    }
  }
  // `preferred` when it explains the layout, else the nearest value that
  // does; `preferred` when none does (not a layout any writer makes).
  uint64_t Pick(uint64_t preferred) const {
    const uint64_t hi = bits_ == 0 ? kMax : std::min(AlignmentOf(bits_), kMax);
    uint64_t lo = 1;
    while (lo <= max_gap_ && lo <= kMax) lo <<= 1;
    if (!consistent_ || lo > hi) return preferred;
    return std::clamp(preferred, lo, hi);
  }

 private:
  uint64_t bits_ = 0;
  uint64_t max_gap_ = 0;
  bool consistent_ = true;
};

}  // namespace

PteOptions PteFile::InferredOptions() const {
  const fb::Program& prog = *program_;
  PteOptions o;
  // Segments: the base at the flatbuffer's end rounded up, each segment at
  // the previous one's end rounded up (named data: to its own alignment
  // too, which only the offset shows).
  if (header_.segment_base_offset != 0) {
    AlignmentBounds segment;
    segment.Next(layout_.program_size, header_.segment_base_offset);
    uint64_t end = 0;
    for (const auto& s : layout_.segments) {
      if (s.role == SegmentRole::kNamedData) {
        segment.Start(s.offset);
      } else {
        segment.Next(end, s.offset);
      }
      end = s.offset + s.size;
    }
    o.segment_alignment = segment.Pick(o.segment_alignment);
  }
  // Constants: each at the previous one's end rounded up, with the lengths
  // ToInput() gives them. A constant read by tensors at the offset of an
  // earlier one that tensors read too is stored once (dedup_constants) and
  // was not placed by this rule.
  if (const auto* cs = prog.constant_segment(); cs && cs->offsets() && cs->offsets()->size() > 1) {
    Result<std::vector<uint64_t>> need = NeededBytes(prog, cs->offsets()->size(), IsConstantTensor);
    if (need.ok()) {
      const std::vector<uint64_t> offsets = UnalignedCopy(*cs->offsets());
      const std::vector<uint64_t> lengths =
          SubBufferLengths(offsets, *need, layout_.segments[cs->segment_index()].size);
      AlignmentBounds constant;
      std::set<uint64_t> stored;  // offsets of constants that tensors read
      uint64_t end = offsets[0] + lengths[0];
      for (size_t k = 1; k < offsets.size(); ++k) {
        if ((*need)[k] > 0 && !stored.insert(offsets[k]).second) {
          o.dedup_constants = true;
          continue;
        }
        constant.Next(end, offsets[k]);
        end = offsets[k] + lengths[k];
      }
      o.constant_tensor_alignment = constant.Pick(o.constant_tensor_alignment);
    }
  }
  // Inline delegate data: where the builder put it says only what divides.
  if (const auto* bdd = prog.backend_delegate_data()) {
    AlignmentBounds delegate;
    for (const auto* d : *bdd) {
      if (d->data() == nullptr || d->data()->size() == 0) continue;
      delegate.Start(static_cast<uint64_t>(d->data()->data() - head()));
      o.extract_delegate_segments = false;
    }
    o.delegate_alignment = delegate.Pick(o.delegate_alignment);
  }
  return o;
}

Result<std::string> PteFile::ToFlatcJson() const {
  return FlatbufferToFlatcJson(SchemaId::kProgram, head(), layout_.program_size);
}

namespace {

Result<EditedInput> EditsOf(const PteFile& pte) {
  EditedInput edited;
  PteInput& in = edited.input;
  // Bulk bytes come out as sources of this file, never inside the program:
  // the copy below leaves them out.
  ProgramEdits& edits = edited.edits;
  edits.drop_inline_bytes = true;
  const fb::Program& prog = pte.program();
  // Inline bytes of the flatbuffer, as a source; absent = empty.
  auto inline_bytes = [&](const flatbuffers::Vector<uint8_t>* v) {
    if (v == nullptr) return OwnedSource({});
    return pte.RangeSource(static_cast<uint64_t>(v->data() - pte.head()), v->size());
  };
  const auto* segments = prog.segments();

  // Splits a sub-buffer table into one source per buffer.
  auto split = [&](const fb::SubsegmentOffsets& sub, const std::vector<uint64_t>& need) {
    const auto* seg = segments->Get(sub.segment_index());
    const uint64_t start = pte.header().segment_base_offset + seg->offset();
    const std::vector<uint64_t> offsets = UnalignedCopy(*sub.offsets());
    const std::vector<uint64_t> lengths = SubBufferLengths(offsets, need, seg->size());
    std::vector<SourcePtr> out;
    for (size_t k = 0; k < offsets.size(); ++k) {
      out.push_back(pte.RangeSource(start + offsets[k], lengths[k]));
    }
    return out;
  };

  const auto* cs = prog.constant_segment();
  if (cs && cs->offsets() && cs->offsets()->size() > 1) {
    ETPACK_ASSIGN_OR_RETURN(auto need, NeededBytes(prog, cs->offsets()->size(), IsConstantTensor));
    in.constants = split(*cs, need);
  } else if (cs && cs->offsets() && cs->offsets()->size() == 1) {
    // The placeholder alone: planned again as the empty constant segment it
    // was (no entry at all would plan no constant segment).
    in.constants.push_back(OwnedSource({}));
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
  std::map<uint32_t, uint32_t> inline_of_segment;
  for (uint32_t p = 0; p < prog.execution_plan()->size(); ++p) {
    const auto* delegates = prog.execution_plan()->Get(p)->delegates();
    if (delegates == nullptr) continue;
    for (uint32_t d = 0; d < delegates->size(); ++d) {
      const auto* ref = delegates->Get(d)->processed();
      if (ref->location() != fb::DataLocation::SEGMENT) continue;
      auto it = inline_of_segment.find(ref->index());
      if (it == inline_of_segment.end()) {
        it = inline_of_segment.emplace(ref->index(), static_cast<uint32_t>(in.delegates.size()))
                 .first;
        in.delegates.push_back(pte.SegmentSource(ref->index()));
      }
      edits.delegates.push_back({p, d, fb::DataLocation::INLINE, it->second});
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
      if (source == nullptr) source = pte.SegmentSource(seg);
      in.named_data.push_back(
          {named->Get(i)->key()->str(), source, ReadBackAlignment(segments->Get(seg)->offset())});
    }
  }
  // The head is copied, not read from this file by the plan: the file is
  // an input of any plan made from it all the same.
  in.read.push_back(pte.RangeSource(0, pte.size()));
  edited.bytes = pte.head();
  edited.size = pte.layout().program_size;
  edited.name = pte.name();
  return edited;
}

}  // namespace

Result<EditedInput> EditedInputOf(const PteFile& pte) {
  Result<EditedInput> edited = EditsOf(pte);
  if (!edited.ok()) return edited.status().WithContext(pte.name());
  return edited;
}

Result<PteInput> PteFile::ToInput() const {
  ETPACK_ASSIGN_OR_RETURN(EditedInput edited, EditedInputOf(*this));
  return ApplyEdits(std::move(edited));
}

}  // namespace etpack
