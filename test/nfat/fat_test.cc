// Fat delegates: the lowerings' named data merged into one store (every
// content once), the NFAT container nested into the outer plan without being
// read, the manifest form, and the reference's fat .pte rebuilt from its
// parts.

#include "etpack/fat_delegate.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>
#include "catch.h"

#include "core/base64.h"
#include "etpack/json.h"
#include "etpack/manifest.h"
#include "etpack/nfat.h"
#include "etpack/program_builder.h"
#include "etpack/pte_file.h"
#include "test_files.h"
#include "test_programs.h"

namespace etpack {
namespace {

using testing::Contains;
using testing::Golden;
using testing::Materialize;
using testing::PatternBytes;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

std::vector<uint8_t> Decode(const std::string& b64) {
  std::vector<uint8_t> out;
  std::string why;
  REQUIRE(DecodeBase64(b64, &out, &why));
  return out;
}

// The native lowering: one method whose weight is EXTERNAL under `key`; no
// constants, so it plans to a bare flatbuffer.
ArtifactPlan NativeProgram(const std::string& key, uint64_t weight_bytes) {
  ProgramBuilder b;
  MethodBuilder& m = b.AddMethod("forward");
  const int32_t w = m.ExternalTensor(testing::ByteShape(weight_bytes), key);
  m.SetInputs({w});
  m.SetOutputs({w});
  PteInput in;
  in.program = std::move(b).Build();
  Result<PtePlan> plan = PlanPte(std::move(in));
  REQUIRE(plan.ok());
  REQUIRE(plan->layout.segment_data_size == 0);
  return plan->artifact;
}

// The reader owns the bytes (they back the sources it hands out).
std::unique_ptr<PteFile> ReadBack(std::vector<uint8_t> bytes) {
  auto owned = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  Result<std::unique_ptr<PteFile>> f =
      PteFile::FromMemory("fat.pte", owned->data(), owned->size(), owned);
  INFO(f.status().ToString());
  REQUIRE(f.ok());
  return std::move(f).value();
}

}  // namespace

TEST_CASE("pte_fat rebuilt from its lowerings equals the reference's, byte for byte in data") {
  Result<json::Value> nfat = json::ParseFile(Golden("nfat_basic.input.json"));
  REQUIRE(nfat.ok());
  const auto& items = nfat->Find("entries")->items();
  REQUIRE(items.size() == 2);
  Result<PteManifest> golden = LoadPteManifest(Golden("pte_fat.input.json"));
  REQUIRE(golden.ok());
  // The merged store of the golden input: weight, bias, and the weight again
  // under the MLX key. Each lowering brings its own copy here.
  const std::vector<NamedData>& merged = golden->input.named_data;
  REQUIRE(merged.size() == 3);
  auto copy = [](const SourcePtr& s) { return OwnedSource(*ReadAll(*s)); };

  std::vector<FatEntry> entries(2);
  entries[0].backend_id = items[0].Find("backend_id")->as_string();
  entries[0].payload =
      WholeSourcePlan(OwnedSource(Decode(items[0].Find("data_base64")->as_string())));
  entries[0].named_data = {{merged[0].key, copy(merged[0].source), 16},
                           {merged[1].key, copy(merged[1].source), 16}};
  entries[1].backend_id = items[1].Find("backend_id")->as_string();
  entries[1].payload =
      WholeSourcePlan(OwnedSource(Decode(items[1].Find("data_base64")->as_string())));
  entries[1].named_data = {{merged[2].key, copy(merged[2].source), 1024}};

  Result<FatDelegate> fat = PlanFatDelegate(std::move(entries), NfatOptions{1});
  REQUIRE(fat.ok());
  REQUIRE(fat->named_data.size() == 3);
  // Identical bytes under another key: one source, so one buffer.
  CHECK(fat->named_data[2].source == fat->named_data[0].source);
  CHECK(*ReadAll(*fat->payload) == ReadFile(Golden("nfat_basic.nfat")));

  PteInput input = golden->input;
  input.delegates = {fat->payload};
  input.named_data = fat->named_data;
  Result<PtePlan> mine = PlanPte(std::move(input), golden->options);
  REQUIRE(mine.ok());
  Result<PtePlan> reference = PlanPte(golden->input, golden->options);
  REQUIRE(reference.ok());
  // The golden input is checked against pte_fat.pte in golden_test.
  CHECK(Materialize(mine->artifact) == Materialize(reference->artifact));
  // segments {0,0} {0,2225} {2304,64} {2432,16}: the shared weight once.
  REQUIRE(mine->layout.segments.size() == 4);
  CHECK(mine->layout.segments[2].offset == 2304);
  CHECK(mine->layout.segments[3].offset == 2432);
}

TEST_CASE("three lowerings sharing a weight from files store it once, streamed from its file") {
  TempDir dir;
  constexpr uint64_t kWeight = 1 << 20;
  const std::vector<uint8_t> weight = PatternBytes(kWeight, 5);
  WriteFile(dir.File("w.bin"), weight);
  WriteFile(dir.File("w_copy.bin"), weight);  // what a second exporter wrote
  WriteFile(dir.File("mlx.bin"), PatternBytes(4000, 6));
  WriteFile(dir.File("vk.bin"), PatternBytes(3000, 7));
  auto file = [&](const std::string& name) {
    Result<SourcePtr> s = FileSource(dir.File(name));
    REQUIRE(s.ok());
    return *s;
  };
  const SourcePtr w = file("w.bin");

  auto make = [&](uint64_t vk_alignment) {
    std::vector<FatEntry> e(3);
    e[0] = {kNativeBackendId, NativeProgram("layer.w", kWeight), {{"layer.w", w, 16}}};
    e[1] = {
        "MLXBackend", WholeSourcePlan(file("mlx.bin")), {{"mlx/layer.w", file("w_copy.bin"), 64}}};
    e[2] = {"VulkanBackend",
            WholeSourcePlan(file("vk.bin")),
            {{"vk/layer.w", w, vk_alignment}, {"layer.w", w, 16}}};
    return e;
  };

  Result<FatDelegate> fat = PlanFatDelegate(make(4096));
  REQUIRE(fat.ok());
  REQUIRE(fat->entries.size() == 3);
  CHECK(fat->entries[0].alignment >= 64);  // default payload alignment
  PteInput input = testing::SmallProgram({}, {fat->payload});
  input.named_data = fat->named_data;

  SECTION("the first key's alignment by default") {
    Result<PtePlan> plan = PlanPte(input);
    REQUIRE(plan.ok());
    uint64_t named_bytes = 0;
    for (const PteSegmentMap::Segment& s : plan->layout.segments) {
      if (s.role == SegmentRole::kNamedData) named_bytes += s.size;
    }
    CHECK(named_bytes == kWeight);  // one copy, not three
    CHECK(plan->artifact.file_size < kWeight + 4000 + 3000 + 8192);
    // The weight and the payload files are placed as file ranges (copied
    // in the kernel), not read through the container.
    int file_placements = 0;
    for (const Placement& p : plan->artifact.placements) {
      if (p.source->file_range() != nullptr) ++file_placements;
    }
    CHECK(file_placements == 3);  // mlx.bin, vk.bin, w.bin
    std::unique_ptr<PteFile> f = ReadBack(Materialize(plan->artifact));
    REQUIRE(f->named_data().size() == 3);  // layer.w, mlx/layer.w, vk/layer.w
    CHECK(f->named_data()[0].segment_index == f->named_data()[2].segment_index);
    const uint32_t seg = f->named_data()[0].segment_index;
    CHECK(*ReadAll(*f->SegmentSource(seg)) == weight);
    CHECK(f->layout().segments[seg].alignment == 128);
  }
  SECTION("the strictest alignment of the keys when asked") {
    PteOptions o;
    o.strictest_shared_alignment = true;
    Result<PtePlan> plan = PlanPte(input, o);
    REQUIRE(plan.ok());
    // Relative to the segment base, as every segment alignment (the base
    // itself is at a multiple of segment_alignment in the file).
    std::unique_ptr<PteFile> f = ReadBack(Materialize(plan->artifact));
    const uint32_t seg = f->named_data()[0].segment_index;
    CHECK(f->layout().segments[seg].offset % 4096 == 0);
    CHECK(plan->layout.segments[seg].alignment == 4096);
  }
  SECTION("or into a .ptd") {
    PtdInput ptd = PtdInputOf(fat->named_data);
    CHECK(ptd.buffers.size() == 1);
    Result<PtdPlan> plan = PlanPtd(ptd);
    REQUIRE(plan.ok());
    CHECK(plan->layout.segments.size() == 1);
    CHECK(plan->layout.segments[0].size == kWeight);
  }
}

TEST_CASE("one key with two contents is an error naming both entries") {
  std::vector<FatEntry> e(2);
  e[0] = {
      kNativeBackendId, WholeSourcePlan(testing::Pattern(10, 1)), {{"w", testing::Pattern(32, 1)}}};
  e[1] = {"MLXBackend",
          WholeSourcePlan(testing::Pattern(10, 2)),
          {{"b", testing::Pattern(8, 3)}, {"w", testing::Pattern(32, 2)}}};
  Result<FatDelegate> fat = PlanFatDelegate(std::move(e));
  REQUIRE_FALSE(fat.ok());
  CHECK(fat.status().code() == Code::kInvalidArgument);
  CHECK(fat.status().message() ==
        "NFAT entries[1] \"MLXBackend\" named_data[1]: key \"w\" (32 bytes) is already NFAT "
        "entries[0] \"NativeBackend\" named_data[0] with different bytes (32 bytes); one key can "
        "hold only one content");
  // And in a .pte's own named data, naming both.
  PteInput in = testing::SmallProgram({});
  in.named_data = {{"k", testing::Pattern(8, 1), 1}, {"k", testing::Pattern(8, 2), 1}};
  Result<PtePlan> plan = PlanPte(in);
  REQUIRE_FALSE(plan.ok());
  CHECK(Contains(plan.status().message(), "named_data[1]: key \"k\""));
  CHECK(Contains(plan.status().message(), "is already named_data[0]"));
}

TEST_CASE("a single lowering is its bare payload; bad entries are named") {
  Result<FatDelegate> one = PlanFatDelegate(
      {{kNativeBackendId, NativeProgram("w", 16), {{"w", testing::Pattern(16, 1)}}}});
  REQUIRE(one.ok());
  CHECK(one->entries.empty());
  Result<bool> magic = HasNfatMagic(*one->payload);
  REQUIRE(magic.ok());
  CHECK_FALSE(*magic);
  Result<FatDelegate> bad = PlanFatDelegate({{kNativeBackendId, NativeProgram("w", 16), {}},
                                             {"", WholeSourcePlan(testing::Pattern(1, 1)), {}}});
  REQUIRE_FALSE(bad.ok());
  CHECK(Contains(bad.status().message(), "NFAT entries[1] \"\": backend_id is empty"));
}

TEST_CASE("a manifest describes a fat delegate: a nested program, files, named data") {
  TempDir dir;
  const std::vector<uint8_t> weight = PatternBytes(5000, 3);
  WriteFile(dir.File("w.bin"), weight);
  WriteFile(dir.File("mlx.bin"), PatternBytes(700, 4));
  ProgramBuilder native;
  MethodBuilder& m = native.AddMethod("forward");
  m.SetInputs({m.ExternalTensor(testing::ByteShape(5000), "layer.w")});
  const std::string native_tree = json::Print(std::move(native).Build().tree());

  ProgramBuilder outer;
  outer.AddMethod("forward").Delegate(kNativeBackendId, 0);
  const std::string outer_tree = json::Print(std::move(outer).Build().tree());
  // The outer program's delegate data is the fat delegate.
  json::Value doc = json::Value::Object(
      {{"format", json::Value::String("pte")}, {"program", *json::Parse(outer_tree)}});
  const std::string fat = R"({"nfat": {"payload_alignment": 128, "entries": [
      {"backend_id": "NativeBackend", "program": {"program": )" +
                          native_tree + R"(},
       "named_data": {"buffers": [{"file": "w.bin"}],
                      "entries": [{"key": "layer.w", "buffer_index": 0, "alignment": 64}]}},
      {"backend_id": "MLXBackend", "data": {"file": "mlx.bin"},
       "named_data": {"buffers": [{"file": "w.bin"}],
                      "entries": [{"key": "mlx/layer.w", "buffer_index": 0}]}}]}})";
  doc.Find("program")->Set(
      "backend_delegate_data",
      json::Value::Array({json::Value::Object({{"data", *json::Parse(fat)}})}));
  WriteFile(dir.File("fat.json"), json::Print(doc));

  Result<PteManifest> manifest = LoadPteManifest(dir.File("fat.json"));
  INFO(manifest.status().ToString());
  REQUIRE(manifest.ok());
  REQUIRE(manifest->input.named_data.size() == 2);
  Result<PtePlan> plan = PlanPte(manifest->input, manifest->options);
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  std::unique_ptr<PteFile> f = ReadBack(Materialize(plan->artifact));
  REQUIRE(f->named_data().size() == 2);
  CHECK(f->named_data()[0].segment_index == f->named_data()[1].segment_index);
  Result<NfatContainer> c =
      NfatContainer::Open(f->DelegateSource(f->methods()[0].delegates[0]), "fat.json: delegate 0");
  REQUIRE(c.ok());
  REQUIRE(c->entries().size() == 2);
  CHECK(c->entries()[1].position % 128 == 0);
  CHECK(*ReadAll(*c->EntrySource(1)) == PatternBytes(700, 4));
  const std::vector<uint8_t> program = *ReadAll(*c->EntrySource(0));
  std::unique_ptr<PteFile> inner = ReadBack(program);
  CHECK(inner->methods()[0].name == "forward");

  SECTION("a program entry with segment data is refused") {
    const std::string with_constants = R"({"format": "pte", "program": {"program": {
        "execution_plan": [], "constant_buffer": [{"storage": {"base64": "", "size": 0}},
        {"storage": {"base64": "AAEC", "size": 3}}]}}})";
    json::Value bad = doc;
    json::Value& entry = bad.Find("program")
                             ->Find("backend_delegate_data")
                             ->items()[0]
                             .Find("data")
                             ->Find("nfat")
                             ->Find("entries")
                             ->items()[0];
    entry.Set("program", *json::Parse(with_constants)->Find("program"));
    WriteFile(dir.File("bad.json"), json::Print(bad));
    Result<PteManifest> refused = LoadPteManifest(dir.File("bad.json"));
    REQUIRE_FALSE(refused.ok());
    CHECK(Contains(refused.status().message(),
                   "program.backend_delegate_data[0].data.nfat.entries[0].program: plans to 3 "
                   "bytes of segment data"));
  }
}

}  // namespace etpack
