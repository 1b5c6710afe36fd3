// The way back of a split program: InternalizeData (etpack/external_data.h)
// puts the bytes of every EXTERNAL tensor, and the data files' blobs, back
// inside the program.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "etpack/external_data.h"
#include "etpack/plan.h"
#include "integrity/table.h"
#include "plan/segments.h"
#include "program_etpack_generated.h"
#include "pte/constant_keys.h"
#include "pte/external_refs.h"
#include "pte/program_edit.h"
#include "pte/program_walk.h"

namespace etpack {

namespace fb = etpack::pte_fb;

namespace {

std::string Quote(const std::string& s) { return "'" + s + "'"; }

// The buffers of one kind (constants, or mutable initial values) a program
// reads by data_buffer_idx, and where the way back puts each content.
class BufferPool {
 public:
  // `read_inside[i]`: a tensor still inside reads buffer i (one flag for
  // each buffer of the program).
  BufferPool(std::vector<SourcePtr>* buffers, std::vector<bool> read_inside)
      : buffers_(buffers), read_inside_(std::move(read_inside)) {}

  // The index the tensor whose data_buffer_idx is `own` reads `content`
  // at: `own` when nothing inside reads it (a buffer `share` emptied) and
  // no other content went there; else the first buffer given this content,
  // else a new one.
  Result<uint32_t> Place(uint32_t own, const SourcePtr& content) {
    // Only the program's own buffers are candidates (not those appended here).
    if (own > 0 && own < read_inside_.size() && !read_inside_[own]) {
      auto [it, fresh] = filled_.emplace(own, content.get());
      if (fresh) {
        (*buffers_)[own] = content;
        first_.emplace(content.get(), own);
        return own;
      }
      if (it->second == content.get()) return own;
    }
    if (auto it = first_.find(content.get()); it != first_.end()) return it->second;
    if (buffers_->empty()) buffers_->push_back(OwnedSource({}));  // the placeholder
    if (buffers_->size() >= std::numeric_limits<uint32_t>::max()) {
      return OutOfRange("more than 2^32 - 1 buffers: data_buffer_idx is 32-bit");
    }
    const auto idx = static_cast<uint32_t>(buffers_->size());
    buffers_->push_back(content);
    first_.emplace(content.get(), idx);
    return idx;
  }

  // Buffers given a content.
  uint64_t used() const { return first_.size(); }

 private:
  std::vector<SourcePtr>* buffers_;
  std::vector<bool> read_inside_;
  std::map<uint32_t, const Source*> filled_;           // own indices filled, with what
  std::unordered_map<const Source*, uint32_t> first_;  // content -> first buffer holding it
};

// The program edit, the only one: the tensor t at execution_plan[p].values[v]
// reads buffer `idx` inside (location SEGMENT), without its key when
// `drop_key`, and without an extra_tensor_info left with only default
// fields.
TensorEdit MakeInternal(const fb::Tensor& t, uint32_t p, uint32_t v, uint32_t idx, bool drop_key) {
  TensorEdit edit;
  edit.plan = p;
  edit.value = v;
  edit.data_buffer_idx = idx;
  const fb::ExtraTensorInfo& info = *t.extra_tensor_info();  // EXTERNAL: present
  const bool only_defaults = drop_key && info.mutable_data_segments_idx() == 0 &&
                             info.device_type() == fb::DeviceType::CPU && info.device_index() == 0;
  if (only_defaults) {
    edit.info = TensorEdit::Info::kDrop;
    return edit;
  }
  edit.info = TensorEdit::Info::kSet;
  edit.location = fb::TensorDataLocation::SEGMENT;
  if (!drop_key) edit.fully_qualified_name = info.fully_qualified_name()->str();
  return edit;
}

}  // namespace

Result<PteInput> InternalizeData(const PteFile& thin, const std::vector<const PtdFile*>& data,
                                 InternalizeStats* stats, const std::set<std::string>* only) {
  ETPACK_ASSIGN_OR_RETURN(std::vector<ExternalRef> refs, ResolveExternalTensors(thin, data));
  auto taken = [&](const std::string& key) { return only == nullptr || only->count(key) != 0; };
  refs.erase(
      std::remove_if(refs.begin(), refs.end(),
                     [&](const ExternalRef& r) { return !taken(r.file->entries()[r.entry].key); }),
      refs.end());
  ETPACK_ASSIGN_OR_RETURN(PteInput in, thin.ToInput());
  const fb::Program& prog = thin.program();

  // What tensors still inside read: those buffers keep their bytes.
  std::vector<bool> constants_read(in.constants.size(), false);
  std::vector<bool> mutable_read(in.mutable_data.size(), false);
  ETPACK_RETURN_IF_ERROR(ForEachTensor(prog, [&](uint32_t, uint32_t, const fb::Tensor& t) {
    std::vector<bool>* read = IsConstantTensor(t)    ? &constants_read
                              : IsMutableWithInit(t) ? &mutable_read
                                                     : nullptr;
    if (read != nullptr && t.data_buffer_idx() < read->size()) (*read)[t.data_buffer_idx()] = true;
    return Status::OK();
  }));
  BufferPool constants(&in.constants, std::move(constants_read));
  BufferPool mutable_data(&in.mutable_data, std::move(mutable_read));

  // One source per stored content (a .ptd segment), shared by every key,
  // tensor and named-data entry holding it: planned once, read once.
  std::map<std::pair<const PtdFile*, uint32_t>, SourcePtr> contents;
  auto content = [&](const PtdFile& f, size_t entry) {
    SourcePtr& s = contents[{&f, f.entries()[entry].segment_index}];
    if (s == nullptr) s = f.EntrySource(entry);
    return s;
  };

  ProgramEdits edits;
  for (const ExternalRef& r : refs) {
    const fb::Tensor& t =
        *prog.execution_plan()->Get(r.plan)->values()->Get(r.value)->val_as_Tensor();
    BufferPool& pool = t.allocation_info() != nullptr ? mutable_data : constants;
    ETPACK_ASSIGN_OR_RETURN(const uint32_t idx,
                            pool.Place(t.data_buffer_idx(), content(*r.file, r.entry)));
    const std::string& key = r.file->entries()[r.entry].key;
    edits.tensors.push_back(
        MakeInternal(t, r.plan, r.value, idx, IsMadeUpKey(prog, r.plan, r.value, key)));
  }
  if (!edits.tensors.empty()) {
    ETPACK_ASSIGN_OR_RETURN(SourcePtr bytes, std::move(in.program).TakeFlatbuffer());
    Result<ProgramStructure> edited = EditProgram(bytes->contiguous(), bytes->size(), edits);
    if (!edited.ok()) return edited.status().WithContext(thin.name());
    in.program = std::move(edited).value();
  }

  // Blobs: what delegates look up by key. Which keys a delegate uses cannot
  // be seen, and the runtime offers it every key of every data file, so all
  // of them come in.
  std::set<std::string> own;
  for (const PteNamedData& n : thin.named_data()) own.insert(n.key);
  uint64_t blobs = 0;
  for (const PtdFile* f : data) {
    for (size_t i = 0; i < f->entries().size(); ++i) {
      const PtdFile::Entry& e = f->entries()[i];
      if (e.layout || IsIntegrityKey(e.key) || !taken(e.key)) continue;
      if (own.count(e.key) != 0) {
        return InvalidArgument(thin.name() + ": named-data key " + Quote(e.key) +
                               " is both the program's own and in " + f->name() +
                               "; the runtime refuses a key in two of the data maps it merges");
      }
      // As PteFile::ToInput keeps named data.
      in.named_data.push_back({e.key, content(*f, i),
                               ReadBackAlignment(f->layout().segments[e.segment_index].offset),
                               f->name() + ": key " + Quote(e.key)});
      ++blobs;
    }
    // Listed even when nothing of it is used, so that no output replaces it.
    in.read.push_back(f->RangeSource(0, f->size()));
  }
  if (stats != nullptr) {
    stats->tensors = refs.size();
    stats->buffers = constants.used() + mutable_data.used();
    stats->named_data = blobs;
  }
  return in;
}

}  // namespace etpack
