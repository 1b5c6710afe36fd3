// etpack/safetensors.h — Hugging Face safetensors checkpoints as .ptd input.
//
// Reads only headers: tensor bytes are never loaded. Each tensor becomes a
// .ptd entry whose buffer is a file-range source into its shard, so the
// writer moves the bytes file to file (copy_file_range where the kernel
// offers it, read-only windows otherwise).
//
// safetensors layout: u64 little-endian N, then N bytes of JSON
// {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]},
//  "__metadata__": {...}}, then the data; offsets are relative to the data.

#ifndef ETPACK_SAFETENSORS_H_
#define ETPACK_SAFETENSORS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "etpack/env.h"
#include "etpack/ptd.h"
#include "etpack/source.h"
#include "etpack/status.h"

namespace etpack {

// Header JSON larger than this is refused (hostile or corrupt file).
inline constexpr uint64_t kMaxSafetensorsHeader = 100'000'000;

struct SafetensorsTensor {
  std::string name;
  std::string dtype;    // as written: "F32", "BF16", ...
  TensorLayout layout;  // mapped scalar type, shape, identity dim_order
  SourcePtr data;       // the tensor's bytes in its shard
  std::string file;     // the shard it lives in
};

// The ExecuTorch ScalarType code for a safetensors dtype name, or -1 when
// there is none (e.g. C64, F4).
int ScalarTypeForSafetensorsDtype(const std::string& dtype);

// Reads one .safetensors file's header and validates it: header length
// inside the file and <= kMaxSafetensorsHeader, valid JSON, known dtype,
// shape x element size == end - begin, offsets inside the data, begin <= end,
// no two tensors overlapping. Errors name the file, the tensor and the value:
// kNotFound for a missing file, kCorrupt for a malformed one; a shape the
// format cannot hold is refused as every layout is (etpack/tensor_layout.h:
// kOutOfRange for a dimension beyond int32, kInvalidArgument for a rank
// above kMaxTensorRank or a byte count beyond 64 bits).
// Tensors come back in data order. `files`, when given, receives the file
// read (even one holding no tensor), for PtdInput::read. The file is
// opened through `env.input` (etpack/env.h).
Result<std::vector<SafetensorsTensor>> ReadSafetensors(const std::string& path,
                                                       std::vector<SourcePtr>* files = nullptr,
                                                       const Env& env = {});

// Reads a checkpoint given as any mix of .safetensors files and sharded
// indexes (model.safetensors.index.json: {"weight_map": {tensor: shard}}).
// Every index entry must be found in the shard it names; a tensor name
// appearing twice across the inputs is an error naming both files, or the
// file when it is the same one read twice, and an empty tensor name one
// naming its file (kInvalidArgument); an index entry missing from its shard
// is kNotFound. `files`, when given, receives every file read: indexes and
// shards (PtdInput::read). Every file is opened through `env.input`.
Result<std::vector<SafetensorsTensor>> ReadCheckpoint(const std::vector<std::string>& paths,
                                                      std::vector<SourcePtr>* files = nullptr,
                                                      const Env& env = {});

// The .ptd input for a checkpoint: one entry and one buffer per tensor, in
// checkpoint order, each with `alignment`.
PtdInput PtdInputFromCheckpoint(const std::vector<SafetensorsTensor>& tensors,
                                uint64_t alignment = 1);

}  // namespace etpack

#endif  // ETPACK_SAFETENSORS_H_
