// End-to-end tests of `etpack ptd`: safetensors checkpoints to .ptd, in one
// file or in shards under --max-shard-bytes.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>
#include "catch.h"

#include "cli_test_util.h"
#include "etpack/json.h"

namespace fs = std::filesystem;

using namespace etpack::testing::cli;

namespace {

struct StTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

// A minimal safetensors writer: u64 header length, JSON header, data.
void WriteSafetensors(const std::string& path, const std::vector<StTensor>& tensors) {
  using etpack::json::Value;
  std::vector<Value::Member> header;
  std::vector<uint8_t> data;
  for (const StTensor& t : tensors) {
    std::vector<Value> shape;
    for (int64_t d : t.shape) shape.push_back(Value::Int(d));
    const uint64_t begin = data.size();
    data.insert(data.end(), t.bytes.begin(), t.bytes.end());
    header.emplace_back(
        t.name, Value::Object({{"dtype", Value::String(t.dtype)},
                               {"shape", Value::Array(std::move(shape))},
                               {"data_offsets",
                                Value::Array({Value::UInt(begin), Value::UInt(data.size())})}}));
  }
  header.emplace_back("__metadata__", Value::Object({{"format", Value::String("pt")}}));
  const std::string text = etpack::json::Print(Value::Object(std::move(header)));
  std::ofstream out(path, std::ios::binary);
  const uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>(n >> (8 * i)));
  out << text;
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  REQUIRE(out.good());
}

}  // namespace

TEST_CASE("ptd converts safetensors checkpoints") {
  TempDir dir;
  // BF16 matrix, F32 vector, a zero-element tensor and a 1-byte tensor.
  const std::vector<StTensor> shard1 = {
      {"model.embed.weight", "BF16", {3, 4}, Pattern(24, 1)},
      {"model.norm.weight", "F32", {5}, Pattern(20, 2)},
  };
  const std::vector<StTensor> shard2 = {
      {"model.empty", "F32", {0, 7}, {}},
      {"model.flag", "U8", {1}, {0xa5}},
  };
  WriteSafetensors(dir / "model-00001-of-00002.safetensors", shard1);
  WriteSafetensors(dir / "model-00002-of-00002.safetensors", shard2);

  SECTION("from shard files, page-aligned") {
    const std::string out = dir / "w.ptd";
    Run run = Etpack({"ptd", dir / "model-00001-of-00002.safetensors",
                      dir / "model-00002-of-00002.safetensors", "-o", out, "--align", "4096"});
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    CHECK(Contains(run.output, "4 tensors"));
    CHECK(Contains(run.output, "45 bytes"));
    CHECK(Contains(run.output, "peak RSS"));
    CHECK(Contains(run.output, "MiB/s"));
    Run verify = Etpack({"verify", out});
    INFO(verify.output);
    CHECK(verify.exit_code == 0);

    const etpack::json::Value doc = InspectJson(out);
    const auto& entries = doc.Find("entries")->items();
    const auto& segments = doc.Find("segments")->items();
    REQUIRE(entries.size() == 4);
    const auto bytes = ReadFile(out);
    std::vector<StTensor> all = shard1;
    all.insert(all.end(), shard2.begin(), shard2.end());
    for (size_t i = 0; i < all.size(); ++i) {
      INFO(all[i].name);
      const auto& e = entries[i];
      CHECK(e.Find("key")->as_string() == all[i].name);
      const auto& seg = segments[e.Find("segment")->as_uint()];
      const uint64_t at = seg.Find("absolute_offset")->as_uint();
      CHECK(at % 4096 == 0);
      REQUIRE(seg.Find("size")->as_uint() == all[i].bytes.size());
      REQUIRE(at + all[i].bytes.size() <= bytes.size());
      CHECK(std::vector<uint8_t>(bytes.begin() + at, bytes.begin() + at + all[i].bytes.size()) ==
            all[i].bytes);
    }
    CHECK(entries[0].Find("tensor_layout")->Find("text")->as_string() ==
          "BFLOAT16[3, 4] dim_order [0, 1]");
    CHECK(entries[2].Find("tensor_layout")->Find("text")->as_string() ==
          "FLOAT[0, 7] dim_order [0, 1]");
    CHECK(entries[3].Find("tensor_layout")->Find("text")->as_string() == "BYTE[1] dim_order [0]");
  }

  SECTION("from a sharded index") {
    const std::string index = dir / "model.safetensors.index.json";
    std::ofstream(index) << R"({"metadata": {"total_size": 45}, "weight_map": {
        "model.embed.weight": "model-00001-of-00002.safetensors",
        "model.norm.weight": "model-00001-of-00002.safetensors",
        "model.empty": "model-00002-of-00002.safetensors",
        "model.flag": "model-00002-of-00002.safetensors"}})";
    const std::string out = dir / "idx.ptd";
    Run run = Etpack({"ptd", index, "-o", out});
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    const etpack::json::Value doc = InspectJson(out);
    CHECK(doc.Find("entries")->items().size() == 4);
    for (const auto& seg : doc.Find("segments")->items()) {
      CHECK(seg.Find("absolute_offset")->as_uint() % 128 == 0);
    }
  }

  SECTION("a malformed checkpoint fails and leaves no output") {
    TempDir out;
    const std::string bad = dir / "bad.safetensors";
    {
      std::ofstream f(bad, std::ios::binary);
      const uint64_t n = 1000;  // header length past the end of the file
      for (int i = 0; i < 8; ++i) f.put(static_cast<char>(n >> (8 * i)));
      f << "{}";
    }
    Run run = Etpack({"ptd", bad, "-o", out / "w.ptd"});
    INFO(run.output);
    CHECK(run.exit_code == 1);
    CHECK(Contains(run.output, "etpack: "));
    CHECK(Contains(run.output, "bad.safetensors"));
    CHECK(Listing(out.path()).empty());

    // The same shard given twice: said so, not "appears in both A and A".
    const std::string shard = dir / "model-00001-of-00002.safetensors";
    Run dup = Etpack({"ptd", shard, shard, "-o", out / "w.ptd"});
    INFO(dup.output);
    CHECK(dup.exit_code == 1);
    CHECK(dup.output == "etpack: " + shard +
                            " is read twice (given twice, or also through an index); give each "
                            "file once\n");
    CHECK(Listing(out.path()).empty());

    // A tensor with an empty name: the input is to blame, not the output.
    const std::string unnamed = dir / "unnamed.safetensors";
    WriteSafetensors(unnamed, {{"", "U8", {1}, {7}}});
    Run empty = Etpack({"ptd", unnamed, "-o", out / "w.ptd"});
    INFO(empty.output);
    CHECK(empty.exit_code == 1);
    CHECK(empty.output == "etpack: " + unnamed + ": tensor name: empty key\n");
    CHECK(Listing(out.path()).empty());
  }

  SECTION("counts say what was read, in the singular when it is one") {
    const std::string none = dir / "none.safetensors";
    WriteSafetensors(none, {});
    Run empty = Etpack({"ptd", none, "-o", dir / "none.ptd"});
    INFO(empty.output);
    REQUIRE(empty.exit_code == 0);
    CHECK(Contains(empty.output, "read:    0 tensors from 1 safetensors file, 0 bytes of tensor"));
    const std::string one = dir / "one.safetensors";
    WriteSafetensors(one, {{"w", "U8", {1}, {7}}});
    Run single = Etpack({"ptd", one, "-o", dir / "one.ptd"});
    INFO(single.output);
    REQUIRE(single.exit_code == 0);
    CHECK(Contains(single.output, "read:    1 tensor from 1 safetensors file, 1 byte of tensor"));
    Run verify = Etpack({"verify", dir / "one.ptd"});
    CHECK(Contains(verify.output, ": ok (.ptd, 1 entry, 1 segment, "));
    Run two = Etpack({"ptd", one, none, "-o", dir / "two.ptd"});
    INFO(two.output);
    REQUIRE(two.exit_code == 0);
    CHECK(Contains(two.output, "read:    1 tensor from 2 safetensors files"));
  }
}

TEST_CASE("ptd --max-shard-bytes writes shards under the cap that verify and inspect as a set") {
  TempDir dir;
  std::vector<StTensor> tensors;
  for (int i = 0; i < 12; ++i) {
    const int n = 1000 + 500 * i;
    tensors.push_back({"layers." + std::to_string(i) + ".weight",
                       "U8",
                       {n},
                       Pattern(static_cast<size_t>(n), static_cast<uint8_t>(i))});
  }
  const std::string st = dir / "model.safetensors";
  WriteSafetensors(st, tensors);

  Run run = Etpack({"ptd", st, "-o", dir / "model.ptd", "--max-shard-bytes", "8K"});
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const std::vector<std::string> shards = Shards(dir, "model");
  REQUIRE(shards.size() > 2);
  CHECK_FALSE(fs::exists(dir / "model.ptd"));
  for (const std::string& s : shards) {
    CHECK(Contains(run.output, s));  // every name printed
    CHECK(fs::file_size(s) <= 8192);
    CHECK(std::regex_match(fs::path(s).filename().string(),
                           std::regex(R"(model-[0-9a-f]{16}\.ptd)")));
  }
  CHECK(Contains(run.output, std::to_string(shards.size()) + " shards"));

  std::vector<std::string> verify = {"verify"};
  verify.insert(verify.end(), shards.begin(), shards.end());
  Run v = Etpack(verify);
  INFO(v.output);
  CHECK(v.exit_code == 0);
  CHECK(Contains(v.output, "each key in exactly one file"));
  CHECK(Contains(v.output, "12 entries"));

  std::vector<std::string> inspect = {"inspect", "--json"};
  inspect.insert(inspect.end(), shards.begin(), shards.end());
  Run js = Etpack(inspect);
  REQUIRE(js.exit_code == 0);
  auto doc = etpack::json::Parse(js.output, "inspect --json");
  REQUIRE(doc.ok());
  CHECK(doc->items().size() == shards.size());

  SECTION("inspect --json of a set with an unreadable file prints valid JSON and fails") {
    Run bad = Etpack({"inspect", "--json", shards[0], st});
    CHECK(bad.exit_code != 0);
    // stdout and stderr come mixed: the array starts at "[{" and ends at
    // the last ']' printed.
    const size_t begin = bad.output.find("[{");
    REQUIRE(begin != std::string::npos);
    const std::string json = bad.output.substr(begin, bad.output.rfind(']') + 1 - begin);
    auto partial = etpack::json::Parse(json, "inspect --json");
    INFO(bad.output);
    REQUIRE(partial.ok());
    CHECK(partial->items().size() == 1);
  }
  SECTION("the same input gives the same names and bytes") {
    TempDir again;
    Run r2 = Etpack({"ptd", st, "-o", again / "model.ptd", "--max-shard-bytes", "8K"});
    REQUIRE(r2.exit_code == 0);
    const std::vector<std::string> shards2 = Shards(again, "model");
    REQUIRE(shards2.size() == shards.size());
    for (size_t i = 0; i < shards.size(); ++i) {
      CHECK(fs::path(shards[i]).filename() == fs::path(shards2[i]).filename());
      CHECK(ReadFile(shards[i]) == ReadFile(shards2[i]));
    }
  }
  SECTION("a key in two files of the set is refused") {
    verify.push_back(shards[0]);
    fs::copy_file(shards[0], dir / "copy.ptd");
    verify.back() = dir / "copy.ptd";
    Run twice = Etpack(verify);
    INFO(twice.output);
    CHECK(twice.exit_code == 1);
    CHECK(Contains(twice.output, "is in both"));
  }
  SECTION("a tensor that cannot fit is an error naming it, its size and the cap") {
    TempDir out;
    Run big = Etpack({"ptd", st, "-o", out / "model.ptd", "--max-shard-bytes", "4000"});
    INFO(big.output);
    CHECK(big.exit_code == 1);
    CHECK(Contains(big.output, "'layers.6.weight' (4000 bytes)"));
    CHECK(Contains(big.output, "max_shard_bytes = 4000"));
    CHECK(Listing(out.path()).empty());
  }
  SECTION("a zero or malformed cap is a usage error") {
    CHECK(Etpack({"ptd", st, "-o", dir / "x.ptd", "--max-shard-bytes", "0"}).exit_code == 2);
    CHECK(Etpack({"ptd", st, "-o", dir / "x.ptd", "--max-shard-bytes", "lots"}).exit_code == 2);
  }
  SECTION("a byte count past 2^64 - 1 is too large, with the limit; P and E are units") {
    for (const std::string text :
         {"16EiB", "16e", "16384PiB", "18446744073709551616", "99999999999999999999999K"}) {
      Run r = Etpack({"ptd", st, "-o", dir / "x.ptd", "--max-shard-bytes", text});
      INFO(r.output);
      CHECK(r.exit_code == 2);
      CHECK(Contains(r.output, "--max-shard-bytes = '" + text +
                                   "' is too large: a byte count is at most "
                                   "18446744073709551615 (16 EiB - 1)"));
    }
    Run not_count = Etpack({"ptd", st, "-o", dir / "x.ptd", "--max-shard-bytes", "16XiB"});
    CHECK(not_count.exit_code == 2);
    CHECK(Contains(not_count.output, "'16XiB' is not a byte count"));
    TempDir out;
    Run eib = Etpack({"ptd", st, "-o", out / "model.ptd", "--max-shard-bytes", "1EiB"});
    INFO(eib.output);
    CHECK(eib.exit_code == 0);
    CHECK(Listing(out.path()).size() == 1);
  }
  SECTION("-o .ptd has no name for the shards: refused, nothing written") {
    TempDir out;
    Run r = Etpack({"ptd", st, "-o", out / ".ptd", "--max-shard-bytes", "8K"});
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(Contains(r.output, ".ptd': shards are named after the output's file name"));
    CHECK(Listing(out.path()).empty());
  }
}
