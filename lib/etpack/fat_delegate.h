// etpack/fat_delegate.h — a "fat" delegate: one model lowered for several
// backends in one NFAT payload (etpack/nfat.h), with the weights of all of
// them stored once, in the outer program (docs/formats.md §5.2).
//
// Each lowering brings its payload and its named data (the native
// program's EXTERNAL weights by fully-qualified name, a specialization's
// blobs). PlanFatDelegate packs the payloads into one container and merges
// the named data into one store under the store's rules: the same key with
// the same bytes is one entry, the same key with different bytes is an
// error naming both entries, and different keys with identical bytes share
// one buffer, so two specializations carrying the same 1 GiB weight add
// 1 GiB to the artifact, not 2. Only data of equal size is read to compare.
//
//   ETPACK_ASSIGN_OR_RETURN(FatDelegate fat, PlanFatDelegate(std::move(entries)));
//   input.delegates.push_back(fat.payload);              // {INLINE, i} in the program
//   input.named_data.insert(input.named_data.end(), fat.named_data.begin(),
//                           fat.named_data.end());       // or PtdInputOf(fat.named_data)
//   ETPACK_ASSIGN_OR_RETURN(PtePlan plan, PlanPte(std::move(input)));
//
// Nothing is materialized: the payload is an ArtifactSource that PlanPte nests,
// so every entry (a nested program's head and sources, a file range) is
// streamed into the output when the .pte is written.

#ifndef ETPACK_FAT_DELEGATE_H_
#define ETPACK_FAT_DELEGATE_H_

#include <string>
#include <vector>

#include "etpack/nfat.h"
#include "etpack/ptd.h"
#include "etpack/pte.h"
#include "etpack/source.h"
#include "etpack/status.h"
#include "etpack/writer.h"

namespace etpack {

// The backend id of the native entry, always entry 0 upstream: a Program
// flatbuffer without segments or extended header, its weights EXTERNAL.
inline constexpr char kNativeBackendId[] = "NativeBackend";

struct FatEntry {
  std::string backend_id;  // as NfatEntryInput::backend_id
  // The entry's bytes: WholeSourcePlan(bytes) for a blob or file range, or a
  // program's PtePlan::artifact (a program inside a delegate cannot reach
  // the outer file's segments, so it must plan to a bare flatbuffer: its
  // weights EXTERNAL, given below).
  ArtifactPlan payload;
  // The data this lowering needs at run time, looked up by key in the outer
  // program's named data (or a .ptd).
  std::vector<NamedData> named_data;
};

struct FatDelegate {
  // The delegate payload for PteInput::delegates: the NFAT container, or
  // for a single entry its payload as is (upstream writes no container
  // without specializations).
  SourcePtr payload;
  // Where each entry is inside the container; empty for a single entry.
  std::vector<NfatEntry> entries;
  // All entries' named data, in entry order, every content once: keys with
  // identical bytes share one source (so the planner stores it once without
  // reading it again). A key that several entries bring with the same bytes
  // appears once per entry; PlanPte and PlanPtd store it once.
  std::vector<NamedData> named_data;
};

// Fails with kInvalidArgument naming "NFAT entries[i] \"id\"" and the value
// for what PlanNfat refuses, and naming both entries (with their
// named_data index) for a key given different bytes; read errors of named
// data of equal size (compared) are returned as they come.
Result<FatDelegate> PlanFatDelegate(std::vector<FatEntry> entries, const NfatOptions& options = {});

// Named data as a .ptd's input: one buffer per distinct source, entries in
// order, no tensor layouts (the bytes are opaque blobs, as upstream stores
// a delegate's named data).
PtdInput PtdInputOf(const std::vector<NamedData>& named_data);

}  // namespace etpack

#endif  // ETPACK_FAT_DELEGATE_H_
