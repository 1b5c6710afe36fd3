// The plain-value views of a validated program (methods, tensors, named
// data, constant buffers), so that users of PteFile never need the
// generated FlatBuffers types.

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "etpack/pte_file.h"
#include "flatbuffer/layout_of.h"
#include "flatbuffer/scalar_type.h"
#include "flatbuffer/unaligned_vector.h"
#include "program_etpack_generated.h"

namespace etpack {

namespace fb = etpack::pte_fb;

namespace {

std::string Str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

template <typename V>
uint64_t Count(const V* v) {
  return v ? v->size() : 0;
}

std::vector<int32_t> Ints(const flatbuffers::Vector<int32_t>* v) {
  return v ? std::vector<int32_t>(v->begin(), v->end()) : std::vector<int32_t>();
}

// Each sub-buffer of a segment as a file range: from its offset to the next
// larger offset, or to the segment's end.
std::vector<ByteRange> SubBuffers(const fb::SubsegmentOffsets& sub, uint64_t segment_start,
                                  uint64_t segment_size) {
  const std::vector<uint64_t> offsets = UnalignedCopy(*sub.offsets());
  std::vector<uint64_t> sorted = offsets;
  std::sort(sorted.begin(), sorted.end());
  std::vector<ByteRange> out;
  for (uint64_t off : offsets) {
    auto next = std::upper_bound(sorted.begin(), sorted.end(), off);
    const uint64_t end = next == sorted.end() ? segment_size : std::min(*next, segment_size);
    out.push_back({segment_start + off, end - off});
  }
  return out;
}

}  // namespace

const char* TensorDataName(TensorData data) {
  switch (data) {
    case TensorData::kNone: return "none";
    case TensorData::kConstant: return "constant";
    case TensorData::kMutable: return "mutable";
    case TensorData::kExternal: return "external";
  }
  return "unknown";
}

// Runs once Validate() has passed: every index used here is in range.
void PteFile::BuildViews() {
  const fb::Program& p = *program_;
  const auto* segments = p.segments();
  for (const fb::ExecutionPlan* plan : *p.execution_plan()) {
    PteMethod m;
    m.name = Str(plan->name());
    m.value_count = Count(plan->values());
    m.inputs = Ints(plan->inputs());
    m.outputs = Ints(plan->outputs());
    if (const auto* chains = plan->chains()) {
      for (const fb::Chain* chain : *chains) m.instruction_count += Count(chain->instructions());
    }
    if (const auto* delegates = plan->delegates()) {
      for (const fb::BackendDelegate* d : *delegates) {
        PteDelegate info;
        info.backend = Str(d->id());
        info.in_segment = d->processed()->location() == fb::DataLocation::SEGMENT;
        info.index = d->processed()->index();
        if (info.in_segment) {
          info.size = layout_.segments[info.index].size;
        } else if (const auto* data = p.backend_delegate_data()->Get(info.index)->data()) {
          info.size = data->size();
        }
        m.delegates.push_back(std::move(info));
      }
    }
    methods_.push_back(std::move(m));
  }

  if (const auto* named = p.named_data()) {
    for (const fb::NamedData* n : *named) {
      named_data_.push_back({Str(n->key()), n->segment_index()});
    }
  }

  const auto* cs = p.constant_segment();
  if (cs && cs->offsets() && cs->offsets()->size() > 1) {
    const auto* seg = segments->Get(cs->segment_index());
    constant_buffers_ = SubBuffers(*cs, header_.segment_base_offset + seg->offset(), seg->size());
  } else if (const auto* cb = p.constant_buffer()) {
    for (const fb::Buffer* b : *cb) {
      const auto* storage = b->storage();
      if (storage == nullptr) {
        constant_buffers_.push_back({});
      } else {
        constant_buffers_.push_back(
            {static_cast<uint64_t>(storage->data() - head()), storage->size()});
      }
    }
  }
  if (const auto* mds = p.mutable_data_segments(); mds && mds->size() > 0) {
    const auto* seg = segments->Get(mds->Get(0)->segment_index());
    mutable_buffers_ =
        SubBuffers(*mds->Get(0), header_.segment_base_offset + seg->offset(), seg->size());
  }
}

std::vector<PteTensor> PteFile::Tensors() const {
  std::vector<PteTensor> out;
  const auto& plans = *program_->execution_plan();
  for (uint32_t p = 0; p < plans.size(); ++p) {
    const auto& values = *plans.Get(p)->values();  // Validate() requires it
    for (uint32_t v = 0; v < values.size(); ++v) {
      const fb::Tensor* t = values.Get(v)->val_as_Tensor();
      if (t == nullptr) continue;
      PteTensor x;
      x.method = p;
      x.value = v;
      x.layout = LayoutOf(*t);
      Result<uint64_t> nbytes = TensorNbytes(x.layout.scalar_type, x.layout.sizes, "");
      if (nbytes.ok()) x.nbytes = *nbytes;
      const fb::ExtraTensorInfo* extra = t->extra_tensor_info();
      if (extra != nullptr) x.key = Str(extra->fully_qualified_name());
      if (extra && extra->location() == fb::TensorDataLocation::EXTERNAL) {
        x.data = TensorData::kExternal;
      } else if (t->allocation_info() != nullptr) {
        x.data = TensorData::kMutable;
        x.buffer_index = t->data_buffer_idx();
      } else if (t->data_buffer_idx() > 0) {
        x.data = TensorData::kConstant;
        x.buffer_index = t->data_buffer_idx();
      }
      out.push_back(std::move(x));
    }
  }
  return out;
}

Result<SourcePtr> PteFile::TensorSource(const PteTensor& t) const {
  const std::string what = name() + ": execution_plan[" + std::to_string(t.method) + "].values[" +
                           std::to_string(t.value) + "]";
  const std::vector<ByteRange>* buffers = nullptr;
  if (t.data == TensorData::kConstant) buffers = &constant_buffers_;
  if (t.data == TensorData::kMutable && t.buffer_index > 0) buffers = &mutable_buffers_;
  if (buffers == nullptr || t.buffer_index >= buffers->size()) {
    return NotFound(what + " has no bytes in this file (" + TensorDataName(t.data) +
                    (t.data == TensorData::kExternal ? ", key '" + t.key + "'" : std::string()) +
                    ")");
  }
  // Validate() checked that the tensor's nbytes fit its buffer.
  return RangeSource((*buffers)[t.buffer_index].offset, t.nbytes.value_or(0));
}

}  // namespace etpack
