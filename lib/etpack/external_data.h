// etpack/external_data.h — programs whose weights live in .ptd files.
//
// A .pte tensor whose extra_tensor_info.location is EXTERNAL carries no
// bytes: the runtime looks its fully_qualified_name up as a key in the
// .ptd files it was given (several merge into one key space) and insists
// that the entry's tensor_layout matches the tensor exactly (docs/formats.md
// §3.5). These functions check that relation ahead of time, and create it
// from a self-contained program.

#ifndef ETPACK_EXTERNAL_DATA_H_
#define ETPACK_EXTERNAL_DATA_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "etpack/ptd.h"
#include "etpack/ptd_file.h"
#include "etpack/pte.h"
#include "etpack/pte_file.h"
#include "etpack/status.h"

namespace etpack {

// Checks that `data` can be loaded together, as the runtime merges the keys
// of the data files it is given: kInvalidArgument naming the key and both
// files for a key in two of them. Where no file repeats a key, the set's
// keys are each in exactly one file (a sharded .ptd, PlanPtdFiles).
Status CheckDataSet(const std::vector<const PtdFile*>& data);

// Checks that every EXTERNAL tensor of `pte` resolves in `data`, as the
// runtime would: the keys of all files are merged (CheckDataSet); every EXTERNAL tensor has a
// non-empty fully_qualified_name that is one of those keys, the entry has
// a tensor_layout, its scalar_type, sizes and dim_order equal the tensor's,
// and its segment holds at least the tensor's nbytes. The first failure is
// returned; it names the .pte, the tensor (execution_plan[p].values[v]),
// the key, the .ptd and both layouts where they differ. kNotFound for a key
// in none of the files; kInvalidArgument when the files do not fit together
// (a key in two files, an EXTERNAL tensor without a key, no layout or a
// different one); kCorrupt for an entry too small for its tensor.
// `resolved`, when given, receives the number of EXTERNAL tensors checked.
Status CheckExternalReferences(const PteFile& pte, const std::vector<const PtdFile*>& data,
                               uint64_t* resolved = nullptr);

// Splits `pte` into a program without constant bytes and a .ptd holding
// them (`etpack repack --external-constants`). Every constant tensor
// (data_buffer_idx > 0, no allocation_info, not already EXTERNAL) moves:
//   - its key is extra_tensor_info.fully_qualified_name when non-empty,
//     else a generated "constant.<method name>.<value index>" (made unique
//     against every name in the program);
//   - tensors sharing a constant buffer share one .ptd buffer; each
//     distinct key gets its own entry with the tensor's layout and
//     `alignment` (a power of two); tensors with the same key must share
//     buffer and layout;
//   - the tensor becomes {location: EXTERNAL, fully_qualified_name: key}
//     (its other extra_tensor_info fields kept) with data_buffer_idx = the
//     key's 0-based position among the distinct keys moved;
//   - constant_buffer keeps only the empty placeholder.
// The data sources read from `pte`'s file and keep what they need alive.
Result<std::pair<PteInput, PtdInput>> ExternalizeConstants(const PteFile& pte,
                                                           uint64_t alignment = 16);

// The same split for a program not written yet: `input` as PlanPte takes it
// (move it in). The constants' sources move to the .ptd input as they are,
// so planning and writing the pair reads each constant byte once, and no
// .pte holding them is ever written. The program is planned once to be
// checked (reading no bulk data): what PlanPte refuses for `input` is
// returned as PlanPte's error. Split errors start with "program: ".
Result<std::pair<PteInput, PtdInput>> ExternalizeConstants(PteInput input, uint64_t alignment = 16);

// Constant tensors by (execution_plan index, value index), each with the
// key it is to be found by in a .ptd.
using TensorKeys = std::map<std::pair<uint32_t, uint32_t>, std::string>;

// `pte`'s program with the constant tensors of `keys` moved out, as
// `etpack share` (etpack/share.h) moves them; every other tensor stays as
// it is. A moved tensor becomes {location: EXTERNAL, fully_qualified_name:
// its key} (its other extra_tensor_info fields kept; a missing
// extra_tensor_info is created with default fields) and keeps its
// data_buffer_idx; a constant buffer that no tensor still inside reads is
// emptied (a source of 0 bytes). The bytes are the caller's to store, under
// the keys, with the tensors' layouts. Tensors given one key must have the
// same layout and bytes (kInvalidArgument naming both otherwise, as
// ExternalizeConstants); a (plan, value) that is not a constant tensor is
// kInvalidArgument naming it. The sources read from `pte`'s file.
Result<PteInput> ExternalizeTensors(const PteFile& pte, const TensorKeys& keys);

// A key etpack makes up from a tensor's content (`etpack share`, for a
// constant without a name meaning the same bytes and layout in every
// program) starts with this; the way back (InternalizeData) drops it.
inline constexpr std::string_view kContentKeyPrefix = "etpack.content.";

// The named-data key under which a program whose named data moved to data
// files records the order of its named data before the move: a compact JSON
// array of the keys. Written only where the way back (InternalizeData) would
// not restore that order by itself (MoveNamedDataOut), so a program whose
// order needs no record is byte for byte what it was without this rule. The
// runtime offers it to delegates as any key; no delegate asks for it.
inline constexpr std::string_view kNamedDataOrderKey = "etpack.named_data_order";

// Takes the named data whose keys `moved` holds out of `program`, bound for
// data files (`etpack share`, `pack --external-named-data`), so that the
// way back restores the order the program had: the way back puts the data
// files' blobs after the program's own named data in key order; where that
// is not the order before the move, it is recorded under kNamedDataOrderKey.
// A record `program` already has stays the order to restore. kCorrupt for a
// record that does not parse (naming it).
Status MoveNamedDataOut(PteInput* program, const std::set<std::string>& moved);

// What InternalizeData brought inside.
struct InternalizeStats {
  uint64_t tensors = 0;     // EXTERNAL tensors made INTERNAL
  uint64_t buffers = 0;     // constant (or mutable) buffers they now read
  uint64_t named_data = 0;  // named-data keys taken from the data files
};

// The way back of ExternalizeConstants and of `etpack share`
// (`etpack repack THIN.pte --data X.ptd ...`): `thin` as a self-contained
// program, every byte it uses inside. `data` must load together
// (CheckDataSet) and every EXTERNAL tensor must resolve in it, with the
// errors of CheckExternalReferences (naming the .pte, the tensor, the key
// and the files). Then:
//   - each EXTERNAL tensor becomes INTERNAL (extra_tensor_info.location =
//     SEGMENT) and reads its entry's bytes from a constant buffer (a
//     memory-planned tensor, one with allocation_info: from a mutable
//     buffer, as its initial value). The buffer is the tensor's own
//     data_buffer_idx when that buffer is past the placeholder, in range and
//     read by no tensor still inside (`share` leaves the index and empties
//     the buffer; tensors keeping one index share it; that it is empty
//     cannot be read back, as an empty buffer lies at the next one's
//     offset, but one nothing reads holds nothing the program uses);
//     otherwise one appended, one per stored content: tensors whose keys
//     hold the same .ptd segment share it (ExternalizeConstants gives
//     0-based indices and keeps no buffers, so its tensors all land here,
//     in program order);
//   - a key etpack made up is dropped: one starting with kContentKeyPrefix,
//     or the "constant.<method>.<value>[.<n>]" ExternalizeConstants gives
//     this very tensor when it has no name; an extra_tensor_info left with
//     only default fields is dropped too. An exporter's name stays;
//   - every blob (entry without a tensor_layout) of the files, integrity
//     tables aside, joins the program's named data after its own keys, in
//     key order (whatever the order of the files), aligned as its segment's
//     offset in its file shows (as PteFile::ToInput keeps named data): a
//     delegate's use of a key cannot be seen, and the runtime offers a
//     delegate every key of every data file. A blob whose key the program's
//     own named data has is kInvalidArgument (the runtime refuses a key in
//     two of the maps it merges). Entries with a layout that no EXTERNAL
//     tensor uses are left out;
//   - where the program records the order of its named data
//     (kNamedDataOrderKey, MoveNamedDataOut), its named data comes back in
//     that order (keys the record lacks after the others, as above) and the
//     record is dropped once every key it names is inside (kCorrupt naming
//     the file and the key for a record that is not a JSON array of keys).
// The sources are ranges of the files (nothing is read here); the result's
// `read` lists `thin` and every file of `data`, so a plan made from it
// replaces none of them. A program without EXTERNAL tensors and without
// blobs to take comes back as ToInput() gives it. `stats`, when given,
// receives the counts. The sources keep what they read alive.
// `only`, when given, limits what comes inside to the keys it holds: an
// EXTERNAL tensor whose key it lacks stays EXTERNAL as it is (it must still
// resolve in `data`), and a blob whose key it lacks is not taken (`etpack
// share` brings a variant's own data back into its thin program so,
// etpack/share.h).
Result<PteInput> InternalizeData(const PteFile& thin, const std::vector<const PtdFile*>& data,
                                 InternalizeStats* stats = nullptr,
                                 const std::set<std::string>* only = nullptr);

// A program and the .ptd files that hold its external data, planned
// together so that they are written as one unit: every front end that
// writes a .pte with its data (repack --external-constants, pack
// --external-named-data, the Python module, the C API's
// etpack_pte_write_with_data) plans through here and writes files() with
// WriteArtifactFiles, so a program never appears without its
// data, nor data beside an old program.
struct ExternalDataFile {
  std::string name;  // the file's destination; names it in errors
  PtdInput input;
  // Non-zero: written as shards of at most this many bytes each, named
  // after `name` (PtdOptions::max_shard_bytes, PlanPtdFiles).
  uint64_t max_shard_bytes = 0;
};

struct ProgramWithDataPlan {
  std::string program_name;
  PtePlan program;
  PteOptions program_options;  // as planned (for reports)
  struct Data {
    std::string name;
    PtdPlan plan;
    PtdOptions options;
    size_t entries = 0;  // entries of its input it holds
  };
  // In the order given; a sharded file is its shards, in order.
  std::vector<Data> data;

  // Data files first, in order, then the program: the order to publish in.
  // The pointers refer into this plan.
  ArtifactFiles files() const;
};

// Plans the program and every data file before anything is written. Each
// .ptd takes the program's segment_alignment, integrity_table and
// strictest_shared_alignment, and its own max_shard_bytes. A planning error is the planner's,
// prefixed with the name of the file it is about (`program_context`, or when empty `program_name`,
// for the program; the data file's name). Names must differ (kInvalidArgument naming the name given
// twice), and each key must be in one file only, as CheckDataSet asks of the files once written
// (kInvalidArgument naming the key and both files).
Result<ProgramWithDataPlan> PlanProgramWithData(std::string program_name, PteInput program,
                                                const PteOptions& options,
                                                std::vector<ExternalDataFile> data,
                                                const std::string& program_context = "");

// The layout of every tensor of `program` whose data is EXTERNAL, by its
// fully_qualified_name: what a .ptd entry for it must state. Errors name
// the field of a malformed program.
Result<std::map<std::string, TensorLayout>> ExternalTensorLayouts(const ProgramStructure& program);

// The PtdOptions a program's data files get (see PlanProgramWithData).
PtdOptions DataOptionsOf(const PteOptions& options);

}  // namespace etpack

#endif  // ETPACK_EXTERNAL_DATA_H_
