// Shared storage: identical constants stored once behind
// PteOptions::dedup_constants, .ptd tensors always stored once, and what
// inspect reports as saved. Files are planned, written to memory and read
// back with the validating readers.
#include <cstring>
#include <memory>
#include "catch.h"

#include "etpack/inspect.h"
#include "etpack/manifest.h"
#include "etpack/ptd.h"
#include "etpack/ptd_file.h"
#include "etpack/pte.h"
#include "etpack/pte_file.h"
#include "program_etpack_generated.h"
#include "test_files.h"
#include "test_programs.h"

using namespace etpack;
using namespace etpack::testing;

namespace {

// A source counting the bytes read from it; its bytes are `Pattern(n, seed)`'s.
SourcePtr Counted(uint64_t n, uint8_t seed, std::shared_ptr<uint64_t> read) {
  return GeneratorSource("counted", n, [seed, read](uint64_t off, uint8_t* dst, size_t len) {
    *read += len;
    for (size_t k = 0; k < len; ++k) dst[k] = static_cast<uint8_t>(seed + (off + k) * 7);
    return Status::OK();
  });
}

std::vector<uint64_t> ConstantOffsets(const PteFile& f) {
  std::vector<uint64_t> out;
  for (uint64_t o : *f.program().constant_segment()->offsets()) out.push_back(o);
  return out;
}

const json::Value& Dedup(const json::Value& report) { return *report.Find("dedup"); }
uint64_t Shared(const json::Value& r) { return Dedup(r).Find("shared_entries")->as_uint(); }
uint64_t Saved(const json::Value& r) { return Dedup(r).Find("bytes_saved")->as_uint(); }

json::Value PteReport(const PteFile& f) {
  Result<json::Value> r = PteReportJson(f);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return std::move(r).value();
}

}  // namespace

TEST_CASE("dedup_constants: identical constants share one range and each still resolves") {
  // Constants 1 and 3 hold the same bytes from different sources; 2 has
  // their size but other bytes; 4 is empty.
  auto a = Pattern(100, 1), b = Pattern(100, 2), a_copy = Pattern(100, 1), c = Pattern(5, 3);
  PteInput in = SmallProgram({a, b, a_copy, Bytes({}), c});
  PteOptions o;
  o.dedup_constants = true;
  auto plan = PlanPte(std::move(in), o);
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  // Stored: a (100, padded to 112), b (100, padded to 112), c (5).
  CHECK(plan->layout.segments[0].size == 112 + 112 + 5);

  auto f = Read<PteFile>("dedup.pte", Materialize(plan->artifact));
  const std::vector<uint64_t> offsets = ConstantOffsets(*f);
  REQUIRE(offsets.size() == 6);
  CHECK(offsets[1] == 0);
  CHECK(offsets[2] == 112);
  CHECK(offsets[3] == 0);    // a_copy: a's bytes
  CHECK(offsets[4] == 224);  // the empty constant where it would be anyway
  CHECK(offsets[5] == 224);

  // Every tensor reads its own bytes through the reader.
  const std::vector<SourcePtr> want = {a, b, a_copy, Bytes({}), c};
  size_t checked = 0;
  for (const PteTensor& t : f->Tensors()) {
    if (t.data != TensorData::kConstant) continue;
    Result<SourcePtr> s = f->TensorSource(t);
    REQUIRE(s.ok());
    CHECK(*ReadAll(**s) == *ReadAll(*want[t.buffer_index - 1]));
    ++checked;
  }
  CHECK(checked == 5);

  // inspect: one entry in another's bytes, 100 bytes saved.
  const json::Value report = PteReport(*f);
  CHECK(Shared(report) == 1);
  CHECK(Saved(report) == 100);

  SECTION("repack keeps the option and is a fixed point") {
    PteOptions inferred = f->InferredOptions();
    CHECK(inferred.dedup_constants);
    CHECK(inferred.constant_tensor_alignment == 16);
    Result<PteInput> again = f->ToInput();
    REQUIRE(again.ok());
    auto replan = PlanPte(std::move(again).value(), inferred);
    REQUIRE(replan.ok());
    CHECK(Materialize(replan->artifact) == Materialize(plan->artifact));
  }
  SECTION("without the option every constant is stored") {
    auto plain = PlanPte(SmallProgram({a, b, a_copy, Bytes({}), c}));
    REQUIRE(plain.ok());
    CHECK(plain->layout.segments[0].size == 3 * 112 + 5);
    auto g = Read<PteFile>("plain.pte", Materialize(plain->artifact));
    CHECK_FALSE(g->InferredOptions().dedup_constants);
    CHECK(Shared(PteReport(*g)) == 0);
    CHECK(Saved(PteReport(*g)) == 0);
  }
}

TEST_CASE("dedup_constants reads only constants whose size another has") {
  auto read = std::make_shared<uint64_t>(0);
  PteOptions o;
  o.dedup_constants = true;
  SECTION("all sizes distinct: nothing is read, the file is the same as without") {
    std::vector<SourcePtr> constants;
    for (uint64_t n = 1; n <= 20; ++n) constants.push_back(Counted(n * 10, 1, read));
    auto plan = PlanPte(SmallProgram(constants), o);
    REQUIRE(plan.ok());
    CHECK(*read == 0);
    auto plain = PlanPte(SmallProgram(constants));
    REQUIRE(plain.ok());
    CHECK(plan->artifact.head == plain->artifact.head);
    CHECK(plan->layout.segments[0].size == plain->layout.segments[0].size);
  }
  SECTION("equal sizes: each hashed once, a match compared once") {
    std::vector<SourcePtr> constants;
    for (uint8_t i = 0; i < 10; ++i) constants.push_back(Counted(1000, i, read));
    constants.push_back(Counted(1000, 0, read));  // a repeat of the first
    constants.push_back(Counted(7, 0, read));     // alone in its size: never read
    auto plan = PlanPte(SmallProgram(constants), o);
    REQUIRE(plan.ok());
    CHECK(*read == (11 + 2) * 1000);
    CHECK(plan->layout.segments[0].size == 10 * 1008 + 7);
  }
}

TEST_CASE("dedup_constants on golden inputs without repeats writes the same file as without") {
  // Without the option the goldens are reproduced (golden_test.cc).
  for (const char* name : {"pte_constants", "pte_constants_align64", "pte_mutable",
                           "pte_multi_method", "pte_all_kinds", "pte_named_data"}) {
    SECTION(name) {
      auto manifest = LoadPteManifest(GoldenDir() + "/" + name + ".input.json");
      REQUIRE(manifest.ok());
      auto plain = PlanPte(manifest->input, manifest->options);
      REQUIRE(plain.ok());
      manifest->options.dedup_constants = true;
      auto plan = PlanPte(std::move(manifest->input), manifest->options);
      INFO(plan.status().ToString());
      REQUIRE(plan.ok());
      const bool same = Materialize(plan->artifact) == Materialize(plain->artifact);
      CHECK(same);
    }
  }
}

TEST_CASE(".ptd: tensors with identical bytes share a segment and both resolve") {
  PtdInput in;
  // Two buffers with the same bytes (tied embeddings), one of their size
  // with other bytes.
  in.buffers = {Pattern(64, 5), Pattern(64, 6), Pattern(64, 5)};
  const TensorLayout f32{6, {4, 4}, {0, 1}};
  in.entries = {{"embed.weight", 0, 1, f32}, {"other", 1, 1, f32}, {"lm_head.weight", 2, 1, f32}};
  auto plan = PlanPtd(in);
  REQUIRE(plan.ok());
  CHECK(plan->layout.segments.size() == 2);
  auto f = Read<PtdFile>("tied.ptd", Materialize(plan->artifact));
  REQUIRE(f->entries().size() == 3);
  CHECK(f->entries()[0].segment_index == f->entries()[2].segment_index);
  CHECK(*ReadAll(*f->EntrySource(2)) == *ReadAll(*in.buffers[2]));
  CHECK(*ReadAll(*f->EntrySource(1)) == *ReadAll(*in.buffers[1]));
  const json::Value report = PtdReportJson(*f);
  CHECK(Shared(report) == 1);
  CHECK(Saved(report) == 64);
}

TEST_CASE("inspect reports what the reference's own sharing saves in the goldens") {
  struct Case {
    const char* file;
    uint64_t shared, saved;
  };
  // pte_delegates: delegate 2 is a copy of delegate 0 (300 bytes);
  // pte_named_data: blob.b_alias shares blob.b (200 bytes); ptd_shared_blob:
  // t.a_alias shares t.a (16 bytes); pte_constants: nothing shared.
  for (const Case& c : {Case{"pte_delegates.pte", 1, 300}, Case{"pte_named_data.pte", 1, 200},
                        Case{"ptd_shared_blob.ptd", 1, 16}, Case{"pte_constants.pte", 0, 0}}) {
    SECTION(c.file) {
      Result<json::Value> r = InspectJson(GoldenDir() + "/" + c.file);
      INFO(r.status().ToString());
      REQUIRE(r.ok());
      CHECK(Shared(*r) == c.shared);
      CHECK(Saved(*r) == c.saved);
    }
  }
  SECTION("a .bpte reports its program's") {
    Result<json::Value> r = InspectJson(GoldenDir() + "/bpte_basic.bpte");
    REQUIRE(r.ok());
    CHECK(Shared(*r->Find("program")) == 0);
  }
}

TEST_CASE("inspect's report lists fat delegates") {
  Result<json::Value> r = InspectJson(GoldenDir() + "/pte_fat.pte");
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  const auto& fat = r->Find("fat_delegates")->items();
  REQUIRE(fat.size() == 1);
  CHECK(fat[0].Find("entries")->items().size() == 2);
  // The fat golden's specialization shares the native program's weight.
  CHECK(Shared(*r) >= 1);
  Result<json::Value> plain = InspectJson(GoldenDir() + "/pte_constants.pte");
  REQUIRE(plain.ok());
  CHECK(plain->Find("fat_delegates")->items().empty());
}
