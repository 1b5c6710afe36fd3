// Where every byte goes (etpack/sizes.h): rows that partition each file
// exactly (every golden file, and files with padding, delegates, named
// data, mutable data, integrity tables, trailing bytes), and the bytes a
// family of programs holds alike.

#include "etpack/sizes.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>
#include "catch.h"

#include "etpack/bpte.h"
#include "etpack/bpte_file.h"
#include "etpack/ptd.h"
#include "etpack/ptd_file.h"
#include "etpack/pte.h"
#include "etpack/pte_file.h"
#include "test_files.h"
#include "test_programs.h"

namespace etpack {
namespace {

using testing::Bytes;
using testing::Golden;
using testing::GoldenDir;
using testing::Materialize;
using testing::Pattern;
using testing::Read;
using testing::SmallProgram;
using testing::TempDir;

// The partition, checked here independently of the library's own check.
void CheckRows(const SizeReport& r) {
  INFO(r.file);
  uint64_t at = 0;
  for (const SizeRow& row : r.rows) {
    INFO(SizeKindName(row.kind) << " '" << row.name << "' at " << row.offset);
    CHECK(row.offset == at);
    CHECK(row.size > 0);
    at = row.offset + row.size;
  }
  CHECK(at == r.file_size);
  uint64_t grouped = 0;
  for (const SizeGroup& g : KindTotals(r)) grouped += g.size;
  CHECK(grouped == r.file_size);
  CHECK(CheckPartition(r).ok());
}

std::vector<const SizeRow*> RowsOf(const SizeReport& r, SizeKind kind) {
  std::vector<const SizeRow*> out;
  for (const SizeRow& row : r.rows) {
    if (row.kind == kind) out.push_back(&row);
  }
  return out;
}

SizeRow Row(uint64_t offset, uint64_t size, SizeKind kind) {
  SizeRow r;
  r.offset = offset;
  r.size = size;
  r.kind = kind;
  return r;
}

template <typename File>
SizeReport SizesOfBytes(const std::string& name, std::vector<uint8_t> bytes) {
  auto file = Read<File>(name, std::move(bytes));
  Result<SizeReport> r = SizesOf(*file);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  CheckRows(*r);
  return std::move(r).value();
}

SizeReport SizesOfPte(PteInput in, const PteOptions& options = {}) {
  Result<PtePlan> plan = PlanPte(std::move(in), options);
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  return SizesOfBytes<PteFile>("m.pte", Materialize(plan->artifact));
}

TEST_CASE("every golden .pte, .ptd and .bpte is partitioned exactly") {
  size_t files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(GoldenDir())) {
    const std::string ext = e.path().extension().string();
    if (ext != ".pte" && ext != ".ptd" && ext != ".bpte") continue;
    ++files;
    Result<SizeReport> r = SizesOf(e.path().string());
    INFO(e.path().string() << ": " << r.status().ToString());
    REQUIRE(r.ok());
    CHECK(r->file_size == std::filesystem::file_size(e.path()));
    CheckRows(*r);
    // Nothing the writers make is unaccounted for.
    CHECK(RowsOf(*r, SizeKind::kUnreferenced).empty());
  }
  CHECK(files >= 22);  // test/golden and test/golden/upstream
}

TEST_CASE("golden files: each kind of item has its row") {
  SECTION("constants, aligned, with padding between them") {
    Result<SizeReport> r = SizesOf(Golden("pte_constants_align64.pte"));
    REQUIRE(r.ok());
    const auto constants = RowsOf(*r, SizeKind::kConstant);
    REQUIRE(constants.size() >= 2);
    for (const SizeRow* c : constants) {
      CHECK(c->tensor_layout.has_value());
      CHECK(c->segment == 0u);
      CHECK(c->method == "forward");
    }
    bool padding_in_segment = false;
    for (const SizeRow* p : RowsOf(*r, SizeKind::kPadding)) {
      padding_in_segment = padding_in_segment || p->segment == 0u;
    }
    CHECK(padding_in_segment);
  }
  SECTION("delegates in segments and inline, with backend and method") {
    for (const char* name : {"pte_delegates.pte", "pte_delegates_inline.pte"}) {
      INFO(name);
      Result<SizeReport> r = SizesOf(Golden(name));
      REQUIRE(r.ok());
      const auto delegates = RowsOf(*r, SizeKind::kDelegate);
      REQUIRE_FALSE(delegates.empty());
      auto file = PteFile::Open(Golden(name));
      REQUIRE(file.ok());
      for (const SizeRow* d : delegates) {
        CHECK_FALSE(d->backend.empty());
        CHECK_FALSE(d->method.empty());
        // Inline payloads lie inside the flatbuffer, segment ones do not.
        CHECK((d->offset < (*file)->layout().program_size) == !d->segment.has_value());
      }
    }
  }
  SECTION("a fat delegate: a row per entry with its backend id, and the container's own bytes") {
    Result<SizeReport> r = SizesOf(Golden("pte_fat.pte"));
    REQUIRE(r.ok());
    std::vector<std::string> names, backends;
    for (const SizeRow* d : RowsOf(*r, SizeKind::kDelegate)) {
      names.push_back(d->name);
      backends.push_back(d->backend);
      CHECK(d->method == "forward");
    }
    CHECK(names == std::vector<std::string>{"forward[0] NFAT container", "forward[0] entries[0]",
                                            "forward[0] entries[1]"});
    CHECK(backends == std::vector<std::string>{"", "NativeBackend", "MLXBackend"});
  }
  SECTION("named data: keys sharing a segment are one row") {
    Result<SizeReport> r = SizesOf(Golden("pte_named_data.pte"));
    REQUIRE(r.ok());
    bool alias = false;
    for (const SizeRow* n : RowsOf(*r, SizeKind::kNamedData)) {
      CHECK(n->key == n->name);
      for (const std::string& s : n->shared_with) alias = alias || s == "blob.b_alias";
    }
    CHECK(alias);
  }
  SECTION("mutable data") {
    Result<SizeReport> r = SizesOf(Golden("pte_mutable.pte"));
    REQUIRE(r.ok());
    CHECK_FALSE(RowsOf(*r, SizeKind::kMutable).empty());
  }
  SECTION(".ptd entries with their layouts") {
    Result<SizeReport> r = SizesOf(Golden("ptd_basic.ptd"));
    REQUIRE(r.ok());
    const auto entries = RowsOf(*r, SizeKind::kEntry);
    REQUIRE_FALSE(entries.empty());
    for (const SizeRow* e : entries) CHECK(e->segment.has_value());
    CHECK(RowsOf(*r, SizeKind::kHeader).size() == 1);
    CHECK(RowsOf(*r, SizeKind::kFlatbuffer).size() == 1);
  }
  SECTION(".bpte: the embedded program broken down, and test data") {
    for (const char* name : {"bpte_basic.bpte", "bpte_multi_method.bpte"}) {
      INFO(name);
      Result<SizeReport> r = SizesOf(Golden(name));
      REQUIRE(r.ok());
      auto file = BpteFile::Open(Golden(name));
      REQUIRE(file.ok());
      uint64_t in_program = 0;
      for (const SizeRow& row : r->rows) {
        if (!row.in_program) continue;
        in_program += row.size;
        CHECK(row.offset >= (*file)->program_offset());
      }
      CHECK(in_program == (*file)->program_size());
      CHECK_FALSE(RowsOf(*r, SizeKind::kTestData).empty());
    }
  }
}

TEST_CASE("a malformed fat delegate container fails the report, naming the delegate") {
  std::ifstream in(Golden("pte_fat.pte"), std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  // The container is segment 1 at 1280; entry 0's id "NativeBackend" at
  // 1280 + 12, NUL-padded to 32 bytes: a byte after its NUL.
  REQUIRE(bytes.size() == 3728);
  bytes[1280 + 12 + 20] = 'x';
  auto file = Read<PteFile>("fat.pte", bytes);
  Result<SizeReport> r = SizesOf(*file);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kCorrupt);
  CHECK(testing::Contains(r.status().message(), "fat.pte: delegate forward[0]"));
  CHECK(testing::Contains(r.status().message(), "NativeBackend"));
}

TEST_CASE("padding between constants and before the segment base is its own row") {
  // 3- and 5-byte constants at a 16-byte constant alignment.
  const SizeReport r = SizesOfPte(SmallProgram({Pattern(3, 1), Pattern(5, 2)}));
  const auto constants = RowsOf(r, SizeKind::kConstant);
  REQUIRE(constants.size() == 2);
  CHECK(constants[0]->size == 3);
  CHECK(constants[1]->size == 5);
  CHECK(constants[1]->offset - constants[0]->offset == 16);
  // 13 bytes after the first constant, in segment 0.
  bool found = false;
  for (const SizeRow* p : RowsOf(r, SizeKind::kPadding)) {
    if (p->offset == constants[0]->offset + 3) {
      CHECK(p->size == 13);
      CHECK(p->segment == 0u);
      found = true;
    }
  }
  CHECK(found);
  CHECK(constants[0]->name == "constant_buffer[1]");
  CHECK(constants[0]->key.empty());
}

TEST_CASE("every kind of .pte segment, with an integrity table") {
  PteInput in = SmallProgram({Pattern(24, 1)}, {Pattern(300, 9)});
  in.mutable_data = {Bytes({}), Pattern(12, 2)};
  in.named_data = {{"blob.a", Pattern(40, 5), 1}, {"blob.b", Pattern(70, 6), 64}};
  PteOptions o;
  o.integrity_table = true;
  const SizeReport r = SizesOfPte(std::move(in), o);
  CHECK(RowsOf(r, SizeKind::kConstant).size() == 1);
  REQUIRE(RowsOf(r, SizeKind::kDelegate).size() == 1);
  CHECK(RowsOf(r, SizeKind::kDelegate)[0]->backend == "TestBackend");
  CHECK(RowsOf(r, SizeKind::kDelegate)[0]->name == "forward[0]");
  CHECK(RowsOf(r, SizeKind::kDelegate)[0]->size == 300);
  // No tensor reads the initial value: still its bytes, said so.
  REQUIRE(RowsOf(r, SizeKind::kMutable).size() == 1);
  CHECK(RowsOf(r, SizeKind::kMutable)[0]->name == "mutable_buffer[1] (no tensor reads it)");
  CHECK(RowsOf(r, SizeKind::kNamedData).size() == 2);
  const auto table = RowsOf(r, SizeKind::kIntegrityTable);
  REQUIRE(table.size() == 1);
  // The table is the last segment: nothing after it.
  CHECK(table[0]->offset + table[0]->size == r.file_size);
}

TEST_CASE("a .ptd with an integrity table, and one key sharing another's bytes") {
  PtdInput in;
  in.buffers = {Pattern(64, 1), Pattern(64, 2)};
  in.entries = {{"a", 0, 1, TensorLayout{6, {4, 4}, {0, 1}}},
                {"b", 1, 1, std::nullopt},
                {"c", 0, 1, TensorLayout{6, {16}, {0}}}};
  PtdOptions o;
  o.integrity_table = true;
  Result<PtdPlan> plan = PlanPtd(in, o);
  REQUIRE(plan.ok());
  const SizeReport r = SizesOfBytes<PtdFile>("d.ptd", Materialize(plan->artifact));
  const auto entries = RowsOf(r, SizeKind::kEntry);
  REQUIRE(entries.size() == 2);
  CHECK(entries[0]->key == "a");
  CHECK(entries[0]->shared_with == std::vector<std::string>{"c"});
  CHECK(entries[0]->tensor_layout == TensorLayout{6, {4, 4}, {0, 1}});
  CHECK_FALSE(entries[1]->tensor_layout.has_value());
  CHECK(RowsOf(r, SizeKind::kIntegrityTable).size() == 1);
}

TEST_CASE("constants stored once are one row naming the others") {
  PteInput in = SmallProgram({Pattern(32, 1), Pattern(32, 1), Pattern(32, 3)});
  PteOptions o;
  o.dedup_constants = true;
  const SizeReport r = SizesOfPte(std::move(in), o);
  const auto constants = RowsOf(r, SizeKind::kConstant);
  REQUIRE(constants.size() == 2);
  CHECK(constants[0]->shared_with == std::vector<std::string>{"constant_buffer[2]"});
}

TEST_CASE("bytes after the last segment are unreferenced") {
  Result<PtePlan> plan = PlanPte(SmallProgram({Pattern(40, 1)}));
  REQUIRE(plan.ok());
  std::vector<uint8_t> bytes = Materialize(plan->artifact);
  const uint64_t size = bytes.size();
  bytes.resize(size + 100, 0xAB);
  const SizeReport r = SizesOfBytes<PteFile>("m.pte", bytes);
  REQUIRE(r.rows.back().kind == SizeKind::kUnreferenced);
  CHECK(r.rows.back().offset == size);
  CHECK(r.rows.back().size == 100);
}

TEST_CASE("a segmented .bpte: header, program segment and test data segments") {
  Result<PtePlan> program = PlanPte(SmallProgram({Pattern(40, 1)}));
  REQUIRE(program.ok());
  BpteInput in;
  in.program = program->artifact;
  BundledValue big;
  big.kind = BundledValue::Kind::kTensor;
  big.layout = TensorLayout{0, {64}, {0}};
  big.data = Pattern(64, 4);
  BundledTestCase tc;
  tc.expected_outputs.push_back(big);
  in.suites = {{"forward", {tc}}};
  BpteOptions o;
  o.layout = BpteLayout::kSegmented;
  o.tensor_segment_threshold = 32;
  Result<BptePlan> plan = PlanBpte(in, o);
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  const SizeReport r = SizesOfBytes<BpteFile>("b.bpte", Materialize(plan->artifact));
  CHECK(r.rows[0].name == "BP08 bh00");
  const auto test = RowsOf(r, SizeKind::kTestData);
  REQUIRE(test.size() == 1);
  CHECK(test[0]->segment.has_value());
  CHECK(test[0]->name == "method_test_suites[0] 'forward'.test_cases[0].expected_outputs[0]");
  CHECK(RowsOf(r, SizeKind::kConstant).size() == 1);
  CHECK(RowsOf(r, SizeKind::kConstant)[0]->in_program);
}

TEST_CASE("CheckPartition refuses overlaps, gaps and a wrong total") {
  SizeReport r;
  r.file = "x";
  r.file_size = 100;
  r.rows = {Row(0, 60, SizeKind::kHeader), Row(60, 40, SizeKind::kPadding)};
  CHECK(CheckPartition(r).ok());
  r.rows[1].offset = 50;  // overlaps
  CHECK(CheckPartition(r).code() == Code::kInvalidArgument);
  r.rows[1].offset = 70;  // a gap
  CHECK_FALSE(CheckPartition(r).ok());
  r.rows[1] = Row(60, 30, SizeKind::kPadding);  // short of the file
  const Status s = CheckPartition(r);
  CHECK_FALSE(s.ok());
  CHECK(testing::Contains(s.message(), "sum to 90 bytes"));
}

TEST_CASE("small rows are summed per kind; the threshold is 0.1% of the file") {
  SizeReport r;
  r.file_size = 100000;
  r.rows = {Row(0, 50, SizeKind::kHeader), Row(50, 50, SizeKind::kPadding),
            Row(100, 99800, SizeKind::kConstant), Row(99900, 60, SizeKind::kPadding),
            Row(99960, 40, SizeKind::kConstant)};
  // A short table is shown whole.
  CHECK(SmallRowBytes(r) == 0);
  CHECK(SmallRows(r, 0).empty());
  const std::vector<SizeGroup> small = SmallRows(r, 100);
  REQUIRE(small.size() == 3);
  CHECK(small[0].kind == SizeKind::kHeader);
  CHECK(small[1].kind == SizeKind::kConstant);
  CHECK(small[1].size == 40);
  CHECK(small[2].kind == SizeKind::kPadding);
  CHECK(small[2].rows == 2);
  CHECK(small[2].size == 110);
  const json::Value j = SizeReportJson(r, 100);
  CHECK(j.Find("rows")->items().size() == 1);
  CHECK(j.Find("grouped")->items().size() == 3);
  CHECK(SizeReportJson(r, 0).Find("rows")->items().size() == 5);
  // A long one groups what is under 0.1%.
  for (uint64_t at = 100000; r.rows.size() <= kFewRows; at += 10) {
    r.rows.push_back(Row(at, 10, SizeKind::kPadding));
    r.file_size += 10;
  }
  CHECK(SmallRowBytes(r) == r.file_size / 1000);
}

// A family of variants: weights shared by all, one variant-specific
// constant each (the way a mask differs per context window), a small shared
// constant, named data shared, one delegate payload shared, and a
// named-data key meaning different bytes in one variant.
PteInput Variant(int v) {
  PteInput in = SmallProgram(
      {Pattern(8192, 1), Pattern(16384, 2), Pattern(4096 + v, 50 + v), Pattern(100, 3)},
      {Pattern(5000, 7)});
  auto& values = testing::Values(in);
  const char* names[] = {"w1", "w2", "mask", "bias"};
  for (int i = 0; i < 4; ++i) {
    values[i].Find("val")->Set(
        "extra_tensor_info",
        json::Value::Object({{"fully_qualified_name", json::Value::String(names[i])}}));
  }
  in.named_data = {{"xnn.weight", Pattern(6000, 9), 16},
                   {"xnn.table", Pattern(4500, v == 2 ? 40 : 41), 16}};
  return in;
}

TEST_CASE("a family of programs: what a cross-file share saves and what it cannot") {
  TempDir dir;
  std::vector<std::string> paths;
  for (int v = 0; v < 3; ++v) {
    paths.push_back(dir.File("v" + std::to_string(v) + ".pte"));
    REQUIRE(WritePte(paths.back(), Variant(v)).ok());
  }
  // One of them already uses a .ptd holding w1 with the same layout.
  PtdInput data;
  data.buffers = {Pattern(8192, 1)};
  data.entries = {{"w1", 0, 1, TensorLayout{0, {8192}, {0}}}};
  paths.push_back(dir.File("v.ptd"));
  REQUIRE(WritePtd(paths.back(), data).ok());

  Result<FileSizes> sizes = SizesOfFiles(paths);
  INFO(sizes.status().ToString());
  REQUIRE(sizes.ok());
  REQUIRE(sizes->reports.size() == 4);
  for (const SizeReport& r : sizes->reports) CheckRows(r);
  const SharedReport& s = sizes->shared;
  CHECK(s.files == paths);

  std::map<uint64_t, const SharedContent*> by_size;
  for (const SharedContent& c : s.contents) by_size[c.size] = &c;
  // w1: three constants and the .ptd entry, one layout.
  REQUIRE(by_size.count(8192));
  CHECK(by_size[8192]->shareable);
  CHECK(by_size[8192]->copies == 4);
  CHECK(by_size[8192]->files == std::vector<uint32_t>{0, 1, 2, 3});
  CHECK(by_size[8192]->bytes_saved == 3 * 8192);
  CHECK(by_size[8192]->items[0].key == "w1");
  REQUIRE(by_size.count(16384));
  CHECK(by_size[16384]->bytes_saved == 2 * 16384);
  // Named data shared by all three; the key meaning other bytes in v2 is
  // held alike by v0 and v1 only, a conflict: not moved.
  REQUIRE(by_size.count(6000));
  CHECK(by_size[6000]->shareable);
  REQUIRE(by_size.count(4500));
  CHECK(by_size[4500]->files == std::vector<uint32_t>{0, 1});
  CHECK(by_size[4500]->reason == "its key names different bytes in another file");
  REQUIRE(s.conflicts.size() == 1);
  CHECK(s.conflicts[0].key == "xnn.table");
  CHECK(s.conflicts[0].files == std::vector<uint32_t>{0, 1, 2});
  // The variant-specific masks are held by one file each: not listed.
  for (uint64_t n : {4096, 4097, 4098}) CHECK(by_size.count(n) == 0);
  // The delegate payload: no external form. The bias: below min_bytes.
  REQUIRE(by_size.count(5000));
  CHECK_FALSE(by_size[5000]->shareable);
  CHECK(by_size[5000]->reason == "delegate payloads have no external form");
  REQUIRE(by_size.count(100));
  CHECK(by_size[100]->reason == "below min_bytes");
  // "mask" names different bytes in each variant: no conflict, not shared.
  CHECK(s.bytes_saved == 3 * 8192 + 2 * 16384 + 2 * 6000);
  CHECK(s.bytes_not_saved == 2 * 5000 + 2 * 100 + 4500);
  // Largest (size * copies) first.
  CHECK(s.contents.front().size == 16384);

  const json::Value j = SharedReportJson(s);
  CHECK(j.Find("bytes_saved")->as_uint() == s.bytes_saved);
  CHECK(j.Find("conflicts")->items().size() == 1);
}

TEST_CASE("the same bytes read as different tensors are not shareable") {
  TempDir dir;
  PtdInput a, b;
  a.buffers = b.buffers = {Pattern(8192, 1)};
  a.entries = {{"w", 0, 1, TensorLayout{0, {8192}, {0}}}};
  b.entries = {{"w", 0, 1, TensorLayout{0, {2, 4096}, {0, 1}}}};
  REQUIRE(WritePtd(dir.File("a.ptd"), a).ok());
  REQUIRE(WritePtd(dir.File("b.ptd"), b).ok());
  Result<FileSizes> sizes = SizesOfFiles({dir.File("a.ptd"), dir.File("b.ptd")});
  REQUIRE(sizes.ok());
  REQUIRE(sizes->shared.contents.size() == 1);
  CHECK(sizes->shared.contents[0].reason == "tensor layouts differ");
  CHECK(sizes->shared.conflicts.size() == 1);
  CHECK(sizes->shared.bytes_saved == 0);
}

TEST_CASE("SizesOfFiles names a file it cannot open") {
  TempDir dir;
  Result<FileSizes> sizes = SizesOfFiles({Golden("pte_constants.pte"), dir.File("missing.pte")});
  REQUIRE_FALSE(sizes.ok());
  CHECK(testing::Contains(sizes.status().message(), "missing.pte"));
}

TEST_CASE("a constant buffer no tensor reads is not shareable") {
  TempDir dir;
  std::vector<std::string> paths;
  for (int v = 0; v < 2; ++v) {
    PteInput in = SmallProgram({Pattern(8192, 1)});
    in.constants.push_back(Pattern(5000, 4));  // no tensor reads constant 2
    paths.push_back(dir.File("u" + std::to_string(v) + ".pte"));
    Status s = WritePte(paths.back(), std::move(in));
    INFO(s.ToString());
    REQUIRE(s.ok());
  }
  Result<FileSizes> sizes = SizesOfFiles(paths);
  REQUIRE(sizes.ok());
  std::map<uint64_t, const SharedContent*> by_size;
  for (const SharedContent& c : sizes->shared.contents) by_size[c.size] = &c;
  REQUIRE(by_size.count(8192));
  CHECK(by_size[8192]->shareable);
  REQUIRE(by_size.count(5000));
  CHECK_FALSE(by_size[5000]->shareable);
  CHECK(by_size[5000]->reason == "no tensor reads it");
}

}  // namespace
}  // namespace etpack
