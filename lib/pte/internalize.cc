// The way back of a split program: InternalizeData (etpack/external_data.h)
// puts the bytes of every EXTERNAL tensor, and the data files' blobs, back
// inside the program, in the order of the named data before the split
// (MoveNamedDataOut records it where that order needs saying).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/quote.h"
#include "etpack/external_data.h"
#include "etpack/json.h"
#include "etpack/plan.h"
#include "integrity/table.h"
#include "plan/segments.h"
#include "program_etpack_generated.h"
#include "pte/constant_keys.h"
#include "pte/edited_input.h"
#include "pte/external_refs.h"
#include "pte/program_edit.h"
#include "pte/program_steps.h"
#include "pte/program_walk.h"

namespace etpack {

namespace fb = etpack::pte_fb;

namespace {

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

// Where the order record (kNamedDataOrderKey) is in `named`; named.size()
// when there is none.
size_t FindOrderRecord(const std::vector<NamedData>& named) {
  for (size_t i = 0; i < named.size(); ++i) {
    if (named[i].key == kNamedDataOrderKey) return i;
  }
  return named.size();
}

// The keys the order record `n` lists, in order.
Result<std::vector<std::string>> RecordedOrder(const NamedData& n, const std::string& file) {
  const std::string where = file + ": named data " + Quote(n.key);
  ETPACK_ASSIGN_OR_RETURN(const std::vector<uint8_t> bytes, ReadAll(*n.source));
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  Result<json::Value> doc = json::Parse(text, where);
  std::vector<std::string> keys;
  if (doc.ok() && doc->kind() == json::Kind::kArray) {
    for (const json::Value& k : doc->items()) {
      if (k.kind() != json::Kind::kString) break;
      keys.push_back(k.as_string());
    }
    if (keys.size() == doc->items().size()) return keys;
  }
  return Corrupt(where + " is not a JSON array of keys (the order of the named data before " +
                 "it moved to data files)" + (doc.ok() ? "" : ": " + doc.status().message()));
}

std::vector<uint8_t> EncodeOrder(const std::vector<std::string>& keys) {
  std::vector<json::Value> items;
  for (const std::string& k : keys) items.push_back(json::Value::String(k));
  const std::string text = json::Print(json::Value::Array(std::move(items)));
  return std::vector<uint8_t>(text.begin(), text.end());
}

// `named` in the order of `order`; entries it lacks after them, in their
// order.
void Reorder(const std::vector<std::string>& order, std::vector<NamedData>* named) {
  std::map<std::string_view, size_t> rank;
  for (size_t i = 0; i < order.size(); ++i) rank.emplace(order[i], i);
  auto rank_of = [&](const NamedData& n) {
    auto it = rank.find(n.key);
    return it == rank.end() ? order.size() : it->second;
  };
  std::stable_sort(named->begin(), named->end(),
                   [&](const NamedData& a, const NamedData& b) { return rank_of(a) < rank_of(b); });
}

// The way back of `in`'s named data when `in` records an order: that order,
// and the record gone once every key it names is inside.
Status ApplyOrderRecord(const std::string& file, PteInput* in) {
  std::vector<NamedData>& named = in->named_data;
  const size_t r = FindOrderRecord(named);
  if (r == named.size()) return Status::OK();
  ETPACK_ASSIGN_OR_RETURN(const std::vector<std::string> order, RecordedOrder(named[r], file));
  std::set<std::string_view> inside;
  for (const NamedData& n : named) inside.insert(n.key);
  const bool all_inside = std::all_of(order.begin(), order.end(),
                                      [&](const std::string& k) { return inside.count(k) != 0; });
  // Kept while some key is still outside: a later way back needs it.
  if (all_inside) named.erase(named.begin() + static_cast<std::ptrdiff_t>(r));
  Reorder(order, &named);
  return Status::OK();
}

}  // namespace

Status MoveNamedDataOut(PteInput* program, const std::set<std::string>& moved) {
  std::vector<NamedData>& named = program->named_data;
  std::vector<std::string> before;
  if (const size_t r = FindOrderRecord(named); r < named.size()) {
    ETPACK_ASSIGN_OR_RETURN(before, RecordedOrder(named[r], "program"));
  } else {
    for (const NamedData& n : named) before.push_back(n.key);
  }
  named.erase(std::remove_if(named.begin(), named.end(),
                             [&](const NamedData& n) {
                               return moved.count(n.key) != 0 || n.key == kNamedDataOrderKey;
                             }),
              named.end());
  // What the way back gives without a record: the keys left in place, then
  // the others in key order.
  std::vector<std::string> back, outside;
  std::set<std::string_view> inside;
  for (const NamedData& n : named) {
    back.push_back(n.key);
    inside.insert(n.key);
  }
  for (const std::string& k : before) {
    if (inside.count(k) == 0) outside.push_back(k);
  }
  std::sort(outside.begin(), outside.end());
  back.insert(back.end(), outside.begin(), outside.end());
  if (back == before) return Status::OK();
  named.push_back({std::string(kNamedDataOrderKey), OwnedSource(EncodeOrder(before)), 1,
                   "the order of the named data before it moved to data files"});
  return Status::OK();
}

Status Internalize(const PteFile& thin, const std::vector<const PtdFile*>& data,
                   InternalizeStats* stats, const std::set<std::string>* only,
                   EditedInput* edited) {
  ETPACK_ASSIGN_OR_RETURN(std::vector<ExternalRef> refs, ResolveExternalTensors(thin, data));
  auto taken = [&](const std::string& key) { return only == nullptr || only->count(key) != 0; };
  refs.erase(
      std::remove_if(refs.begin(), refs.end(),
                     [&](const ExternalRef& r) { return !taken(r.file->entries()[r.entry].key); }),
      refs.end());
  PteInput& in = edited->input;
  const fb::Program& prog = edited->program();

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

  for (const ExternalRef& r : refs) {
    const fb::Tensor& t =
        *prog.execution_plan()->Get(r.plan)->values()->Get(r.value)->val_as_Tensor();
    BufferPool& pool = t.allocation_info() != nullptr ? mutable_data : constants;
    ETPACK_ASSIGN_OR_RETURN(const uint32_t idx,
                            pool.Place(t.data_buffer_idx(), content(*r.file, r.entry)));
    const std::string& key = r.file->entries()[r.entry].key;
    edited->edits.tensors.push_back(
        MakeInternal(t, r.plan, r.value, idx, IsMadeUpKey(prog, r.plan, r.value, key)));
  }

  // Blobs: what delegates look up by key. Which keys a delegate uses cannot
  // be seen, and the runtime offers it every key of every data file, so all
  // of them come in.
  std::set<std::string> own;
  for (const PteNamedData& n : thin.named_data()) own.insert(n.key);
  std::vector<NamedData> blobs;
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
      blobs.push_back({e.key, content(*f, i),
                       ReadBackAlignment(f->layout().segments[e.segment_index].offset),
                       f->name() + ": key " + Quote(e.key)});
    }
    // Listed even when nothing of it is used, so that no output replaces it.
    in.read.push_back(f->RangeSource(0, f->size()));
  }
  // In key order, as MoveNamedDataOut expects: the order of the files
  // (shards named by hash) says nothing.
  std::sort(blobs.begin(), blobs.end(),
            [](const NamedData& a, const NamedData& b) { return a.key < b.key; });
  if (stats != nullptr) {
    stats->tensors = refs.size();
    stats->buffers = constants.used() + mutable_data.used();
    stats->named_data = blobs.size();
  }
  in.named_data.insert(in.named_data.end(), std::make_move_iterator(blobs.begin()),
                       std::make_move_iterator(blobs.end()));
  return ApplyOrderRecord(thin.name(), &in);
}

Result<PteInput> InternalizeData(const PteFile& thin, const std::vector<const PtdFile*>& data,
                                 InternalizeStats* stats, const std::set<std::string>* only) {
  ETPACK_ASSIGN_OR_RETURN(EditedInput edited, EditedInputOf(thin));
  ETPACK_RETURN_IF_ERROR(Internalize(thin, data, stats, only, &edited));
  return ApplyEdits(std::move(edited));
}

}  // namespace etpack
