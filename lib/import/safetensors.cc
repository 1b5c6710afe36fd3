#include "etpack/safetensors.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <new>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "etpack/json.h"
#include "etpack/path_text.h"
#include "etpack/tensor_layout.h"
#include "flatbuffer/scalar_type.h"
#include "plan/named_store.h"

namespace etpack {
namespace {

std::string Quoted(const std::string& s) { return "'" + s + "'"; }

std::string OffsetsText(uint64_t begin, uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

std::string ShapeText(const std::vector<int32_t>& sizes) {
  std::string out = "[";
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(sizes[i]);
  }
  return out + "]";
}

// A JSON value as the user wrote it, for messages about wrong values.
std::string Shown(const json::Value& v) {
  std::string s = json::Print(v);
  constexpr size_t kMax = 60;
  if (s.size() > kMax) s = s.substr(0, kMax) + "...";
  return s;
}

// A non-negative JSON integer, or nullopt for anything else (negative,
// fractional, not a number).
std::optional<uint64_t> NonNegative(const json::Value& v) {
  if (v.kind() == json::Kind::kUInt) return v.as_uint();
  if (v.kind() == json::Kind::kInt && v.as_int() >= 0) return v.as_uint();
  return std::nullopt;
}

struct Parsed {
  SafetensorsTensor tensor;
  uint64_t begin = 0;
  uint64_t end = 0;
};

// Validates one header member; `what` is "<file>: tensor '<name>'".
Result<Parsed> ParseTensor(const std::string& name, const json::Value& v, const std::string& what,
                           uint64_t data_size) {
  if (v.kind() != json::Kind::kObject) {
    return Corrupt(what + ": expected an object with dtype, shape and data_offsets, got " +
                   Shown(v));
  }
  Parsed p;
  p.tensor.name = name;

  const json::Value* dtype = v.Find("dtype");
  if (!dtype || dtype->kind() != json::Kind::kString) {
    return Corrupt(what + ": dtype is missing or not a string");
  }
  p.tensor.dtype = dtype->as_string();
  const int scalar_type = ScalarTypeForSafetensorsDtype(p.tensor.dtype);
  if (scalar_type < 0) {
    return Corrupt(what + ": dtype " + Quoted(p.tensor.dtype) + " has no ExecuTorch scalar type");
  }

  const json::Value* shape = v.Find("shape");
  if (!shape || shape->kind() != json::Kind::kArray) {
    return Corrupt(what + ": shape is missing or not an array");
  }
  // Refused before a layout of that many dimensions is built.
  ETPACK_RETURN_IF_ERROR(CheckRank(shape->items().size(), what));
  std::vector<int64_t> sizes, order;
  for (size_t d = 0; d < shape->items().size(); ++d) {
    const json::Value& dim = shape->items()[d];
    const std::optional<uint64_t> n = NonNegative(dim);
    if (!n) {
      return Corrupt(what + ": shape[" + std::to_string(d) + "] = " + Shown(dim) +
                     " is not a non-negative integer");
    }
    sizes.push_back(*n > uint64_t{INT64_MAX} ? INT64_MAX : static_cast<int64_t>(*n));
    order.push_back(static_cast<int64_t>(d));
  }
  // The library's rule for every layout (an int32 size per dimension,
  // kOutOfRange), then for its byte count.
  ETPACK_ASSIGN_OR_RETURN(p.tensor.layout, LayoutOfInts(scalar_type, sizes, order, what));

  const json::Value* offsets = v.Find("data_offsets");
  if (!offsets || offsets->kind() != json::Kind::kArray || offsets->items().size() != 2 ||
      !NonNegative(offsets->items()[0]) || !NonNegative(offsets->items()[1])) {
    return Corrupt(what + ": data_offsets = " + (offsets ? Shown(*offsets) : "(missing)") +
                   " is not a pair [begin, end] of non-negative integers");
  }
  p.begin = *NonNegative(offsets->items()[0]);
  p.end = *NonNegative(offsets->items()[1]);
  if (p.begin > p.end) {
    return Corrupt(what + ": data_offsets " + OffsetsText(p.begin, p.end) + " begin after end");
  }
  if (p.end > data_size) {
    return Corrupt(what + ": data_offsets " + OffsetsText(p.begin, p.end) +
                   " run past the end of the data (" + std::to_string(data_size) + " bytes)");
  }
  ETPACK_ASSIGN_OR_RETURN(const uint64_t nbytes, LayoutNbytes(p.tensor.layout, what));
  if (nbytes != p.end - p.begin) {
    return Corrupt(what + ": " + p.tensor.dtype + " shape " + ShapeText(p.tensor.layout.sizes) +
                   " needs " + std::to_string(nbytes) + " bytes but data_offsets " +
                   OffsetsText(p.begin, p.end) + " hold " + std::to_string(p.end - p.begin));
  }
  return p;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The tensors of one sharded index, shards read in name order.
Result<std::vector<SafetensorsTensor>> ReadIndex(const std::string& index_path,
                                                 std::vector<SourcePtr>* files, const Env& env) {
  SourcePtr index_file;
  ETPACK_ASSIGN_OR_RETURN(const json::Value index,
                          json::ParseFile(env.in(), index_path, &index_file));
  if (files != nullptr) files->push_back(std::move(index_file));
  const json::Value* weight_map =
      index.kind() == json::Kind::kObject ? index.Find("weight_map") : nullptr;
  if (!weight_map || weight_map->kind() != json::Kind::kObject) {
    return Corrupt(index_path + ": weight_map is missing or not an object");
  }
  // shard file name -> tensors the index places in it
  std::map<std::string, std::vector<std::string>> shards;
  for (const auto& [tensor, shard] : weight_map->members()) {
    if (shard.kind() != json::Kind::kString || shard.as_string().empty()) {
      return Corrupt(index_path + ": weight_map[" + Quoted(tensor) + "] = " + Shown(shard) +
                     " is not a shard file name");
    }
    shards[shard.as_string()].push_back(tensor);
  }
  // Shard names are relative to the index, wherever the index was given from.
  const std::string dir = PathFolder(index_path);
  std::vector<SafetensorsTensor> out;
  for (const auto& [shard, listed] : shards) {
    const std::string shard_path = JoinPath(dir, shard);
    auto read = ReadSafetensors(shard_path, files, env);
    if (!read.ok()) {
      return read.status().WithContext(index_path + ": weight_map shard " + Quoted(shard));
    }
    std::unordered_map<std::string, bool> present;
    for (const auto& t : *read) present.emplace(t.name, true);
    for (const std::string& tensor : listed) {
      if (!present.count(tensor)) {
        return NotFound(index_path + ": weight_map places tensor " + Quoted(tensor) + " in " +
                        shard_path + ", which does not hold it");
      }
    }
    // Tensors a shard holds beyond the index are kept: the shard is the
    // authority on its own contents, the index only a lookup aid.
    for (auto& t : *read) out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

int ScalarTypeForSafetensorsDtype(const std::string& dtype) {
  static const std::pair<const char*, int> kTable[] = {
      {"U8", 0},       {"I8", 1},       {"I16", 2},  {"I32", 3},   {"I64", 4},
      {"F16", 5},      {"F32", 6},      {"F64", 7},  {"BOOL", 11}, {"BF16", 15},
      {"F8_E5M2", 23}, {"F8_E4M3", 24},  // safetensors' name for float8_e4m3fn
      {"U16", 27},     {"U32", 28},     {"U64", 29},
  };
  for (const auto& [name, code] : kTable) {
    if (dtype == name) return code;
  }
  return -1;
}

Result<std::vector<SafetensorsTensor>> ReadSafetensors(const std::string& path,
                                                       std::vector<SourcePtr>* files,
                                                       const Env& env) {
  // One descriptor for the header and every tensor slice of the file.
  ETPACK_ASSIGN_OR_RETURN(const SourcePtr file, FileSource(env.in(), path));
  if (files != nullptr) files->push_back(file);
  const uint64_t file_size = file->size();
  if (file_size < 8) {
    return Corrupt(path + ": " + std::to_string(file_size) +
                   " bytes is too short for a safetensors file (no 8-byte header length)");
  }
  uint8_t len_bytes[8];
  ETPACK_RETURN_IF_ERROR(file->ReadAt(0, len_bytes, sizeof len_bytes));
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len_bytes[i];
  // Past-the-end first: for a truncated or non-safetensors file it is the
  // more telling of the two complaints.
  if (header_len > file_size - 8) {
    return Corrupt(path + ": header length " + std::to_string(header_len) +
                   " runs past the end of the file (" + std::to_string(file_size) + " bytes)");
  }
  if (header_len > kMaxSafetensorsHeader) {
    return Corrupt(path + ": header length " + std::to_string(header_len) +
                   " exceeds the limit of " + std::to_string(kMaxSafetensorsHeader) + " bytes");
  }
  std::string text;
  try {
    text.resize(static_cast<size_t>(header_len));
  } catch (const std::bad_alloc&) {
    return OutOfRange(path + ": cannot allocate " + std::to_string(header_len) +
                      " bytes for the header");
  }
  ETPACK_RETURN_IF_ERROR(file->ReadAt(8, text.data(), text.size()));
  auto parsed = json::Parse(text, path);
  if (!parsed.ok()) return Corrupt(parsed.status().message());
  const json::Value& header = *parsed;
  if (header.kind() != json::Kind::kObject) {
    return Corrupt(path + ": header is " + Shown(header) + ", not a JSON object");
  }

  const uint64_t data_start = 8 + header_len;
  const uint64_t data_size = file_size - data_start;
  std::vector<Parsed> tensors;
  tensors.reserve(header.members().size());
  for (const auto& [name, value] : header.members()) {
    if (name == "__metadata__") continue;
    ETPACK_ASSIGN_OR_RETURN(Parsed p,
                            ParseTensor(name, value, path + ": tensor " + Quoted(name), data_size));
    tensors.push_back(std::move(p));
  }
  std::sort(tensors.begin(), tensors.end(), [](const Parsed& a, const Parsed& b) {
    if (a.begin != b.begin) return a.begin < b.begin;
    if (a.end != b.end) return a.end < b.end;
    return a.tensor.name < b.tensor.name;
  });
  // Empty tensors own no bytes, so they may sit anywhere, even inside
  // another tensor's range; every other byte belongs to at most one tensor.
  const Parsed* last = nullptr;  // the non-empty tensor reaching furthest
  for (const Parsed& p : tensors) {
    if (p.begin == p.end) continue;
    if (last && p.begin < last->end) {
      return Corrupt(path + ": tensor " + Quoted(p.tensor.name) + " data_offsets " +
                     OffsetsText(p.begin, p.end) + " overlap tensor " + Quoted(last->tensor.name) +
                     " data_offsets " + OffsetsText(last->begin, last->end));
    }
    last = &p;
  }

  std::vector<SafetensorsTensor> out;
  out.reserve(tensors.size());
  for (Parsed& p : tensors) {
    p.tensor.data = SliceSource(file, data_start + p.begin, p.end - p.begin);
    p.tensor.file = path;
    out.push_back(std::move(p.tensor));
  }
  return out;
}

Result<std::vector<SafetensorsTensor>> ReadCheckpoint(const std::vector<std::string>& paths,
                                                      std::vector<SourcePtr>* files,
                                                      const Env& env) {
  std::vector<SafetensorsTensor> out;
  std::unordered_map<std::string, size_t> owner;  // tensor name -> its index in `out`
  for (const std::string& path : paths) {
    auto read =
        EndsWith(path, ".json") ? ReadIndex(path, files, env) : ReadSafetensors(path, files, env);
    if (!read.ok()) return read.status();
    for (auto& t : *read) {
      // Names become .ptd keys: held to the key rule here, so an error
      // names the checkpoint file rather than the output.
      ETPACK_RETURN_IF_ERROR(CheckDataKey(t.name, t.file + ": tensor name"));
      auto [it, inserted] = owner.emplace(t.name, out.size());
      if (!inserted) {
        const SafetensorsTensor& first = out[it->second];
        if (first.file == t.file || SameFile(*first.data, *t.data)) {
          return InvalidArgument(t.file + " is read twice (given twice, or also through an " +
                                 "index); give each file once");
        }
        return InvalidArgument("tensor " + Quoted(t.name) + " appears in both " + first.file +
                               " and " + t.file);
      }
      out.push_back(std::move(t));
    }
  }
  return out;
}

PtdInput PtdInputFromCheckpoint(const std::vector<SafetensorsTensor>& tensors, uint64_t alignment) {
  PtdInput input;
  input.buffers.reserve(tensors.size());
  input.entries.reserve(tensors.size());
  for (const SafetensorsTensor& t : tensors) {
    PtdEntry e;
    e.key = t.name;
    e.buffer_index = static_cast<uint32_t>(input.buffers.size());
    e.alignment = alignment;
    e.layout = t.layout;
    input.buffers.push_back(t.data);
    input.entries.push_back(std::move(e));
  }
  return input;
}

}  // namespace etpack
