// End-to-end tests of `etpack pack`: manifests to .pte and .ptd, the
// errors naming the manifest and the field, and nothing written on failure.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>
#include "catch.h"

#include "cli_test_util.h"
#include "etpack/json.h"

namespace fs = std::filesystem;

using namespace etpack::testing::cli;

namespace {

// The value `v` (the member "val") of the first method of a manifest.
etpack::json::Value& ManifestValue(etpack::json::Value& doc, size_t v) {
  return *doc.Find("program")
              ->Find("execution_plan")
              ->items()[0]
              .Find("values")
              ->items()[v]
              .Find("val");
}

}  // namespace

TEST_CASE("pack of a golden manifest verifies") {
  TempDir dir;
  const std::string out = dir / "packed.pte";
  Run run = Etpack({"pack", Golden("pte_constants.input.json"), "-o", out});
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(Contains(run.output, out));
  Run verify = Etpack({"verify", out});
  INFO(verify.output);
  CHECK(verify.exit_code == 0);
}

TEST_CASE("pack of a manifest naming a missing file fails cleanly") {
  TempDir dir;
  fs::create_directory(dir.path() / "out");
  // The golden manifest with one constant moved to a file that is not there,
  // so the missing file is the only thing wrong with it.
  std::ifstream in(Golden("pte_constants.input.json"));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto doc = etpack::json::Parse(text, "pte_constants.input.json");
  REQUIRE(doc.ok());
  etpack::json::Value& buffers = *doc->Find("program")->Find("constant_buffer");
  REQUIRE(buffers.items().size() >= 2);
  buffers.items()[1].Set(
      "storage",
      etpack::json::Value::Object({{"file", etpack::json::Value::String("missing-weights.bin")}}));
  const std::string manifest = dir / "manifest.json";
  std::ofstream(manifest) << etpack::json::Print(*doc, 1);

  Run run = Etpack({"pack", manifest, "-o", dir / "out/model.pte"});
  INFO(run.output);
  CHECK(run.exit_code == 1);
  CHECK(Contains(run.output, "etpack: "));
  CHECK(Contains(run.output, "missing-weights.bin"));
  CHECK(Listing(dir.path() / "out").empty());
}

TEST_CASE("pack names the manifest and the program. path of a program-tree error") {
  TempDir dir;
  auto doc = etpack::json::ParseFile(Golden("pte_constants.input.json"));
  REQUIRE(doc.ok());
  doc->Find("program")->Set("bogus_field", etpack::json::Value::Int(1));
  const std::string manifest = dir / "m.json";
  WriteFileText(manifest, etpack::json::Print(*doc));
  Run run = Etpack({"pack", manifest, "-o", dir / "x.pte"});
  CHECK(run.exit_code == 1);
  CHECK(run.output ==
        "etpack: " + manifest + ": program.bogus_field: unknown member of table Program\n");
  CHECK_FALSE(fs::exists(dir / "x.pte"));
}

TEST_CASE("a .ptd manifest without \"format\" is told so") {
  TempDir dir;
  auto doc = etpack::json::ParseFile(Golden("ptd_basic.input.json"));
  REQUIRE(doc.ok());
  std::vector<etpack::json::Value::Member> kept;
  for (auto& m : doc->members()) {
    if (m.first != "format") kept.push_back(m);
  }
  const std::string manifest = dir / "w.json";  // its blobs are inline
  WriteFileText(manifest, etpack::json::Print(etpack::json::Value::Object(std::move(kept))));
  Run run = Etpack({"pack", manifest, "-o", dir / "x.ptd"});
  CHECK(run.exit_code == 1);
  CHECK(Contains(run.output, manifest + ": has no \"format\" member; a .ptd manifest"));
  CHECK(Contains(run.output, "needs \"format\": \"ptd\""));
  CHECK_FALSE(Contains(run.output, "unknown member"));
}

TEST_CASE("pack of a .ptd manifest verifies and serves pte_external") {
  TempDir dir;
  const std::string out = dir / "weights.ptd";
  Run run = Etpack({"pack", Golden("ptd_basic.input.json"), "-o", out});
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(Contains(run.output, "wrote " + out));
  Run verify = Etpack({"verify", out});
  INFO(verify.output);
  CHECK(verify.exit_code == 0);
  CHECK(Contains(verify.output, out + ": ok (.ptd, 3 entries"));
  Run ext = Etpack({"verify", Golden("pte_external.pte"), "--data", out});
  INFO(ext.output);
  CHECK(ext.exit_code == 0);
  // Segment data equals the reference's, byte for byte.
  const etpack::json::Value mine = InspectJson(out);
  const etpack::json::Value ref = InspectJson(Golden("ptd_basic.ptd"));
  const uint64_t size = mine.Find("header")->Find("segment_data_size")->as_uint();
  REQUIRE(size == ref.Find("header")->Find("segment_data_size")->as_uint());
  const uint64_t base = mine.Find("header")->Find("segment_base_offset")->as_uint();
  const uint64_t ref_base = ref.Find("header")->Find("segment_base_offset")->as_uint();
  const auto a = ReadFile(out), b = ReadFile(Golden("ptd_basic.ptd"));
  CHECK(std::vector<uint8_t>(a.begin() + base, a.end()) ==
        std::vector<uint8_t>(b.begin() + ref_base, b.begin() + ref_base + size));

  SECTION("--segment-alignment overrides the manifest") {
    const std::string wide = dir / "wide.ptd";
    Run r =
        Etpack({"pack", Golden("ptd_basic.input.json"), "-o", wide, "--segment-alignment", "4096"});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const etpack::json::Value doc = InspectJson(wide);
    for (const auto& seg : doc.Find("segments")->items()) {
      CHECK(seg.Find("absolute_offset")->as_uint() % 4096 == 0);
    }
  }
}

TEST_CASE("pack --external-named-data writes a fat delegate's named data to a .ptd") {
  TempDir dir;
  etpack::testing::WriteFile(dir / "w.bin", Pattern(4096, 1));
  etpack::testing::WriteFile(dir / "mlx.bin", Pattern(100, 2));
  // A fat delegate: the native program (its weight EXTERNAL "layer.w") and
  // an MLX payload, both bringing w.bin under their own keys.
  const std::string chain = R"("chains": [{"inputs": [], "outputs": [], "instructions": []}],
      "operators": [], "non_const_buffer_sizes": [0])";
  const std::string native = R"({"version": 0, "execution_plan": [{"name": "forward",
      "values": [{"val_type": "Tensor", "val": {"scalar_type": 0, "sizes": [4096],
        "dim_order": [0], "extra_tensor_info": {"fully_qualified_name": "layer.w",
        "location": 1}}}],
      "inputs": [], "outputs": [0], "delegates": [], )" +
                             chain + "}]}";
  const std::string manifest = R"({"format": "pte", "program": {"version": 0,
      "execution_plan": [{"name": "forward", "values": [], "inputs": [], "outputs": [],
        "delegates": [{"id": "NativeBackend", "processed": {"location": 0, "index": 0},
                       "compile_specs": []}], )" +
                               chain + R"(}],
      "backend_delegate_data": [{"data": {"nfat": {"entries": [
        {"backend_id": "NativeBackend", "program": {"program": )" +
                               native + R"(},
         "named_data": {"buffers": [{"file": "w.bin"}],
                        "entries": [{"key": "layer.w", "buffer_index": 0, "alignment": 64}]}},
        {"backend_id": "MLXBackend", "data": {"file": "mlx.bin"},
         "named_data": {"buffers": [{"file": "w.bin"}],
                        "entries": [{"key": "mlx/layer.w", "buffer_index": 0}]}}]}}}]}})";
  WriteFileText(dir / "fat.json", manifest);
  const std::string pte = dir / "m.pte";
  const std::string ptd = dir / "m.ptd";
  Run run = Etpack({"pack", dir / "fat.json", "-o", pte, "--external-named-data", ptd});
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(Contains(run.output, "wrote " + ptd + " (4352 bytes, 2 entries, 1 segment"));
  CHECK(Contains(run.output, "wrote " + pte));
  CHECK(InspectJson(pte).Find("named_data")->items().empty());

  // The program entry's key resolves in the .ptd, and only there.
  Run alone = Etpack({"verify", pte});
  INFO(alone.output);
  CHECK(alone.exit_code == 1);
  CHECK(Contains(alone.output,
                 "EXTERNAL key \"layer.w\" is not in the outer program's "
                 "named data (no .ptd file given)"));
  Run both = Etpack({"verify", pte, "--data", ptd});
  INFO(both.output);
  CHECK(both.exit_code == 0);
  CHECK(Contains(both.output, "1 entry external keys resolve"));
  Run data = Etpack({"verify", ptd});
  INFO(data.output);
  CHECK(data.exit_code == 0);

  SECTION("usage errors") {
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"pack", dir / "fat.json", "-o", pte, "--external-named-data",
                                   pte},
          {"pack", dir / "fat.json", "-o", pte, "--external-named-data", "-"},
          {"pack", Golden("ptd_basic.input.json"), "-o", dir / "x.ptd", "--external-named-data",
           dir / "y.ptd"}}) {
      Run bad = Etpack(args);
      INFO(bad.output);
      CHECK(bad.exit_code == 2);
      CHECK(Contains(bad.output, "etpack: pack: "));
    }
  }
}

TEST_CASE("pack refuses what verify would refuse and writes nothing") {
  using etpack::json::Value;
  struct Case {
    const char* golden;
    std::function<void(Value&)> edit;
    const char* fragment;
  };
  const std::vector<Case> cases = {
      {"pte_constants.input.json",
       [](Value& d) { ManifestValue(d, 1).Set("scalar_type", Value::Int(99)); },
       "execution_plan[0].values[1].scalar_type = 99 is not a scalar type"},
      {"pte_constants.input.json",
       [](Value& d) { ManifestValue(d, 1).Set("data_buffer_idx", Value::Int(999)); },
       "execution_plan[0].values[1].data_buffer_idx = 999 is out of range"},
      {"pte_mutable.input.json",
       [](Value& d) { ManifestValue(d, 4).Set("data_buffer_idx", Value::Int(999)); },
       "execution_plan[0].values[4].data_buffer_idx = 999 is out of range: "
       "mutable_data_segments[0] has 4 offsets"},
      {"pte_constants.input.json",
       [](Value& d) {
         ManifestValue(d, 1).Set("sizes", Value::Array({Value::Int(2), Value::Int(300)}));
       },
       "execution_plan[0].values[1]: 2400 bytes at offset"},
  };
  for (const Case& c : cases) {
    TempDir dir;
    fs::create_directory(dir.path() / "out");
    const std::string manifest = dir / "manifest.json";
    WriteEditedManifest(c.golden, manifest, c.edit);
    Run run = Etpack({"pack", manifest, "-o", dir / "out/model.pte"});
    INFO(run.output);
    CHECK(run.exit_code == 1);
    CHECK(Contains(run.output, c.fragment));
    CHECK(Listing(dir.path() / "out").empty());
  }
}
