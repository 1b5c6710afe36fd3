// The integrity table (docs/integrity.md): written while streaming, found
// again by CheckIntegrity, naming the part a flipped byte lands in; SHA-256
// digests computed in the same pass; and the CLI around both.

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include "catch.h"

#include "etpack/bpte.h"
#include "etpack/bpte_file.h"
#include "etpack/external_data.h"
#include "etpack/integrity.h"
#include "etpack/ptd.h"
#include "etpack/ptd_file.h"
#include "etpack/pte.h"
#include "etpack/pte_file.h"
#include "integrity/hash.h"
#include "integrity/table.h"
#include "test_files.h"
#include "test_programs.h"

namespace etpack {
namespace {

using testing::Bytes;
using testing::Materialize;
using testing::Pattern;
using testing::Read;
using testing::SmallProgram;

// One segment of every kind a .pte has: constants, mutable, delegate,
// named data (then the table).
PteInput EveryKind() {
  PteInput in = SmallProgram({Pattern(24, 1)}, {Pattern(300, 9)});
  in.mutable_data = {Bytes({}), Pattern(12, 2)};
  in.named_data = {{"blob.a", Pattern(40, 5), 1}, {"blob.b", Pattern(70, 6), 64}};
  return in;
}

PteOptions WithTable() {
  PteOptions o;
  o.integrity_table = true;
  return o;
}

std::vector<uint8_t> WrittenPte(PteInput in) {
  Result<PtePlan> plan = PlanPte(std::move(in), WithTable());
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  return Materialize(plan->artifact);
}

// Flips one bit of bytes[offset] and returns what CheckIntegrity says.
Status CheckFlipped(std::vector<uint8_t> bytes, uint64_t offset) {
  bytes[offset] ^= 0x10;
  auto f = testing::TryRead<PteFile>("m.pte", std::move(bytes));
  if (!f.ok()) return f.status();
  return CheckIntegrity(**f, false).status();
}

uint64_t Find(const std::vector<uint8_t>& bytes, const std::string& what) {
  auto it = std::search(bytes.begin(), bytes.end(), what.begin(), what.end());
  REQUIRE(it != bytes.end());
  return static_cast<uint64_t>(it - bytes.begin());
}

TEST_CASE("a .pte with a table verifies, and a flipped byte names its part") {
  const std::vector<uint8_t> bytes = WrittenPte(EveryKind());
  auto f = Read<PteFile>("m.pte", bytes);
  Result<IntegrityCheck> ok = CheckIntegrity(*f, false);
  INFO(ok.status().ToString());
  REQUIRE(ok.ok());
  CHECK(ok->has_table);
  const std::vector<ArtifactPart> parts = PartsOf(*f);
  // head + constants, mutable, delegate, two named blobs, the table.
  REQUIRE(parts.size() == 7);
  CHECK(parts.back().is_table);
  CHECK(ok->parts.size() == 6);

  const std::vector<std::string> expected = {
      "segment 0 (constants)", "segment 1 (mutable)", "segment 2 (delegate TestBackend)",
      "segment 3 (named_data 'blob.a')", "segment 4 (named_data 'blob.b')"};
  for (size_t j = 0; j < expected.size(); ++j) {
    const ArtifactPart& p = parts[j + 1];
    CHECK(p.name == expected[j]);
    Status s = CheckFlipped(bytes, p.offset + p.size / 2);
    INFO(s.ToString());
    CHECK(s.code() == Code::kCorrupt);
    CHECK(s.message().rfind(expected[j] + " [", 0) == 0);
  }
  // The head: a byte of a key, which leaves the flatbuffer well-formed.
  Status head = CheckFlipped(bytes, Find(bytes, "blob.a") + 5);
  INFO(head.ToString());
  CHECK(head.message().rfind("head [0, +", 0) == 0);
  // The table itself: its first entry no longer describes the head.
  Status table = CheckFlipped(bytes, parts.back().offset + 16 + 8);
  INFO(table.ToString());
  CHECK(table.code() == Code::kCorrupt);
  CHECK(testing::Contains(table.message(), "the integrity table records"));
}

TEST_CASE("without the option nothing changes, and no table means nothing to check") {
  PteOptions off;
  off.integrity_table = false;
  Result<PtePlan> a = PlanPte(EveryKind()), b = PlanPte(EveryKind(), off);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->artifact.integrity.empty());
  CHECK(Materialize(a->artifact) == Materialize(b->artifact));
  auto f = Read<PteFile>("m.pte", Materialize(a->artifact));
  Result<IntegrityCheck> c = CheckIntegrity(*f, false);
  REQUIRE(c.ok());
  CHECK(!c->has_table);
  CHECK(c->xxh3.empty());
  // --deep hashes every part anyway.
  Result<IntegrityCheck> deep = CheckIntegrity(*f, true);
  REQUIRE(deep.ok());
  CHECK(deep->xxh3.size() == PartsOf(*f).size());
}

TEST_CASE("the table is deterministic and a repack drops a stale one") {
  const std::vector<uint8_t> once = WrittenPte(EveryKind());
  CHECK(once == WrittenPte(EveryKind()));
  auto f = Read<PteFile>("m.pte", once);
  Result<PteInput> again = f->ToInput();
  REQUIRE(again.ok());
  CHECK(again->named_data.size() == 2);  // blob.a, blob.b: not the table
  Result<PtePlan> plain = PlanPte(std::move(*again), f->InferredOptions());
  REQUIRE(plain.ok());
  CHECK(plain->artifact.integrity.empty());
}

TEST_CASE("user keys may not take the table's prefix") {
  PteInput in = SmallProgram({Pattern(8, 1)});
  in.named_data = {{"etpack.integrity.mine", Pattern(8, 2), 1}};
  Result<PtePlan> plan = PlanPte(std::move(in));
  CHECK(plan.status().code() == Code::kInvalidArgument);
  CHECK(testing::Contains(plan.status().message(), "reserved for the integrity table"));

  PtdInput ptd;
  ptd.buffers = {Pattern(8, 1)};
  ptd.entries = {{"etpack.integrity.x", 0, 1, std::nullopt}};
  CHECK(PlanPtd(ptd).status().code() == Code::kInvalidArgument);
}

TEST_CASE("the placeholder of a table cannot be read outside the writer") {
  Result<PtePlan> plan = PlanPte(EveryKind(), WithTable());
  REQUIRE(plan.ok());
  const Placement& table = plan->artifact.placements.back();
  std::vector<uint8_t> buf(table.source->size());
  CHECK(!table.source->ReadAt(0, buf.data(), buf.size()).ok());
}

// Two .ptd files with the weights of one program, split in halves.
struct SplitWeights {
  PteInput program;
  PtdInput first, second;
};

SplitWeights Split() {
  SplitWeights w;
  ProgramBuilder program;
  MethodBuilder& forward = program.AddMethod("forward");
  forward.ExternalTensor({0, {16}, {}}, "layer0.w");
  forward.ExternalTensor({0, {32}, {}}, "layer1.w");
  w.program.program = std::move(program).Build();
  w.first.buffers = {Pattern(16, 1)};
  w.first.entries = {{"layer0.w", 0, 16, TensorLayout{0, {16}, {0}}}};
  w.second.buffers = {Pattern(32, 2)};
  w.second.entries = {{"layer1.w", 0, 16, TensorLayout{0, {32}, {0}}}};
  return w;
}

TEST_CASE("two .ptd files with tables load together") {
  SplitWeights w = Split();
  PtdOptions o;
  o.integrity_table = true;
  Result<PtdPlan> a = PlanPtd(w.first, o), b = PlanPtd(w.second, o);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  auto fa = Read<PtdFile>("a.ptd", Materialize(a->artifact));
  auto fb = Read<PtdFile>("b.ptd", Materialize(b->artifact));
  REQUIRE(fa->entries().size() == 2);
  // Unique per file: the runtime refuses a key present in two files.
  CHECK(fa->entries()[1].key != fb->entries()[1].key);
  CHECK(IsIntegrityKey(fa->entries()[1].key));
  CHECK(!fa->entries()[1].layout.has_value());
  CHECK(CheckIntegrity(*fa, false)->has_table);
  CHECK(CheckIntegrity(*fb, false)->has_table);

  Result<PtePlan> pte = PlanPte(std::move(w.program), WithTable());
  REQUIRE(pte.ok());
  auto fp = Read<PteFile>("m.pte", Materialize(pte->artifact));
  uint64_t resolved = 0;
  Status s = CheckExternalReferences(*fp, {fa.get(), fb.get()}, &resolved);
  INFO(s.ToString());
  CHECK(s.ok());
  CHECK(resolved == 2);

  // A flipped weight byte names the entry.
  std::vector<uint8_t> bytes = Materialize(a->artifact);
  const uint64_t at = PartsOf(*fa)[1].offset + 3;
  bytes[at] ^= 1;
  auto bad = Read<PtdFile>("a.ptd", bytes);
  Result<IntegrityCheck> c = CheckIntegrity(*bad, false);
  CHECK(c.status().message().rfind("segment 0 (entry 'layer0.w') [", 0) == 0);
}

TEST_CASE("a .bpte carries its program's table in both layouts") {
  Result<PtePlan> pte = PlanPte(EveryKind(), WithTable());
  REQUIRE(pte.ok());
  for (BpteLayout layout : {BpteLayout::kStandard, BpteLayout::kSegmented}) {
    BpteInput in;
    in.program = pte->artifact;
    BpteOptions o;
    o.layout = layout;
    Result<BptePlan> plan = PlanBpte(in, o);
    REQUIRE(plan.ok());
    REQUIRE(plan->artifact.integrity.size() == 1);
    std::vector<uint8_t> bytes = Materialize(plan->artifact);
    {
      auto f = Read<BpteFile>("m.bpte", bytes);
      Result<IntegrityCheck> c = CheckIntegrity(f->program(), false);
      INFO(c.status().ToString());
      REQUIRE(c.ok());
      CHECK(c->has_table);
    }
    // The embedded program is the same bytes as the .pte written alone.
    const std::vector<uint8_t> alone = Materialize(pte->artifact);
    CHECK(std::equal(alone.begin(), alone.end(), bytes.begin() + plan->program_offset));
    bytes[plan->program_offset + PartsOf(*Read<PteFile>("m.pte", alone))[2].offset] ^= 4;
    auto f = Read<BpteFile>("m.bpte", bytes);
    CHECK(CheckIntegrity(f->program(), false).status().message().rfind("segment 1 (mutable)", 0) ==
          0);
  }
}

TEST_CASE("SHA-256 digests come out of the same pass") {
  // FIPS 180-4 example "abc", through the running hash.
  Result<std::vector<uint8_t>> abc = HashSource(*Bytes({'a', 'b', 'c'}), HashKind::kSha256);
  REQUIRE(abc.ok());
  CHECK(HexDigest(*abc) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");

  testing::TempDir dir;
  // A file source too, which the writer reads through its window.
  const std::string weights = dir.path() + "/w.bin";
  testing::WriteFile(weights, testing::PatternBytes(3 << 20, 7));
  PteInput in = EveryKind();
  Result<SourcePtr> file = FileSource(weights);
  REQUIRE(file.ok());
  in.named_data.push_back({"big", *file, 4096});
  Result<PtePlan> plan = PlanPte(std::move(in), WithTable());
  REQUIRE(plan.ok());
  const std::string out = dir.path() + "/m.pte";
  std::vector<ArtifactSha256> digests;
  WriteOptions options;
  options.sha256 = &digests;
  REQUIRE(WriteArtifactFiles({{out, &plan->artifact}}, options).ok());
  REQUIRE(digests.size() == 1);

  Result<std::unique_ptr<PteFile>> f = PteFile::Open(out);
  REQUIRE(f.ok());
  Result<IntegrityCheck> c = CheckIntegrity(**f, false);
  INFO(c.status().ToString());
  REQUIRE(c.ok());
  const std::vector<ArtifactPart> parts = PartsOf(**f);
  Result<std::vector<std::string>> read = Sha256OfParts(**f, parts);
  REQUIRE(read.ok());
  REQUIRE(read->size() == digests[0].segments.size() + 1);
  CHECK((*read)[0] == ToHex(digests[0].head));
  for (size_t j = 0; j < digests[0].segments.size(); ++j) {
    CHECK((*read)[j + 1] == ToHex(digests[0].segments[j]));
  }
}

// The CLI: `etpack ARGS...`, its exit status and combined output.
int Etpack(const std::string& args, std::string* output) {
  const char* bin = std::getenv("ETPACK_BIN");
  REQUIRE(bin != nullptr);
  FILE* pipe = popen((std::string(bin) + " " + args + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buf[4096];
  size_t n;
  output->clear();
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) output->append(buf, n);
  const int status = pclose(pipe);
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

TEST_CASE("etpack verify checks tables; --deep and --digest print hashes") {
  testing::TempDir dir;
  const std::string d = dir.path() + "/";
  std::string out;
  // The golden .pte has constants and delegates; repack it with a table.
  REQUIRE(Etpack("repack " + testing::Golden("pte_all_kinds.pte") + " -o " + d +
                     "t.pte --external-constants " + d + "t.ptd --integrity --digest sha256",
                 &out) == 0);
  INFO(out);
  CHECK(testing::Contains(out, "sha256:"));
  CHECK(testing::Contains(out, d + "t.ptd: segment 0 (entry "));
  REQUIRE(Etpack("verify " + d + "t.pte --data " + d + "t.ptd", &out) == 0);
  CHECK(testing::Contains(out, "t.pte: integrity table matches"));

  // Two .ptd files with tables, loaded together.
  SplitWeights w = Split();
  PtdOptions o;
  o.integrity_table = true;
  Result<PtdPlan> a = PlanPtd(w.first, o), b = PlanPtd(w.second, o);
  Result<PtePlan> m = PlanPte(std::move(w.program), WithTable());
  REQUIRE((a.ok() && b.ok() && m.ok()));
  REQUIRE(
      WriteArtifactFiles(
          {{d + "a.ptd", &a->artifact}, {d + "b.ptd", &b->artifact}, {d + "m.pte", &m->artifact}})
          .ok());
  REQUIRE(Etpack("verify " + d + "m.pte --data " + d + "a.ptd --data " + d + "b.ptd", &out) == 0);
  CHECK(testing::Contains(out, "2 external tensors resolve"));
  CHECK(testing::Contains(out, "m.pte: integrity table matches"));

  std::vector<uint8_t> bytes = testing::ReadFile(d + "t.pte");
  Result<std::unique_ptr<PteFile>> f = PteFile::Open(d + "t.pte");
  REQUIRE(f.ok());
  const ArtifactPart delegate = PartsOf(**f)[2];  // [1] is the empty constant segment
  bytes[delegate.offset] ^= 0x80;
  testing::WriteFile(d + "bad.pte", bytes);
  CHECK(Etpack("verify " + d + "bad.pte", &out) == 1);
  CHECK(testing::Contains(out, "invalid: segment 1 (delegate BackendInline) ["));

  REQUIRE(Etpack("verify --deep " + testing::Golden("pte_all_kinds.pte"), &out) == 0);
  CHECK(testing::Contains(out, "xxh3:"));
  CHECK(testing::Contains(out, "  head\n"));
  REQUIRE(Etpack("inspect " + d + "t.ptd --digest sha256", &out) == 0);
  CHECK(testing::Contains(out, "key 'etpack.integrity."));
  CHECK(Etpack("inspect " + d + "t.ptd --digest md5", &out) == 2);
}

}  // namespace
}  // namespace etpack
