// In-place weight update: match every new tensor to a range of the file,
// refuse the whole update on the first mismatch, then write a new file that
// differs from the old one only in the changed ranges (and the integrity
// table) and publish it over the old one.
//
// Everything that can refuse runs before the output is created, so a
// refusal leaves no trace. The new file is a plan over the old one (its
// base) that the writer writes like any other: a clone of the old file
// (shared extents, only the changes written) where the file system can,
// else a streamed copy whose unchanged ranges are read from the old file
// (copy_file_range) and whose changed ranges come from the new weights.

#include "etpack/update.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/quote.h"
#include "etpack/artifact_kind.h"
#include "etpack/external_data.h"
#include "etpack/integrity.h"
#include "etpack/ptd_file.h"
#include "etpack/pte_file.h"
#include "etpack/safetensors.h"
#include "etpack/writer.h"
#include "flatbuffer/layout_of.h"
#include "integrity/hash.h"
#include "integrity/table.h"
#include "program_etpack_generated.h"
#include "pte/constant_keys.h"
#include "pte/program_walk.h"

namespace etpack {
namespace {

// A keyed range of the file that an update may replace.
struct Slot {
  std::string key;
  std::optional<TensorLayout> layout;  // absent for blobs
  uint64_t offset = 0;                 // from the file's first byte
  uint64_t size = 0;                   // the tensor's nbytes, a blob's whole size
};

// A range of the new file and where its bytes come from.
struct Patch {
  uint64_t offset = 0;
  SourcePtr bytes;
};

// A slot's layout ("a blob" for none) and size, for messages.
std::string SlotText(const std::optional<TensorLayout>& layout, uint64_t size) {
  return (layout ? DescribeLayout(*layout) : std::string("a blob")) + " (" + std::to_string(size) +
         " bytes)";
}

// Names the file a new tensor comes from, for messages.
std::string Origin(const Source& source) {
  const FileRange* r = source.file_range();
  return r != nullptr ? r->path : "the new weights";
}

Status AddSlot(std::vector<Slot>* slots, std::map<std::string, size_t>* by_key, Slot slot,
               const std::string& path) {
  auto [it, added] = by_key->emplace(slot.key, slots->size());
  if (!added) {
    const Slot& other = (*slots)[it->second];
    if (other.offset == slot.offset && other.size == slot.size) return Status::OK();
    return InvalidArgument(path + ": key " + Quote(slot.key) +
                           " names two items of the file; it cannot be updated by key");
  }
  slots->push_back(std::move(slot));
  return Status::OK();
}

Result<std::vector<Slot>> SlotsOf(const PtdFile& file) {
  std::vector<Slot> slots;
  std::map<std::string, size_t> by_key;
  for (size_t i = 0; i < file.entries().size(); ++i) {
    const PtdFile::Entry& e = file.entries()[i];
    if (IsIntegrityKey(e.key)) continue;
    const auto& seg = file.layout().segments[e.segment_index];
    Slot s{e.key, e.layout, file.layout().segment_base_offset + seg.offset, seg.size};
    if (e.layout) {
      ETPACK_ASSIGN_OR_RETURN(s.size, LayoutNbytes(*e.layout, file.name() + ": " + Quote(e.key)));
    }
    ETPACK_RETURN_IF_ERROR(AddSlot(&slots, &by_key, std::move(s), file.name()));
  }
  return slots;
}

Result<std::vector<Slot>> SlotsOf(const PteFile& file) {
  std::vector<Slot> slots;
  std::map<std::string, size_t> by_key;
  // The constants, by the keys `repack --external-constants` gives them
  // (ConstantKeys: one rule for both), from a walk of the verified program.
  const pte_fb::Program& program = file.program();
  ConstantKeys keys(program);
  ETPACK_RETURN_IF_ERROR(
      ForEachTensor(program, [&](uint32_t p, uint32_t v, const pte_fb::Tensor& t) -> Status {
        if (!IsConstantTensor(t)) return Status::OK();
        Slot s;
        s.key = keys.Of(p, v, t);
        const std::string what = file.name() + ": " + TensorPath(p, v);
        const uint32_t idx = t.data_buffer_idx();
        if (idx >= file.constant_buffers().size()) {
          return Corrupt(what + ".data_buffer_idx = " + std::to_string(idx) +
                         " is out of range: the file has " +
                         std::to_string(file.constant_buffers().size()) + " constant buffers");
        }
        ETPACK_ASSIGN_OR_RETURN(TensorLayout layout, LayoutOf(t, what));
        ETPACK_ASSIGN_OR_RETURN(s.size, LayoutNbytes(layout, file.name() + ": " + Quote(s.key)));
        s.layout = std::move(layout);
        s.offset = file.constant_buffers()[idx].offset;
        return AddSlot(&slots, &by_key, std::move(s), file.name());
      }));
  for (const PteNamedData& d : file.named_data()) {
    if (IsIntegrityKey(d.key)) continue;
    const auto& seg = file.layout().segments[d.segment_index];
    ETPACK_RETURN_IF_ERROR(
        AddSlot(&slots, &by_key,
                Slot{d.key, std::nullopt, file.layout().segment_base_offset + seg.offset, seg.size},
                file.name()));
  }
  return slots;
}

// The bytes of [offset, offset + size) of the file as the update leaves it:
// the old file with `patches` (sorted, disjoint) laid over it.
SourcePtr Overlay(SourcePtr old, const std::vector<Patch>& patches, uint64_t offset,
                  uint64_t size) {
  return GeneratorSource(
      "the updated bytes", size,
      [old, &patches, offset](uint64_t at, uint8_t* dst, size_t n) -> Status {
        const uint64_t begin = offset + at, end = begin + n;
        ETPACK_RETURN_IF_ERROR(old->ReadAt(begin, dst, n));
        for (const Patch& p : patches) {
          const uint64_t pb = p.offset, pe = p.offset + p.bytes->size();
          if (pe <= begin || pb >= end) continue;
          const uint64_t from = std::max(pb, begin), to = std::min(pe, end);
          ETPACK_RETURN_IF_ERROR(p.bytes->ReadAt(from - pb, dst + (from - begin), to - from));
        }
        return Status::OK();
      });
}

// The integrity table's new bytes as a patch, when the file has a table and
// a part it covers changed.
Result<std::optional<Patch>> TablePatch(const ArtifactFile& file,
                                        const std::vector<ArtifactPart>& parts, SourcePtr old,
                                        const std::vector<Patch>& patches) {
  const ArtifactPart* table = nullptr;
  for (const ArtifactPart& p : parts) {
    if (p.is_table) table = &p;
  }
  if (table == nullptr) return std::optional<Patch>();
  ETPACK_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes,
                          ReadAll(*file.RangeSource(table->offset, table->size)));
  Result<std::vector<IntegrityEntry>> decoded = DecodeIntegrityTable(bytes);
  if (!decoded.ok()) return decoded.status().WithContext(file.name() + ": " + table->name);
  std::vector<IntegrityEntry> entries = std::move(decoded).value();
  for (IntegrityEntry& e : entries) {
    const bool touched = std::any_of(patches.begin(), patches.end(), [&](const Patch& p) {
      return p.offset < e.offset + e.size && e.offset < p.offset + p.bytes->size();
    });
    if (!touched) continue;
    if (e.offset > file.size() || e.size > file.size() - e.offset) {
      return Corrupt(file.name() + ": " + table->name + " covers [" + std::to_string(e.offset) +
                     ", +" + std::to_string(e.size) + "), past the end of the file");
    }
    ETPACK_ASSIGN_OR_RETURN(
        std::vector<uint8_t> d,
        HashSource(*Overlay(old, patches, e.offset, e.size), HashKind::kXxh3_64));
    e.xxh3 = Xxh3Value(d);
  }
  std::vector<uint8_t> encoded = EncodeIntegrityTable(entries);
  if (encoded.size() != table->size) {
    return Corrupt(file.name() + ": " + table->name + " is " + std::to_string(table->size) +
                   " bytes, but its entries make " + std::to_string(encoded.size()));
  }
  return std::optional<Patch>(Patch{table->offset, OwnedSource(std::move(encoded))});
}

// The open file the artifact's bytes are read through.
const InputFile* InputOf(const ArtifactFile& file) {
  const FileRange* r = file.RangeSource(0, file.size())->file_range();
  return r != nullptr ? r->file : nullptr;
}

Result<UpdateReport> Update(const ArtifactFile& file, const std::vector<Slot>& slots,
                            const std::vector<ArtifactPart>& parts, const PtdInput& weights,
                            const WriteOptions& options, const Env& env) {
  const std::string& path = file.name();
  std::map<std::string, size_t> slot_of;
  std::map<uint64_t, std::vector<size_t>> sharing;  // offset -> slots stored there
  for (size_t i = 0; i < slots.size(); ++i) {
    slot_of.emplace(slots[i].key, i);
    // An empty tensor may sit at the offset of the next one's bytes; it
    // holds none of them, so it never changes.
    if (slots[i].size > 0) sharing[slots[i].offset].push_back(i);
  }

  UpdateReport report;
  report.file_size = file.size();
  // Match every key; refuse before anything is written.
  std::map<size_t, SourcePtr> given;  // slot -> its new bytes (exactly slot.size)
  for (const PtdEntry& e : weights.entries) {
    if (e.buffer_index >= weights.buffers.size() || !weights.buffers[e.buffer_index]) {
      return InvalidArgument(path + ": key " + Quote(e.key) + ": buffer_index " +
                             std::to_string(e.buffer_index) + " is out of range");
    }
    const SourcePtr& buffer = weights.buffers[e.buffer_index];
    auto it = slot_of.find(e.key);
    if (it == slot_of.end()) {
      return NotFound(path + ": key " + Quote(e.key) + " (from " + Origin(*buffer) +
                      ") is not in the file: no tensor or named data has it");
    }
    const Slot& slot = slots[it->second];
    uint64_t size = buffer->size();
    if (e.layout) {
      ETPACK_ASSIGN_OR_RETURN(size, LayoutNbytes(*e.layout, Origin(*buffer) + ": " + Quote(e.key)));
      if (size > buffer->size()) {
        return InvalidArgument(Origin(*buffer) + ": key " + Quote(e.key) + ": " +
                               DescribeLayout(*e.layout) + " needs " + std::to_string(size) +
                               " bytes, but its data has " + std::to_string(buffer->size()));
      }
    }
    const bool match = (slot.layout && e.layout) ? *slot.layout == *e.layout : slot.size == size;
    if (!match) {
      return InvalidArgument(path + ": key " + Quote(e.key) + ": the file has " +
                             SlotText(slot.layout, slot.size) + ", " + Origin(*buffer) + " has " +
                             SlotText(e.layout, size) + "; an update keeps every layout");
    }
    if (!given.emplace(it->second, SliceSource(buffer, 0, size)).second) {
      return InvalidArgument(path + ": key " + Quote(e.key) + " is given twice");
    }
    if (size == 0) ++report.tensors_unchanged;
  }

  // Keys stored in one range (deduplicated constants, shared .ptd segments)
  // change together or not at all.
  SourcePtr old = file.RangeSource(0, file.size());
  std::vector<Patch> patches;
  for (const auto& [offset, members] : sharing) {
    const SourcePtr* first = nullptr;
    std::string first_key;
    for (size_t m : members) {
      auto g = given.find(m);
      if (g == given.end()) continue;
      if (first == nullptr) {
        first = &g->second;
        first_key = slots[m].key;
      } else {
        ETPACK_ASSIGN_OR_RETURN(bool same, SameBytes(**first, *g->second));
        if (!same) {
          return InvalidArgument(path + ": keys " + Quote(first_key) + " and " +
                                 Quote(slots[m].key) +
                                 " share their bytes in the file; give them the same new bytes");
        }
      }
    }
    if (first == nullptr) continue;
    for (size_t m : members) {
      if (given.count(m) == 0) {
        return InvalidArgument(path + ": key " + Quote(first_key) +
                               " shares its bytes in the file with " + Quote(slots[m].key) +
                               ", which the new weights do not give; give both the same new "
                               "bytes or neither");
      }
    }
    const Slot& slot = slots[members.front()];
    ETPACK_ASSIGN_OR_RETURN(bool same,
                            SameBytes(*SliceSource(old, slot.offset, slot.size), **first));
    if (same) {
      report.tensors_unchanged += members.size();
      report.bytes_unchanged += slot.size;
    } else {
      report.tensors_rewritten += members.size();
      report.bytes_rewritten += slot.size;
      patches.push_back({slot.offset, *first});
    }
  }
  if (patches.empty()) return report;
  std::sort(patches.begin(), patches.end(),
            [](const Patch& a, const Patch& b) { return a.offset < b.offset; });
  for (size_t i = 1; i < patches.size(); ++i) {
    if (patches[i - 1].offset + patches[i - 1].bytes->size() > patches[i].offset) {
      return InvalidArgument(path + ": two updated items overlap at offset " +
                             std::to_string(patches[i].offset));
    }
  }
  ETPACK_ASSIGN_OR_RETURN(std::optional<Patch> table, TablePatch(file, parts, old, patches));
  if (table) {
    if (table->offset < patches.back().offset + patches.back().bytes->size()) {
      return Corrupt(path + ": the integrity table is not after every segment");
    }
    patches.push_back(std::move(*table));
  }

  // The new file: the old one with the patches laid over it, in its place.
  ArtifactPlan plan;
  plan.file_size = file.size();
  plan.base = old;
  plan.replaces_base = true;
  for (Patch& p : patches) plan.placements.push_back({p.offset, 1, std::move(p.bytes)});
  if (const InputFile* in = InputOf(file)) {
    if (const uint64_t links = in->Links(); links > 1) report.other_links = links - 1;
  }
  WriteStats stats;
  WriteOptions write = options;
  write.stats = &stats;
  ETPACK_RETURN_IF_ERROR(WriteArtifactFiles({{path, &plan}}, write, env));
  if (options.stats != nullptr) *options.stats = stats;
  report.cloned = stats.bytes_cloned > 0;
  report.bytes_written = stats.bytes - stats.bytes_cloned;
  report.written = true;
  return report;
}

// Opens the artifact at `path` and updates it, or says (nullopt) that the
// file opened is not the one `lock` holds: it was replaced in between.
Result<std::optional<UpdateReport>> UpdateLocked(const std::string& path, const PtdInput& weights,
                                                 const WriteOptions& options, const Env& env,
                                                 const UpdateLock& lock) {
  // A .bpte is refused by its kind, before its reader validates it whole.
  SourcePtr file;
  ETPACK_ASSIGN_OR_RETURN(const ArtifactKind kind, DetectArtifactKind(path, &file, env));
  if (kind == ArtifactKind::kBpte) {
    return InvalidArgument(path +
                           ": a bundled program (.bpte) cannot be updated; update its .pte "
                           "and bundle it again");
  }
  ETPACK_ASSIGN_OR_RETURN(const OpenedArtifact opened, OpenArtifact(kind, path, std::move(file)));
  auto update = [&](const auto& artifact) -> Result<std::optional<UpdateReport>> {
    const InputFile* in = InputOf(artifact);
    if (in != nullptr && !lock.Covers(*in)) return std::optional<UpdateReport>();
    ETPACK_ASSIGN_OR_RETURN(std::vector<Slot> slots, SlotsOf(artifact));
    ETPACK_ASSIGN_OR_RETURN(UpdateReport r,
                            Update(artifact, slots, PartsOf(artifact), weights, options, env));
    return std::optional<UpdateReport>(r);
  };
  if (kind == ArtifactKind::kPte) return update(*opened.pte);
  return update(*opened.ptd);
}

}  // namespace

Result<UpdateReport> UpdateWeights(const std::string& path, const PtdInput& weights,
                                   const WriteOptions& options, const Env& env) {
  // Each round that finds the file replaced after its lock was taken (by
  // the update that held the lock before, or by another writer) starts
  // over on the new file; only a file replaced without end runs out.
  constexpr int kMaxRounds = 100;
  for (int round = 0; round < kMaxRounds; ++round) {
    ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<UpdateLock> lock,
                            env.out().LockForUpdate(path, options.cancel));
    ETPACK_ASSIGN_OR_RETURN(std::optional<UpdateReport> report,
                            UpdateLocked(path, weights, options, env, *lock));
    if (report) return *report;
  }
  return Status(Code::kIoError, path + ": the file was replaced " + std::to_string(kMaxRounds) +
                                    " times while the update waited for it; nothing was written");
}

Result<PtdInput> ReadWeights(const std::vector<std::string>& paths, const Env& env) {
  PtdInput out;
  std::map<std::string, std::string> origin;  // key -> the file it came from
  auto add = [&](const std::string& key, std::optional<TensorLayout> layout, SourcePtr data,
                 const std::string& file) -> Status {
    auto [it, added] = origin.emplace(key, file);
    if (!added) {
      return InvalidArgument("key " + Quote(key) + " is in both " + it->second + " and " + file);
    }
    out.entries.push_back({key, static_cast<uint32_t>(out.buffers.size()), 1, std::move(layout)});
    out.buffers.push_back(std::move(data));
    return Status::OK();
  };
  std::vector<std::string> checkpoint;
  for (const std::string& p : paths) {
    ETPACK_ASSIGN_OR_RETURN(const SourcePtr opened, FileSource(env.in(), p));
    ETPACK_ASSIGN_OR_RETURN(const std::optional<ArtifactKind> kind, ArtifactKindOrNone(p, *opened));
    if (!kind) {
      checkpoint.push_back(p);  // not an artifact: .safetensors or an index
      continue;
    }
    if (*kind != ArtifactKind::kPtd) {
      return InvalidArgument(p +
                             ": new weights come from .safetensors, *.index.json or .ptd "
                             "files; this is a program");
    }
    ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<PtdFile> file, PtdFile::Open(p, opened));
    for (size_t i = 0; i < file->entries().size(); ++i) {
      const PtdFile::Entry& e = file->entries()[i];
      if (IsIntegrityKey(e.key)) continue;
      ETPACK_RETURN_IF_ERROR(add(e.key, e.layout, file->EntrySource(i), p));
    }
    out.read.push_back(file->RangeSource(0, file->size()));
  }
  if (!checkpoint.empty()) {
    std::vector<SourcePtr> read;
    ETPACK_ASSIGN_OR_RETURN(std::vector<SafetensorsTensor> tensors,
                            ReadCheckpoint(checkpoint, &read, env));
    for (SafetensorsTensor& t : tensors) {
      ETPACK_RETURN_IF_ERROR(add(t.name, t.layout, t.data, t.file));
    }
    for (SourcePtr& r : read) out.read.push_back(std::move(r));
  }
  return out;
}

}  // namespace etpack
