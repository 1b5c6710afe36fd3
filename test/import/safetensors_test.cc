#include "catch.h"

#include "test_files.h"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "etpack/ptd.h"
#include "etpack/safetensors.h"

namespace etpack {
namespace {

using testing::PatternBytes;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

namespace fs = std::filesystem;
using catch_text::Contains;

std::string LittleEndian64(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return out;
}

struct Spec {
  std::string name;
  std::string dtype;
  std::string shape;  // JSON text, e.g. "[2, 3]"
  uint64_t begin;
  uint64_t end;
};

std::string HeaderJson(const std::vector<Spec>& specs, const std::string& metadata = "") {
  std::string h = "{";
  if (!metadata.empty()) h += "\"__metadata__\":" + metadata;
  for (const Spec& s : specs) {
    if (h.size() > 1) h += ",";
    h += "\"" + s.name + "\":{\"dtype\":\"" + s.dtype + "\",\"shape\":" + s.shape +
         ",\"data_offsets\":[" + std::to_string(s.begin) + "," + std::to_string(s.end) + "]}";
  }
  return h + "}";
}

// A safetensors file: header space-padded to a multiple of 8, as writers do.
void WriteSafetensors(const std::string& path, std::string header,
                      const std::vector<uint8_t>& data) {
  header.append((8 - header.size() % 8) % 8, ' ');
  WriteFile(path, LittleEndian64(header.size()) + header + std::string(data.begin(), data.end()));
}

uint64_t HeaderEnd(const std::string& header) { return 8 + (header.size() + 7) / 8 * 8; }

std::vector<uint8_t> Bytes(const SourcePtr& s) {
  auto r = ReadAll(*s);
  REQUIRE(r.ok());
  return *r;
}

std::vector<uint8_t> Sub(const std::vector<uint8_t>& v, size_t begin, size_t end) {
  return std::vector<uint8_t>(v.begin() + begin, v.begin() + end);
}

std::vector<std::string> Names(const std::vector<SafetensorsTensor>& ts) {
  std::vector<std::string> out;
  for (const auto& t : ts) out.push_back(t.name);
  return out;
}

// Writes a single-tensor-list file and returns the read error.
Status ReadError(const TempDir& dir, const std::vector<Spec>& specs, size_t data_size) {
  const std::string path = dir.File("bad.safetensors");
  WriteSafetensors(path, HeaderJson(specs), PatternBytes(data_size));
  auto r = ReadSafetensors(path);
  REQUIRE_FALSE(r.ok());
  return r.status();
}

TEST_CASE("safetensors dtype names map to ExecuTorch scalar types") {
  const std::pair<const char*, int> expected[] = {
      {"F64", 7},  {"F32", 6},  {"F16", 5},  {"BF16", 15},    {"I64", 4},
      {"I32", 3},  {"I16", 2},  {"I8", 1},   {"U8", 0},       {"BOOL", 11},
      {"U16", 27}, {"U32", 28}, {"U64", 29}, {"F8_E5M2", 23}, {"F8_E4M3", 24},
  };
  for (const auto& [name, code] : expected) {
    INFO(name);
    CHECK(ScalarTypeForSafetensorsDtype(name) == code);
  }
  for (const char* name :
       {"C64", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", "I4", "f32", "", "F8_E4M3FN"}) {
    INFO(name);
    CHECK(ScalarTypeForSafetensorsDtype(name) == -1);
  }
}

TEST_CASE("ReadSafetensors returns tensors in data order with layouts and file ranges") {
  TempDir dir;
  const std::string path = dir.File("model.safetensors");
  // Header order differs from data order; a 3-byte hole after "byte".
  const std::vector<Spec> specs = {
      {"a.f32", "F32", "[2]", 24, 32},     {"empty", "F32", "[0, 4]", 32, 32},
      {"b.bf16", "BF16", "[2, 3]", 8, 20}, {"byte", "U8", "[1]", 20, 21},
      {"scalar", "F64", "[]", 0, 8},
  };
  const std::string header = HeaderJson(specs, "{\"format\":\"pt\",\"note\":\"x\"}");
  const std::vector<uint8_t> data = PatternBytes(32);
  WriteSafetensors(path, header, data);

  auto r = ReadSafetensors(path);
  REQUIRE(r.ok());
  const auto& ts = *r;
  REQUIRE(Names(ts) == std::vector<std::string>{"scalar", "b.bf16", "byte", "a.f32", "empty"});

  CHECK(ts[0].dtype == "F64");
  CHECK(ts[0].layout == TensorLayout{7, {}, {}});
  CHECK(ts[1].dtype == "BF16");
  CHECK(ts[1].layout == TensorLayout{15, {2, 3}, {0, 1}});
  CHECK(ts[2].layout == TensorLayout{0, {1}, {0}});
  CHECK(ts[3].layout == TensorLayout{6, {2}, {0}});
  CHECK(ts[4].layout == TensorLayout{6, {0, 4}, {0, 1}});

  CHECK(Bytes(ts[0].data) == Sub(data, 0, 8));
  CHECK(Bytes(ts[1].data) == Sub(data, 8, 20));
  CHECK(Bytes(ts[2].data) == Sub(data, 20, 21));
  CHECK(Bytes(ts[3].data) == Sub(data, 24, 32));
  CHECK(ts[4].data->size() == 0);

  // Every tensor is a range of the one open descriptor of its file.
  const uint64_t base = HeaderEnd(header);
  const int fd = ts[0].data->file_range() ? ts[0].data->file_range()->fd : -1;
  CHECK(fd >= 0);
  for (const auto& t : ts) {
    INFO(t.name);
    CHECK(t.file == path);
    REQUIRE(t.data->file_range() != nullptr);
    CHECK(t.data->file_range()->fd == fd);
  }
  CHECK(ts[3].data->file_range()->offset == base + 24);
  CHECK(ts[3].data->file_range()->length == 8);
}

TEST_CASE("ReadSafetensors accepts empty files and empty tensors inside other ranges") {
  TempDir dir;
  const std::string path = dir.File("e.safetensors");
  WriteSafetensors(path, "{}", {});
  auto r = ReadSafetensors(path);
  REQUIRE(r.ok());
  CHECK(r->empty());

  WriteSafetensors(path, HeaderJson({{"w", "I32", "[2]", 0, 8}, {"z", "I64", "[3, 0]", 4, 4}}),
                   PatternBytes(8));
  r = ReadSafetensors(path);
  REQUIRE(r.ok());
  CHECK(Names(*r) == std::vector<std::string>{"w", "z"});
}

TEST_CASE("ReadSafetensors rejects bad header lengths naming the file and value") {
  TempDir dir;
  const std::string path = dir.File("model.safetensors");

  WriteFile(path, LittleEndian64(123456789012) + std::string(4088, ' '));
  auto r = ReadSafetensors(path);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kCorrupt);
  CHECK(r.status().message() ==
        path + ": header length 123456789012 runs past the end of the file (4096 bytes)");

  WriteFile(path, LittleEndian64(4089) + std::string(4088, ' '));
  r = ReadSafetensors(path);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Contains("header length 4089 runs past the end"));

  // A header over the limit inside a (sparse) file large enough to hold it
  // is refused before anything is allocated or read.
  WriteFile(path, LittleEndian64(kMaxSafetensorsHeader + 1));
  fs::resize_file(path, 8 + kMaxSafetensorsHeader + 16);
  r = ReadSafetensors(path);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message() ==
        path + ": header length 100000001 exceeds the limit of 100000000 bytes");

  WriteFile(path, "abc");
  r = ReadSafetensors(path);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Contains(path + ": 3 bytes is too short"));

  r = ReadSafetensors(dir.File("missing.safetensors"));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kNotFound);
  CHECK_THAT(r.status().message(), Contains("missing.safetensors"));
}

TEST_CASE("ReadSafetensors rejects malformed header JSON") {
  TempDir dir;
  const std::string path = dir.File("model.safetensors");

  WriteSafetensors(path, "{\"a\": {\"dtype\": ", PatternBytes(8));
  auto r = ReadSafetensors(path);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kCorrupt);
  CHECK_THAT(r.status().message(), Contains(path + ":1:"));

  WriteSafetensors(path, "[1, 2]", {});
  r = ReadSafetensors(path);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Contains("not a JSON object"));

  // The parser refuses duplicate keys.
  WriteSafetensors(path, HeaderJson({{"x", "U8", "[1]", 0, 1}, {"x", "U8", "[1]", 1, 2}}),
                   PatternBytes(2));
  r = ReadSafetensors(path);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Contains("member \"x\" more than once"));

  WriteSafetensors(path, "{\"x\": [1]}", {});
  r = ReadSafetensors(path);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Contains("tensor 'x': expected an object"));

  WriteSafetensors(path, "{\"x\": {\"dtype\": \"U8\", \"shape\": [1]}}", PatternBytes(1));
  r = ReadSafetensors(path);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Contains("tensor 'x': data_offsets = (missing)"));

  WriteSafetensors(path, "{\"x\": {\"shape\": [1], \"data_offsets\": [0, 1]}}", PatternBytes(1));
  r = ReadSafetensors(path);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Contains("tensor 'x': dtype is missing"));
}

TEST_CASE("ReadSafetensors rejects bad tensor entries naming file, tensor and value") {
  TempDir dir;
  const std::string path = dir.File("bad.safetensors");

  Status s = ReadError(dir, {{"x", "C64", "[1]", 0, 8}}, 8);
  CHECK(s.message() == path + ": tensor 'x': dtype 'C64' has no ExecuTorch scalar type");

  s = ReadError(dir, {{"w", "F32", "[3]", 0, 8}}, 8);
  CHECK(s.message() == path +
                           ": tensor 'w': F32 shape [3] needs 12 bytes but data_offsets "
                           "[0, 8] hold 8");

  s = ReadError(dir, {{"w", "F32", "[3]", 0, 12}}, 8);
  CHECK(s.message() == path +
                           ": tensor 'w': data_offsets [0, 12] run past the end of the data "
                           "(8 bytes)");

  s = ReadError(dir, {{"w", "U8", "[0]", 8, 4}}, 8);
  CHECK(s.message() == path + ": tensor 'w': data_offsets [8, 4] begin after end");

  s = ReadError(dir, {{"b", "F32", "[2]", 4, 12}, {"a", "F32", "[2]", 0, 8}}, 12);
  CHECK(s.message() == path +
                           ": tensor 'b' data_offsets [4, 12] overlap tensor 'a' "
                           "data_offsets [0, 8]");

  // Overlap with a tensor that is not the immediate predecessor.
  s = ReadError(
      dir, {{"big", "U8", "[10]", 0, 10}, {"mid", "U8", "[2]", 2, 4}, {"late", "U8", "[2]", 6, 8}},
      10);
  CHECK_THAT(s.message(), Contains("tensor 'mid'") && Contains("overlap tensor 'big'"));

  s = ReadError(dir, {{"w", "F32", "[-1]", 0, 0}}, 0);
  CHECK(s.message() == path + ": tensor 'w': shape[0] = -1 is not a non-negative integer");

  s = ReadError(dir, {{"w", "F32", "[2, 1.5]", 0, 0}}, 0);
  CHECK_THAT(s.message(), Contains("tensor 'w': shape[1] = 1.5"));

  // A shape the format cannot hold: the library's rule for every layout
  // (LayoutOfInts), in its words and with its codes.
  s = ReadError(dir, {{"w", "U8", "[1, 3000000000]", 0, 0}}, 0);
  CHECK(s.code() == Code::kOutOfRange);
  CHECK(s.message() == path +
                           ": tensor 'w': sizes[1] = 3000000000 is not a size the format holds "
                           "(0 to 2147483647)");

  s = ReadError(dir, {{"w", "U8", "[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]", 0, 1}}, 1);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Contains("tensor 'w': rank 17 exceeds"));

  s = ReadError(dir, {{"w", "F64", "[2147483647, 2147483647, 2147483647]", 0, 8}}, 8);
  CHECK_THAT(s.message(), Contains(path + ": tensor 'w'") && Contains("overflow"));

  const std::string bad_offsets = "{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0]}}";
  WriteSafetensors(path, bad_offsets, PatternBytes(1));
  auto r = ReadSafetensors(path);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message() == path +
                                    ": tensor 'w': data_offsets = [0] is not a pair [begin, "
                                    "end] of non-negative integers");
}

struct Shards {
  TempDir dir;
  std::string index;
  std::vector<uint8_t> data1 = PatternBytes(16, 1);
  std::vector<uint8_t> data2 = PatternBytes(10, 2);

  Shards() {
    fs::create_directory(dir.File("ckpt"));
    index = dir.File("ckpt/model.safetensors.index.json");
    WriteSafetensors(dir.File("ckpt/model-00001-of-00002.safetensors"),
                     HeaderJson({{"embed", "BF16", "[2, 2]", 0, 8}, {"norm", "F32", "[2]", 8, 16}}),
                     data1);
    WriteSafetensors(dir.File("ckpt/model-00002-of-00002.safetensors"),
                     HeaderJson({{"head", "I16", "[5]", 0, 10}}), data2);
  }
  void WriteIndex(const std::string& weight_map) {
    WriteFile(index, "{\"metadata\": {\"total_size\": 26}, \"weight_map\": " + weight_map + "}");
  }
};

TEST_CASE("ReadCheckpoint reads a sharded index, shards relative to the index") {
  Shards s;
  // Listed out of order: shards are read in name order.
  s.WriteIndex(
      "{\"head\": \"model-00002-of-00002.safetensors\","
      " \"embed\": \"model-00001-of-00002.safetensors\","
      " \"norm\": \"model-00001-of-00002.safetensors\"}");
  auto r = ReadCheckpoint({s.index});
  REQUIRE(r.ok());
  REQUIRE(Names(*r) == std::vector<std::string>{"embed", "norm", "head"});
  CHECK((*r)[0].file == s.dir.File("ckpt/model-00001-of-00002.safetensors"));
  CHECK((*r)[2].file == s.dir.File("ckpt/model-00002-of-00002.safetensors"));
  CHECK((*r)[2].layout == TensorLayout{2, {5}, {0}});
  CHECK(Bytes((*r)[1].data) == Sub(s.data1, 8, 16));
  CHECK(Bytes((*r)[2].data) == s.data2);

  // Mixed with a plain file, in input order.
  const std::string extra = s.dir.File("extra.safetensors");
  WriteSafetensors(extra, HeaderJson({{"lora", "U8", "[3]", 0, 3}}), PatternBytes(3, 9));
  r = ReadCheckpoint({extra, s.index});
  REQUIRE(r.ok());
  CHECK(Names(*r) == std::vector<std::string>{"lora", "embed", "norm", "head"});

  PtdInput input = PtdInputFromCheckpoint(*r, 64);
  REQUIRE(input.buffers.size() == 4);
  REQUIRE(input.entries.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    INFO(i);
    CHECK(input.entries[i].key == (*r)[i].name);
    CHECK(input.entries[i].buffer_index == i);
    CHECK(input.entries[i].alignment == 64);
    REQUIRE(input.entries[i].layout.has_value());
    CHECK(*input.entries[i].layout == (*r)[i].layout);
    CHECK(input.buffers[i] == (*r)[i].data);
  }
}

TEST_CASE("ReadCheckpoint keeps shard tensors the index does not list") {
  Shards s;
  s.WriteIndex("{\"head\": \"model-00002-of-00002.safetensors\"}");
  auto r = ReadCheckpoint({s.index});
  REQUIRE(r.ok());
  CHECK(Names(*r) == std::vector<std::string>{"head"});
}

TEST_CASE("ReadCheckpoint rejects inconsistent indexes and duplicate tensors") {
  Shards s;
  const std::string shard1 = s.dir.File("ckpt/model-00001-of-00002.safetensors");
  const std::string shard2 = s.dir.File("ckpt/model-00002-of-00002.safetensors");

  s.WriteIndex("{\"head\": \"model-00001-of-00002.safetensors\"}");
  auto r = ReadCheckpoint({s.index});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message() ==
        s.index + ": weight_map places tensor 'head' in " + shard1 + ", which does not hold it");

  s.WriteIndex("{\"head\": \"model-00003-of-00002.safetensors\"}");
  r = ReadCheckpoint({s.index});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kNotFound);
  CHECK_THAT(r.status().message(),
             Contains(s.index + ": weight_map shard 'model-00003-of-00002.safetensors'") &&
                 Contains("model-00003-of-00002.safetensors"));

  s.WriteIndex("{\"head\": 7}");
  r = ReadCheckpoint({s.index});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message() == s.index + ": weight_map['head'] = 7 is not a shard file name");

  WriteFile(s.index, "{\"metadata\": {}}");
  r = ReadCheckpoint({s.index});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message() == s.index + ": weight_map is missing or not an object");

  WriteFile(s.index, "{\"weight_map\": {\"a\": \"x\", \"a\": \"y\"}}");
  r = ReadCheckpoint({s.index});
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Contains(s.index) && Contains("member \"a\" more than once"));

  // The same tensor in two shards of one index.
  WriteSafetensors(shard2,
                   HeaderJson({{"head", "I16", "[5]", 0, 10}, {"norm", "U8", "[1]", 10, 11}}),
                   PatternBytes(11));
  s.WriteIndex(
      "{\"head\": \"model-00002-of-00002.safetensors\","
      " \"norm\": \"model-00001-of-00002.safetensors\"}");
  r = ReadCheckpoint({s.index});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kInvalidArgument);
  CHECK(r.status().message() == "tensor 'norm' appears in both " + shard1 + " and " + shard2);

  // The same file twice, by the same name or through its index: not "in
  // both A and A".
  r = ReadCheckpoint({shard1, shard1});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kInvalidArgument);
  CHECK(r.status().message() == shard1 +
                                    " is read twice (given twice, or also through an index); give "
                                    "each file once");
  s.WriteIndex("{\"head\": \"model-00002-of-00002.safetensors\"}");
  r = ReadCheckpoint({s.index, shard2});
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Contains("is read twice"));

  // A tensor with an empty name can be no key: the input is to blame.
  const std::string unnamed = s.dir.File("unnamed.safetensors");
  WriteSafetensors(unnamed, HeaderJson({{"", "U8", "[1]", 0, 1}}), PatternBytes(1));
  r = ReadCheckpoint({unnamed});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kInvalidArgument);
  CHECK(r.status().message() == unnamed + ": tensor name: empty key");
  // So is a name the key rule refuses: reserved, or with a NUL byte.
  WriteSafetensors(unnamed, HeaderJson({{"etpack.integrity.x", "U8", "[1]", 0, 1}}),
                   PatternBytes(1));
  r = ReadCheckpoint({unnamed});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().rfind(unnamed + ": tensor name \"etpack.integrity.x\": ", 0) == 0);
  WriteSafetensors(unnamed, HeaderJson({{"a\\u0000b", "U8", "[1]", 0, 1}}), PatternBytes(1));
  r = ReadCheckpoint({unnamed});
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(),
             Contains(unnamed + ": tensor name: key \"a\\u0000b\" contains a NUL"));

  // A broken shard is reported with the index that led to it.
  WriteFile(shard1, LittleEndian64(1000));
  s.WriteIndex("{\"embed\": \"model-00001-of-00002.safetensors\"}");
  r = ReadCheckpoint({s.index});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message() ==
        s.index + ": weight_map shard 'model-00001-of-00002.safetensors': " + shard1 +
            ": header length 1000 runs past the end of the file (8 "
            "bytes)");
}

}  // namespace
}  // namespace etpack
