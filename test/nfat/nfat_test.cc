// NFAT containers: the reference packer's goldens reproduced at alignment 1,
// aligned layouts read back, nested programs streamed and verified, and
// every malformed-container class refused without reading outside the
// payload.

#include "etpack/nfat.h"

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>
#include "catch.h"

#include "core/base64.h"
#include "etpack/artifact_source.h"
#include "etpack/json.h"
#include "etpack/pte.h"
#include "etpack/pte_file.h"
#include "plan/assembler.h"
#include "test_files.h"
#include "test_programs.h"

namespace etpack {
namespace {

using testing::Contains;
using testing::Golden;
using testing::Materialize;
using testing::PatternBytes;
using testing::ReadFile;

struct GoldenEntry {
  std::string id;
  std::vector<uint8_t> bytes;
};

std::vector<GoldenEntry> ReadInput(const std::string& name) {
  Result<json::Value> doc = json::ParseFile(Golden(name));
  REQUIRE(doc.ok());
  REQUIRE(doc->Find("format")->as_string() == "nfat");
  std::vector<GoldenEntry> out;
  for (const json::Value& e : doc->Find("entries")->items()) {
    GoldenEntry g;
    g.id = e.Find("backend_id")->as_string();
    std::string why;
    REQUIRE(DecodeBase64(e.Find("data_base64")->as_string(), &g.bytes, &why));
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<NfatEntryInput> Inputs(const std::vector<GoldenEntry>& entries) {
  std::vector<NfatEntryInput> in;
  for (const GoldenEntry& e : entries) in.push_back(NfatBytes(e.id, OwnedSource(e.bytes)));
  return in;
}

std::vector<uint8_t> Bytes(const SourcePtr& s) {
  Result<std::vector<uint8_t>> all = ReadAll(*s);
  REQUIRE(all.ok());
  return std::move(all).value();
}

void CheckGolden(const std::string& stem) {
  const std::vector<GoldenEntry> entries = ReadInput(stem + ".input.json");
  Result<NfatPlan> plan = PlanNfat(Inputs(entries), NfatOptions{1});
  REQUIRE(plan.ok());
  const std::vector<uint8_t> golden = ReadFile(Golden(stem + ".nfat"));
  CHECK(Materialize(plan->artifact) == golden);

  Result<NfatContainer> read =
      NfatContainer::FromMemory(golden.data(), golden.size(), nullptr, stem);
  REQUIRE(read.ok());
  REQUIRE(read->entries().size() == entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    const NfatEntry& got = read->entries()[i];
    const NfatEntry& planned = plan->entries[i];
    CHECK(got.backend_id == entries[i].id);
    CHECK(got.length == entries[i].bytes.size());
    CHECK(got.offset == planned.offset);
    CHECK(got.position == planned.position);
    CHECK(got.alignment == planned.alignment);
    CHECK(Bytes(read->EntrySource(i)) == entries[i].bytes);
  }
}

TEST_CASE("nfat_basic and nfat_three are reproduced byte for byte at alignment 1") {
  CheckGolden("nfat_basic");
  CheckGolden("nfat_three");
}

TEST_CASE("golden tables read as documented") {
  const std::vector<uint8_t> basic = ReadFile(Golden("nfat_basic.nfat"));
  Result<NfatContainer> c = NfatContainer::FromMemory(basic.data(), basic.size(), nullptr);
  REQUIRE(c.ok());
  CHECK(c->data_offset() == 12 + 48 * 2);
  REQUIRE(c->entries().size() == 2);
  CHECK(c->entries()[0].backend_id == "NativeBackend");
  CHECK(c->entries()[0].offset == 0);
  CHECK(c->entries()[0].length == 2080);
  CHECK(c->entries()[1].backend_id == "MLXBackend");
  CHECK(c->entries()[1].offset == 2080);
  CHECK(c->entries()[1].length == 37);
  CHECK(c->entries()[1].position == 108 + 2080);
  CHECK(c->entries()[1].alignment == 4);  // 2188 = 4 * 547

  Result<size_t> mlx = c->Find("MLXBackend");
  REQUIRE(mlx.ok());
  CHECK(*mlx == 1);
  Result<size_t> none = c->Find("XnnpackBackend");
  CHECK(none.status().code() == Code::kNotFound);
  CHECK(Contains(none.status().message(), "\"NativeBackend\", \"MLXBackend\""));

  // Entry 0 is a Program flatbuffer on its own.
  const std::vector<uint8_t> native = Bytes(c->EntrySource(0));
  Result<std::unique_ptr<PteFile>> program =
      PteFile::FromMemory("native", native.data(), native.size(), nullptr);
  REQUIRE(program.ok());
  CHECK_FALSE((*program)->header().present);

  const std::vector<uint8_t> three = ReadFile(Golden("nfat_three.nfat"));
  Result<NfatContainer> t = NfatContainer::FromMemory(three.data(), three.size(), nullptr);
  REQUIRE(t.ok());
  REQUIRE(t->entries().size() == 3);
  CHECK(t->entries()[0].offset == 0);
  CHECK(t->entries()[1].offset == 0);
  CHECK(t->entries()[2].offset == 1);
  CHECK(t->entries()[2].backend_id.size() == 32);
}

TEST_CASE("the fat golden .pte carries nfat_basic as its delegate segment") {
  Result<std::unique_ptr<PteFile>> pte = PteFile::Open(Golden("pte_fat.pte"));
  REQUIRE(pte.ok());
  const PteSegmentMap& layout = (*pte)->layout();
  size_t delegate = layout.segments.size();
  for (size_t i = 0; i < layout.segments.size(); ++i) {
    if (layout.segments[i].role == SegmentRole::kDelegate) delegate = i;
  }
  REQUIRE(delegate < layout.segments.size());
  SourcePtr payload = (*pte)->SegmentSource(delegate);
  Result<bool> magic = HasNfatMagic(*payload);
  REQUIRE(magic.ok());
  CHECK(*magic);
  Result<NfatContainer> c = NfatContainer::Open(payload, "pte_fat.pte: delegate 0");
  REQUIRE(c.ok());
  CHECK(Bytes(payload) == ReadFile(Golden("nfat_basic.nfat")));
  // The segment is a file range, and so are its entries.
  CHECK(c->EntrySource(1)->file_range() != nullptr);
}

TEST_CASE("HasNfatMagic tells containers from programs and short payloads") {
  const std::vector<uint8_t> basic = ReadFile(Golden("nfat_basic.nfat"));
  Result<bool> yes = HasNfatMagic(*MemorySource(basic.data(), basic.size()));
  REQUIRE(yes.ok());
  CHECK(*yes);
  const std::vector<uint8_t> pte = ReadFile(Golden("pte_fat.pte"));
  Result<bool> no = HasNfatMagic(*MemorySource(pte.data(), pte.size()));
  REQUIRE(no.ok());
  CHECK_FALSE(*no);
  Result<bool> tiny = HasNfatMagic(*OwnedSource({'N', 'F', 'A'}));
  REQUIRE(tiny.ok());
  CHECK_FALSE(*tiny);
}

TEST_CASE("aligned containers place every payload on the alignment and read back") {
  for (uint64_t align : {uint64_t{16}, uint64_t{64}, uint64_t{4096}}) {
    INFO("alignment " << align);
    std::vector<std::vector<uint8_t>> payloads = {
        PatternBytes(5, 1), {}, PatternBytes(100, 2), PatternBytes(1, 3), {}};
    std::vector<NfatEntryInput> in;
    for (size_t i = 0; i < payloads.size(); ++i) {
      in.push_back(NfatBytes("Backend" + std::to_string(i), OwnedSource(payloads[i])));
    }
    Result<NfatPlan> plan = PlanNfat(in, NfatOptions{align});
    REQUIRE(plan.ok());
    const std::vector<uint8_t> bytes = Materialize(plan->artifact);
    uint64_t last_end = 0;
    for (const NfatEntry& e : plan->entries) {
      if (e.length > 0) {
        CHECK(e.position % align == 0);
        CHECK(e.alignment >= align);
      }
      last_end = std::max(last_end, e.position + e.length);
    }
    CHECK(bytes.size() == last_end);  // no padding after the last payload

    Result<NfatContainer> c = NfatContainer::FromMemory(bytes.data(), bytes.size(), nullptr);
    REQUIRE(c.ok());
    REQUIRE(c->entries().size() == payloads.size());
    for (size_t i = 0; i < payloads.size(); ++i) {
      CHECK(c->entries()[i].backend_id == plan->entries[i].backend_id);
      CHECK(c->entries()[i].offset == plan->entries[i].offset);
      CHECK(c->entries()[i].alignment == plan->entries[i].alignment);
      CHECK(Bytes(c->EntrySource(i)) == payloads[i]);
    }
  }
}

TEST_CASE("the default alignment is 64 and only empty entries give a container no data") {
  std::vector<NfatEntryInput> in = {NfatBytes("A", OwnedSource(PatternBytes(3))),
                                    NfatBytes("B", OwnedSource(PatternBytes(3)))};
  Result<NfatPlan> plan = PlanNfat(in);
  REQUIRE(plan.ok());
  CHECK(plan->entries[0].position == 128);  // the 108-byte table, padded
  CHECK(plan->entries[0].offset == 20);
  CHECK(plan->entries[1].position == 192);
  CHECK(plan->artifact.file_size == 195);

  Result<NfatPlan> empty =
      PlanNfat({NfatBytes("A", OwnedSource({})), NfatBytes("B", OwnedSource({}))});
  REQUIRE(empty.ok());
  CHECK(empty->artifact.file_size == 108);
  CHECK(empty->entries[0].offset == 0);
  CHECK(empty->entries[1].offset == 0);
}

TEST_CASE("file-range entries stream from their files and read back as file ranges") {
  testing::TempDir dir;
  const std::vector<uint8_t> weights = PatternBytes(10000, 7);
  testing::WriteFile(dir.File("mlx.bin"), weights);
  Result<SourcePtr> range = FileSource(dir.File("mlx.bin"), 100, 5000);
  REQUIRE(range.ok());
  Result<NfatPlan> plan = PlanNfat(
      {NfatBytes("NativeBackend", OwnedSource(PatternBytes(64))), NfatBytes("MLXBackend", *range)});
  REQUIRE(plan.ok());
  REQUIRE(WriteArtifactFile(dir.File("fat.nfat"), plan->artifact).ok());

  Result<SourcePtr> file = FileSource(dir.File("fat.nfat"));
  REQUIRE(file.ok());
  Result<NfatContainer> c = NfatContainer::Open(*file, "fat.nfat");
  REQUIRE(c.ok());
  SourcePtr mlx = c->EntrySource(1);
  CHECK(mlx->file_range() != nullptr);
  CHECK(Bytes(mlx) == std::vector<uint8_t>(weights.begin() + 100, weights.begin() + 5100));
}

TEST_CASE("a nested program entry is streamed from its plan and verifies as a program") {
  // A .pte with a constant segment, so its plan has a header and placements.
  PteInput program = testing::SmallProgram({testing::Pattern(300, 1), testing::Pattern(77, 2)});
  Result<PtePlan> pte = PlanPte(program);
  REQUIRE(pte.ok());
  REQUIRE_FALSE(pte->artifact.placements.empty());
  const std::vector<uint8_t> pte_bytes = Materialize(pte->artifact);

  NfatEntryInput native{"NativeBackend", pte->artifact};
  Result<NfatPlan> fat =
      PlanNfat({native, NfatBytes("MLXBackend", OwnedSource(PatternBytes(37, 9)))});
  REQUIRE(fat.ok());
  CHECK(fat->entries[0].length == pte_bytes.size());
  // Nested further as a segment of another artifact, it keeps its own layout.
  Result<Segment> nested = NestedSegment(fat->artifact, 128);
  REQUIRE(nested.ok());
  CHECK(nested->size == fat->artifact.file_size);

  // The container as a delegate payload of an outer program, never
  // materialized on the way in.
  Result<SourcePtr> payload = ArtifactSource(fat->artifact, "fat delegate");
  REQUIRE(payload.ok());
  Result<PtePlan> outer = PlanPte(testing::SmallProgram({}, {*payload}));
  REQUIRE(outer.ok());
  const std::vector<uint8_t> outer_bytes = Materialize(outer->artifact);
  Result<std::unique_ptr<PteFile>> outer_file =
      PteFile::FromMemory("outer", outer_bytes.data(), outer_bytes.size(), nullptr);
  REQUIRE(outer_file.ok());
  const PteSegmentMap& layout = (*outer_file)->layout();
  size_t delegate = layout.segments.size();
  for (size_t i = 0; i < layout.segments.size(); ++i) {
    if (layout.segments[i].role == SegmentRole::kDelegate) delegate = i;
  }
  REQUIRE(delegate < layout.segments.size());

  Result<NfatContainer> c =
      NfatContainer::Open((*outer_file)->SegmentSource(delegate), "outer: delegate 0");
  REQUIRE(c.ok());
  Result<size_t> i = c->Find("NativeBackend");
  REQUIRE(i.ok());
  const std::vector<uint8_t> extracted = Bytes(c->EntrySource(*i));
  CHECK(extracted == pte_bytes);
  Result<std::unique_ptr<PteFile>> inner =
      PteFile::FromMemory("native", extracted.data(), extracted.size(), nullptr);
  REQUIRE(inner.ok());
  CHECK((*inner)->header().present);
  CHECK((*inner)->layout().segments.size() == pte->layout.segments.size());
}

TEST_CASE("the planner refuses bad ids, bad plans and bad options") {
  auto error = [](std::vector<NfatEntryInput> in, uint64_t align = 64) {
    Result<NfatPlan> p = PlanNfat(in, NfatOptions{align});
    REQUIRE_FALSE(p.ok());
    CHECK(p.status().code() == Code::kInvalidArgument);
    return p.status().message();
  };
  SourcePtr b = OwnedSource({1, 2, 3});
  CHECK(Contains(error({}), "no entries"));
  CHECK(Contains(error({NfatBytes("A", b)}, 3), "payload_alignment = 3"));
  CHECK(Contains(error({NfatBytes("A", b)}, kMaxAlignment * 2),
                 "payload_alignment = 2147483648 exceeds the maximum of 1073741824 (1 GiB)"));
  std::string m = error({NfatBytes("A", b), NfatBytes(std::string(33, 'x'), b)});
  CHECK(Contains(m, "entries[1]"));
  CHECK(Contains(m, "33 bytes"));
  CHECK(Contains(error({NfatBytes("", b)}), "entries[0] \"\": backend_id is empty"));
  CHECK(Contains(error({NfatBytes("caf\xc3\xa9", b)}), "0xc3 at 3, which is not ASCII"));
  CHECK(Contains(error({NfatBytes(std::string("a\0b", 3), b)}), "0x00 at 1"));
  CHECK(Contains(error({NfatBytes("A", b), NfatBytes("B", b), NfatBytes("A", b)}),
                 "entries[2] \"A\": backend_id is already entries[0]'s"));
  // Exactly 32 characters is the longest id, with no NUL in the table.
  CHECK(PlanNfat({NfatBytes(std::string(32, 'x'), b)}).ok());

  NfatEntryInput broken{"Native", {}};
  broken.payload.file_size = 2;
  broken.payload.placements.push_back({0, 1, b});  // 3 bytes in a 2-byte plan
  m = error({broken});
  CHECK(Contains(m, "entries[0] \"Native\" payload"));
  CHECK(Contains(m, "placements[0]"));
}

TEST_CASE("a container that would not fit in 64 bits is kOutOfRange") {
  auto huge = [] {
    return GeneratorSource("huge", uint64_t{1} << 63,
                           [](uint64_t, uint8_t*, size_t) { return Status::OK(); });
  };
  Result<NfatPlan> p = PlanNfat({NfatBytes("A", huge()), NfatBytes("B", huge())}, NfatOptions{1});
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().code() == Code::kOutOfRange);
  // One of them fits, and the table says where it is without reading it.
  p = PlanNfat({NfatBytes("A", huge())});
  REQUIRE(p.ok());
  CHECK(p->entries[0].length == uint64_t{1} << 63);
  CHECK(p->artifact.file_size == 64 + (uint64_t{1} << 63));
}

// A payload that fails the test on any read outside itself, and counts
// what it was asked for.
class GuardedSource final : public Source {
 public:
  explicit GuardedSource(std::vector<uint8_t> bytes) : bytes_(std::move(bytes)) {}
  uint64_t size() const override { return bytes_.size(); }
  Status ReadAt(uint64_t offset, void* dst, size_t n) const override {
    REQUIRE(offset <= bytes_.size());
    REQUIRE(n <= bytes_.size() - offset);
    std::memcpy(dst, bytes_.data() + offset, n);
    read_ += n;
    return Status::OK();
  }
  std::string Describe() const override { return "guarded"; }
  uint64_t read() const { return read_; }

 private:
  std::vector<uint8_t> bytes_;
  mutable uint64_t read_ = 0;
};

// Two entries, "NativeBackend" (40 bytes) and "MLXBackend" (24), packed
// back to back: table 12 + 96, data 64.
std::vector<uint8_t> SmallContainer() {
  Result<NfatPlan> p = PlanNfat({NfatBytes("NativeBackend", OwnedSource(PatternBytes(40, 1))),
                                 NfatBytes("MLXBackend", OwnedSource(PatternBytes(24, 2)))},
                                NfatOptions{1});
  REQUIRE(p.ok());
  return Materialize(p->artifact);
}

void Put64(std::vector<uint8_t>& b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}
constexpr size_t kRow1 = 12 + 48;  // entry 1's row

std::string Corruption(const std::vector<uint8_t>& bytes) {
  auto guarded = std::make_shared<GuardedSource>(bytes);
  Result<NfatContainer> c = NfatContainer::Open(guarded, "model.pte: delegate 2");
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().code() == Code::kCorrupt);
  CHECK(Contains(c.status().message(), "model.pte: delegate 2: "));
  // Never more than the preamble and the table.
  CHECK(guarded->read() <= 12 + 48 * 2);
  return c.status().message();
}

TEST_CASE("a valid container reads only its preamble and table") {
  auto guarded = std::make_shared<GuardedSource>(SmallContainer());
  Result<NfatContainer> c = NfatContainer::Open(guarded);
  REQUIRE(c.ok());
  CHECK(guarded->read() == 12 + 48 * 2);
}

TEST_CASE("every malformed container class is kCorrupt naming the entry and the value") {
  const std::vector<uint8_t> good = SmallContainer();
  std::vector<uint8_t> b;

  SECTION("shorter than the preamble") {
    b.assign(good.begin(), good.begin() + 11);
    CHECK(Contains(Corruption(b), "the payload is 11 bytes, shorter than the 12-byte"));
  }
  SECTION("wrong magic") {
    b = good;
    b[3] = 'X';
    CHECK(Contains(Corruption(b), "magic = \"NFAX\" is not \"NFAT\""));
    b = ReadFile(Golden("pte_fat.pte"));
    CHECK(Contains(Corruption(b), "magic = \"@\\x00\\x00\\x00\" is not"));
  }
  SECTION("wrong version") {
    b = good;
    b[4] = 2;
    CHECK(Contains(Corruption(b), "version = 2 is not 1"));
  }
  SECTION("no entries") {
    b = good;
    b[8] = 0;
    CHECK(Contains(Corruption(b), "count = 0"));
  }
  SECTION("count against the payload size") {
    b = good;
    b[8] = 4;  // 12 + 48 * 4 = 204 > 172
    CHECK(Contains(Corruption(b), "count = 4 needs a table ending at 204 but the payload is 172"));
    b[8] = b[9] = b[10] = b[11] = 0xff;
    CHECK(Contains(Corruption(b), "count = 4294967295"));
  }
  SECTION("id not ASCII") {
    b = good;
    b[kRow1 + 2] = 0x80;
    const std::string m = Corruption(b);
    CHECK(Contains(m, "entries[1] \"ML\\x80Backend\": backend id has byte 0x80 at 2"));
  }
  SECTION("id not NUL-padded") {
    b = good;
    b[kRow1 + 20] = 'Z';
    CHECK(Contains(Corruption(b),
                   "entries[1] \"MLXBackend\": backend id is not NUL-padded: byte 0x5a at 20 "
                   "follows the NUL at 10"));
  }
  SECTION("empty id") {
    b = good;
    std::memset(&b[kRow1], 0, 32);
    CHECK(Contains(Corruption(b), "entries[1] \"\": backend id is empty"));
  }
  SECTION("entry past the end of the payload") {
    b = good;
    Put64(b, kRow1 + 40, 25);  // 40 + 25 > 64
    CHECK(Contains(Corruption(b),
                   "entries[1] \"MLXBackend\": [40, +25) runs past the data section, which "
                   "holds 64 bytes"));
    Put64(b, kRow1 + 32, ~uint64_t{0});  // offset + length wraps
    Put64(b, kRow1 + 40, 2);
    CHECK(Contains(Corruption(b), "[18446744073709551615, +2) runs past"));
  }
  SECTION("overlapping entries") {
    b = good;
    Put64(b, kRow1 + 32, 39);  // entry 0 is [0, +40)
    CHECK(Contains(Corruption(b),
                   "entries[1] \"MLXBackend\" [39, +24) overlaps entries[0] \"NativeBackend\" "
                   "[0, +40)"));
  }
}

TEST_CASE("entries in any order and empty entries anywhere are valid") {
  std::vector<uint8_t> b = SmallContainer();
  // Swap the payload ranges: entry 1 first, then entry 0.
  Put64(b, 12 + 32, 24);
  Put64(b, kRow1 + 32, 0);
  // An empty entry 0 at the very end of the data is inside the payload.
  Result<NfatContainer> c = NfatContainer::FromMemory(b.data(), b.size(), nullptr);
  REQUIRE(c.ok());
  Put64(b, 12 + 32, 64);
  Put64(b, 12 + 40, 0);
  c = NfatContainer::FromMemory(b.data(), b.size(), nullptr);
  REQUIRE(c.ok());
  CHECK(c->entries()[0].length == 0);
}

}  // namespace
}  // namespace etpack
