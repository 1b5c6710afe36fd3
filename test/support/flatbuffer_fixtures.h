// Helpers shared by the flatbuffer tests (schema_info, tree_builder,
// tree_reader): golden files, a small program in input form, and building
// and reading with REQUIRE on failure.
#ifndef ETPACK_TEST_FLATBUFFER_FIXTURES_H_
#define ETPACK_TEST_FLATBUFFER_FIXTURES_H_

#include <flatbuffers/reflection_generated.h>
#include "catch.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "etpack/json.h"
#include "flatbuffer/schema_info.h"
#include "flatbuffer/tree_builder.h"
#include "flatbuffer/tree_reader.h"
#include "program_etpack_generated.h"
#include "test_files.h"

namespace etpack::testing {

namespace fs = std::filesystem;
namespace efb = etpack::pte_fb;

inline std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  INFO(path);
  REQUIRE(in.good());
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

inline std::string ReadText(const std::string& path) {
  std::vector<uint8_t> b = ReadBytes(path);
  return std::string(b.begin(), b.end());
}

// golden/pte_*.pte and golden/upstream/*.pte, sorted.
inline std::vector<std::string> GoldenPtes() {
  std::vector<std::string> out;
  for (const std::string& dir : {GoldenDir(), GoldenDir() + "/upstream"}) {
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string name = e.path().filename().string();
      if (e.path().extension() != ".pte") continue;
      if (dir == GoldenDir() && name.rfind("pte_", 0) != 0) continue;
      out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  REQUIRE(out.size() >= 16);
  return out;
}

inline bool VerifyProgram(const std::vector<uint8_t>& buf) {
  flatbuffers::Verifier v(buf.data(), buf.size());
  return efb::VerifyProgramBuffer(v);
}

inline json::Value Tree(const std::vector<uint8_t>& buf) {
  Result<json::Value> t = FlatbufferToTree(SchemaId::kProgram, buf.data(), buf.size());
  INFO(t.status().ToString());
  REQUIRE(t.ok());
  return std::move(t).value();
}

inline std::string FlatcJson(const std::vector<uint8_t>& buf) {
  Result<std::string> j = FlatbufferToFlatcJson(SchemaId::kProgram, buf.data(), buf.size());
  INFO(j.status().ToString());
  REQUIRE(j.ok());
  return std::move(j).value();
}

inline json::Value ParseJson(const std::string& text) {
  Result<json::Value> v = json::Parse(text);
  INFO(v.status().ToString());
  REQUIRE(v.ok());
  return std::move(v).value();
}

inline BuildOptions Alignments(uint64_t storage, uint64_t delegate_data) {
  BuildOptions o;
  o.vector_alignment = {{"Buffer.storage", storage},
                        {"BackendDelegateInlineData.data", delegate_data}};
  return o;
}

inline std::vector<uint8_t> MustBuild(const json::Value& tree, const BuildOptions& options = {}) {
  Result<std::vector<uint8_t>> b = BuildFlatbuffer(SchemaId::kProgram, tree, options);
  INFO(b.status().ToString());
  REQUIRE(b.ok());
  REQUIRE(VerifyProgram(*b));
  return std::move(b).value();
}

inline std::string BuildError(const json::Value& tree, const BuildOptions& options = {}) {
  Result<std::vector<uint8_t>> b = BuildFlatbuffer(SchemaId::kProgram, tree, options);
  REQUIRE_FALSE(b.ok());
  return b.status().message();
}

// A small program: one Int value and one Tensor value, in input form.
inline const char* const kSmallProgram = R"({
  "version": 0,
  "execution_plan": [{
    "name": "forward",
    "values": [
      {"val_type": "Int", "val": {"int_val": 7}},
      {"val": {"scalar_type": 6, "storage_offset": 0, "sizes": [2, 3],
               "dim_order": [0, 1], "requires_grad": false,
               "data_buffer_idx": 1,
               "allocation_info": {"memory_id": 1, "memory_offset_low": 0,
                                   "memory_offset_high": 0},
               "layout": 0, "shape_dynamism": 0, "extra_tensor_info": null},
       "val_type": "Tensor"}
    ],
    "inputs": [1], "outputs": [1],
    "chains": [{"inputs": [1], "outputs": [1], "instructions": [
      {"instr_args_type": "KernelCall", "instr_args": {"op_index": 0, "args": [1, 1]}}]}],
    "operators": [{"name": "aten::relu", "overload": ""}],
    "delegates": [],
    "non_const_buffer_sizes": [0, 24]
  }],
  "constant_buffer": [{"storage": []}],
  "segments": [],
  "constant_segment": {"segment_index": 0, "offsets": []}
})";

inline json::Value SmallProgram() { return ParseJson(kSmallProgram); }

inline json::Value& Plan0(json::Value& program) {
  return program.Find("execution_plan")->items()[0];
}
inline json::Value& Value1(json::Value& program) {
  return *Plan0(program).Find("values")->items()[1].Find("val");
}

}  // namespace etpack::testing

#endif  // ETPACK_TEST_FLATBUFFER_FIXTURES_H_
