// etpack/nfat.h — NFAT containers: one delegate payload holding the same
// model lowered for several backends (the "fat PTE" of docs/formats.md §5).
//
// Layout, little-endian, nothing implicit:
//
//   [0, 4)                 "NFAT"
//   [4, 8)                 u32 version = 1
//   [8, 12)                u32 count, at least 1
//   [12, 12 + 48 count)    per entry: backend id (32 bytes, ASCII, NUL-padded
//                          on the right, no NUL when exactly 32 long), u64
//                          offset, u64 length
//   [12 + 48 count, ...)   the data section; an entry's bytes are
//                          [data + offset, data + offset + length)
//
// Writing is plan-first like every other artifact: PlanNfat lays the
// container out from sizes alone and returns an ArtifactPlan whose
// placements are the entries' own sources (a nested program's head and
// placements included), so a container of any size is streamed, never
// materialized. Use the plan as a delegate payload through ArtifactSource
// (etpack/artifact_source.h), or write it alone with WriteArtifactFile.
//
// Reading: NfatContainer validates a payload completely before handing out
// entries, reading only the preamble and the entry table, and never a byte
// outside the payload.

#ifndef ETPACK_NFAT_H_
#define ETPACK_NFAT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "etpack/source.h"
#include "etpack/status.h"
#include "etpack/writer.h"

namespace etpack {

inline constexpr uint32_t kNfatVersion = 1;
inline constexpr uint64_t kNfatMaxBackendIdLength = 32;

// One entry to pack: a backend id and its payload.
struct NfatEntryInput {
  // 1 to 32 ASCII characters (bytes 0x01-0x7f): the id the runtime picks
  // the entry by, e.g. "NativeBackend" or "MLXBackend".
  std::string backend_id;
  // The payload as a plan: plain bytes are NfatBytes(source) below; a nested
  // program being exported is its PtePlan's artifact, streamed from its own
  // sources (the native entry is a Program without segments, so its plan
  // is a head and nothing else).
  ArtifactPlan payload;
};

// An entry whose payload is `bytes` (memory, a file range, a generator).
// REQUIRES: bytes != nullptr.
NfatEntryInput NfatBytes(std::string backend_id, SourcePtr bytes);

struct NfatOptions {
  // Every non-empty payload starts at a multiple of this from the start of
  // the container; padding is zeros, after the entry table and between
  // payloads, never after the last. Power of two; 1 packs payloads back to
  // back as the reference packer does (byte-identical output).
  //
  // 64 by default: a payload used in place from a mapped file needs 16 for
  // a Program flatbuffer (the runtime's max_align_t check), and backends'
  // weight and kernel blobs commonly want 16 to 64 (cache lines, wide SIMD
  // loads); 64 covers both at a cost of at most 63 bytes per entry. The
  // container itself sits at a multiple of the outer .pte's segment
  // alignment (128 by default), so the offsets hold in the file too. A
  // nested plan that wants more (a .pte with 128-aligned segments, or
  // page-aligned blobs to mmap) needs a larger value here.
  uint64_t payload_alignment = 64;
};

// Where one entry's bytes are. Planned and read containers report the same.
struct NfatEntry {
  std::string backend_id;
  uint64_t offset = 0;  // as in the table: from the start of the data section
  uint64_t length = 0;
  uint64_t position = 0;  // from the start of the container: data section + offset
  // The largest power of two `position` is a multiple of: what the entry
  // may rely on when the container itself is at least that aligned.
  uint64_t alignment = 1;
};

struct NfatPlan {
  ArtifactPlan artifact;           // the whole container
  std::vector<NfatEntry> entries;  // in table order
};

// Pass one. Entries keep their order in the table and in the data section.
// Fails with kInvalidArgument naming entries[i] and the value for an empty,
// longer than 32, non-ASCII or repeated backend id, an invalid payload plan,
// no entries at all, or a payload_alignment that is not a power of two;
// kOutOfRange when the container would not fit in 64 bits.
Result<NfatPlan> PlanNfat(const std::vector<NfatEntryInput>& entries,
                          const NfatOptions& options = {});

// True when `payload` starts with the NFAT magic: how a reader tells an
// NFAT container from a bare Program ("ET12" at bytes 4..7). Reads at most
// 4 bytes; a payload shorter than that is not a container.
Result<bool> HasNfatMagic(const Source& payload);

// A validated container over a payload held elsewhere.
class NfatContainer {
 public:
  // Reads and checks the preamble and the entry table: magic, version,
  // count against the payload size, each id ASCII, non-empty and NUL-padded,
  // each entry inside the payload, no two non-empty entries overlapping.
  // Every failure is kCorrupt naming `name` (e.g. "model.pte: delegate 0"),
  // the entry (index and id) and the value. Reads only inside the payload.
  static Result<NfatContainer> Open(SourcePtr payload, std::string name = "NFAT container");
  // The same over bytes in memory; `keep_alive` owns them (may be null when
  // the caller keeps them alive longer than the container and its sources).
  static Result<NfatContainer> FromMemory(const uint8_t* data, uint64_t size,
                                          std::shared_ptr<const void> keep_alive,
                                          std::string name = "NFAT container");

  const std::string& name() const { return name_; }
  uint64_t size() const { return payload_->size(); }
  uint32_t version() const { return kNfatVersion; }
  // Start of the data section: 12 + 48 * count.
  uint64_t data_offset() const { return data_offset_; }
  const std::vector<NfatEntry>& entries() const { return entries_; }

  // The index of the first entry with this id (PlanNfat never repeats one;
  // other packers might); kNotFound listing the ids.
  Result<size_t> Find(std::string_view backend_id) const;

  // Entry i's bytes, read from the payload on demand (a file range stays a
  // file range). REQUIRES: i < entries().size().
  SourcePtr EntrySource(size_t i) const;

 private:
  NfatContainer() = default;
  std::string name_;
  SourcePtr payload_;
  uint64_t data_offset_ = 0;
  std::vector<NfatEntry> entries_;
};

}  // namespace etpack

#endif  // ETPACK_NFAT_H_
