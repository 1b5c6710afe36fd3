// Bundled programs: the standard layout written from the golden inputs
// decodes like the reference output, the segmented layout round-trips at
// every program alignment and beyond 4 GiB, and malformed files and cases
// are refused with messages that name them.
#include <stdlib.h>
#include "catch.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "bpte/bpte_format.h"
#include "bpte/bpte_header.h"
#include "bundled_program_etpack_generated.h"
#include "etpack/bpte_file.h"
#include "etpack/json.h"
#include "etpack/manifest.h"
#include "etpack/pte_file.h"
#include "plan/header_insert.h"
#include "test_files.h"
#include "test_programs.h"

using namespace etpack;
using namespace etpack::testing;
namespace bfb = etpack::bpte_fb;
using catch_text::Contains;

namespace {

// ---- golden input (CASE.input.json) -> BpteInput ----------------------------

// The bytes of a blob object of the golden input `origin`.
SourcePtr BlobOf(const json::Value& blob, const std::string& origin) {
  Result<SourcePtr> src = BlobSource(blob, GoldenDir(), origin);
  INFO(src.status().ToString());
  REQUIRE(src.ok());
  return *src;
}

BundledValue ValueFromJson(const json::Value& v, const std::string& origin) {
  const std::string type = v.Find("val_type")->as_string();
  const json::Value& val = *v.Find("val");
  BundledValue out;
  if (type == "Tensor") {
    out.kind = BundledValue::Kind::kTensor;
    out.layout.scalar_type = static_cast<int>(val.Find("scalar_type")->as_int());
    for (const auto& d : val.Find("sizes")->items()) {
      out.layout.sizes.push_back(static_cast<int32_t>(d.as_int()));
    }
    for (const auto& d : val.Find("dim_order")->items()) {
      out.layout.dim_order.push_back(static_cast<uint8_t>(d.as_int()));
    }
    out.data = BlobOf(*val.Find("data"), origin);
  } else if (type == "Int") {
    out.kind = BundledValue::Kind::kInt;
    out.int_val = val.Find("int_val")->as_int();
  } else if (type == "Bool") {
    out.kind = BundledValue::Kind::kBool;
    out.bool_val = val.Find("bool_val")->as_bool();
  } else {
    REQUIRE(type == "Double");
    out.kind = BundledValue::Kind::kDouble;
    const json::Value& d = *val.Find("double_val");
    if (d.kind() == json::Kind::kString) {
      out.double_val = d.as_string() == "inf" ? HUGE_VAL : -HUGE_VAL;
    } else {
      out.double_val = d.as_double();
    }
  }
  return out;
}

struct GoldenInput {
  BpteInput input;
  SourcePtr program;
};

GoldenInput LoadGoldenInput(const std::string& name) {
  const std::string path = Golden(name);
  auto doc = json::ParseFile(path);
  REQUIRE(doc.ok());
  const json::Value& bp = *doc->Find("bundled_program");
  GoldenInput g;
  g.program = BlobOf(*bp.Find("program"), path);
  g.input.program = WholeSourcePlan(g.program);
  g.input.version = static_cast<uint32_t>(bp.Find("version")->as_int());
  for (const auto& s : bp.Find("method_test_suites")->items()) {
    BundledTestSuite suite;
    suite.method_name = s.Find("method_name")->as_string();
    for (const auto& c : s.Find("test_cases")->items()) {
      BundledTestCase tc;
      for (const auto& v : c.Find("inputs")->items()) tc.inputs.push_back(ValueFromJson(v, path));
      for (const auto& v : c.Find("expected_outputs")->items()) {
        tc.expected_outputs.push_back(ValueFromJson(v, path));
      }
      suite.test_cases.push_back(std::move(tc));
    }
    g.input.suites.push_back(std::move(suite));
  }
  return g;
}

// ---- helpers ----------------------------------------------------------------

using Bytes_ = std::vector<uint8_t>;

Result<std::unique_ptr<BpteFile>> Read(const Bytes_& bytes, const std::string& name = "mem.bpte") {
  auto owner = std::make_shared<Bytes_>(bytes);
  return BpteFile::FromMemory(name, owner->data(), owner->size(), owner);
}

std::unique_ptr<BpteFile> ReadOk(const Bytes_& bytes) {
  auto f = Read(bytes);
  INFO(f.status().ToString());
  REQUIRE(f.ok());
  return std::move(f).value();
}

void ExpectCorrupt(const Bytes_& bytes, const std::string& fragment) {
  auto f = Read(bytes, "bad.bpte");
  INFO(f.status().ToString());
  REQUIRE_FALSE(f.ok());
  CHECK(f.status().message().rfind("bad.bpte: ", 0) == 0);
  CHECK_THAT(f.status().message(), Contains(fragment));
}

Bytes_ ReadSource(const Source& s) {
  auto r = ReadAll(s);
  REQUIRE(r.ok());
  return std::move(r).value();
}

bool Same(const Source& a, const Source& b) {
  auto r = SameBytes(a, b);
  REQUIRE(r.ok());
  return *r;
}

// File offsets of every inline tensor's data.
std::vector<uint64_t> InlineTensorOffsets(const BpteFile& f) {
  std::vector<uint64_t> out;
  for (const auto* s : *f.bundled().method_test_suites()) {
    for (const auto* c : *s->test_cases()) {
      for (const auto* list : {c->inputs(), c->expected_outputs()}) {
        for (const auto* v : *list) {
          const auto* t = v->val_as_Tensor();
          if (t && t->data_segment() < 0) {
            out.push_back(static_cast<uint64_t>(t->data()->data() - f.head()));
          }
        }
      }
    }
  }
  return out;
}

BundledValue ByteTensorValue(SourcePtr data) {
  BundledValue v;
  v.kind = BundledValue::Kind::kTensor;
  v.layout = {1, {static_cast<int32_t>(data->size())}, {0}};  // CHAR: 1 byte
  v.data = std::move(data);
  return v;
}

BundledValue IntValue(int64_t i) {
  BundledValue v;
  v.kind = BundledValue::Kind::kInt;
  v.int_val = i;
  return v;
}

SourcePtr Zeros(const std::string& name, uint64_t size) {
  return GeneratorSource(name, size, [](uint64_t, uint8_t* dst, size_t n) {
    std::memset(dst, 0, n);
    return Status::OK();
  });
}

// A hand-built BP08 file, for shapes PlanBpte never writes.
struct RawBpte {
  Bytes_ program;  // inline program bytes
  bool program_present = true;
  int32_t program_segment = -1;
  std::vector<std::pair<uint64_t, uint64_t>> segments;  // absent when empty
  Bytes_ tensor_data = Bytes_(24, 1);                   // FLOAT[2, 3] value
  int32_t data_segment = -1;
  bfb::ValueUnion val_type = bfb::ValueUnion::Tensor;
  bool header = false;    // insert bh00
  uint64_t base_pad = 0;  // segment base = align_up(flatbuffer end, 128) + this
  Bytes_ segment_bytes;   // appended at the segment base

  Bytes_ Build() const {
    flatbuffers::FlatBufferBuilder fbb;
    auto sizes = fbb.CreateVector(std::vector<int32_t>{2, 3});
    auto dims = fbb.CreateVector(std::vector<uint8_t>{0, 1});
    fbb.ForceVectorAlignment(tensor_data.size(), 1, 16);
    auto data = fbb.CreateVector(tensor_data);
    auto t =
        bfb::CreateTensor(fbb, etpack::pte_fb::ScalarType::FLOAT, sizes, data, dims, data_segment);
    auto v = bfb::CreateValue(fbb, val_type, t.Union());
    auto inputs = fbb.CreateVector(std::vector<flatbuffers::Offset<bfb::Value>>{v});
    auto outputs = fbb.CreateVector(std::vector<flatbuffers::Offset<bfb::Value>>{});
    auto tc = bfb::CreateBundledMethodTestCase(fbb, inputs, outputs);
    auto suite = bfb::CreateBundledMethodTestSuite(fbb, fbb.CreateString("forward"),
                                                   fbb.CreateVector(std::vector{tc}));
    auto suites = fbb.CreateVector(std::vector{suite});
    flatbuffers::Offset<flatbuffers::Vector<uint8_t>> prog;
    if (program_present) {
      fbb.ForceVectorAlignment(program.size(), 1, 32);
      prog = fbb.CreateVector(program);
    }
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<bfb::DataSegment>>> segs;
    if (!segments.empty()) {
      std::vector<flatbuffers::Offset<bfb::DataSegment>> table;
      for (auto [o, s] : segments) table.push_back(bfb::CreateDataSegment(fbb, o, s));
      segs = fbb.CreateVector(table);
    }
    fbb.Finish(bfb::CreateBundledProgram(fbb, 2, suites, prog, program_segment, segs), "BP08");
    Bytes_ out(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
    if (header) {
      HeadPlacement l;
      l.flatbuffer_size = out.size();
      l.header_size = bpte::kHeaderCodec.header_size;
      REQUIRE(InsertAfterIdentifier(out, l.header_size).ok());
      l.head_size = out.size();
      l.segment_base_offset = (l.head_size + 127) / 128 * 128 + base_pad;
      l.segment_data_size = segment_bytes.size();
      bpte::kHeaderCodec.encode(l, out.data() + kInsertedHeaderOffset);
      const uint64_t base = l.segment_base_offset;
      out.resize(base, 0);
      out.insert(out.end(), segment_bytes.begin(), segment_bytes.end());
    }
    return out;
  }
};

Bytes_ GoldenPte(const std::string& name) {
  std::ifstream f(Golden(name), std::ios::binary);
  REQUIRE(f.good());
  return Bytes_((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

}  // namespace

// ---- standard layout ---------------------------------------------------------

TEST_CASE("standard layout written from the golden input decodes like the golden") {
  const std::string name = GENERATE(as<std::string>{}, "bpte_basic", "bpte_multi_method");
  INFO(name);
  GoldenInput g = LoadGoldenInput(name + ".input.json");
  auto plan = PlanBpte(g.input);
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  CHECK(plan->layout == BpteLayout::kStandard);
  CHECK(plan->program_size == g.program->size());
  CHECK(plan->program_offset % 32 == 0);
  // The program is streamed into its slot, never part of the head.
  CHECK(plan->artifact.head.size() <= plan->program_offset);
  CHECK(plan->artifact.file_size == plan->program_offset + plan->program_size);

  const Bytes_ bytes = Materialize(plan->artifact);
  {
    flatbuffers::Verifier verifier(bytes.data(), bytes.size());
    CHECK(bfb::VerifyBundledProgramBuffer(verifier));
  }
  auto ours = ReadOk(bytes);
  auto golden = BpteFile::Open(Golden(name + ".bpte"));
  INFO(golden.status().ToString());
  REQUIRE(golden.ok());

  CHECK(ours->layout() == BpteLayout::kStandard);
  CHECK(ours->program_offset() == plan->program_offset);
  CHECK(ours->program_offset() % 32 == 0);
  for (uint64_t off : InlineTensorOffsets(*ours)) CHECK(off % 16 == 0);
  CHECK(InlineTensorOffsets(*ours).size() == InlineTensorOffsets(**golden).size());

  // Decoded structure equal, program bytes included.
  auto ours_json = ours->ToFlatcJson();
  auto golden_json = (*golden)->ToFlatcJson();
  REQUIRE(ours_json.ok());
  REQUIRE(golden_json.ok());
  CHECK(*ours_json == *golden_json);
  CHECK(Same(*ours->ProgramSource(), *(*golden)->ProgramSource()));
  CHECK(Same(*ours->ProgramSource(), *g.program));
  // Opened from a path, the program is a file range, not the mapping.
  CHECK((*golden)->ProgramSource()->file_range() != nullptr);

  // The cases fit the program they test, in both files.
  CHECK(CheckAgainstProgram(g.input.suites, ours->program()).ok());
  auto suites = (*golden)->Suites();
  REQUIRE(suites.ok());
  CHECK(CheckAgainstProgram(*suites, (*golden)->program()).ok());
  REQUIRE(suites->size() == g.input.suites.size());
  for (size_t s = 0; s < suites->size(); ++s) {
    CHECK((*suites)[s].method_name == g.input.suites[s].method_name);
    REQUIRE((*suites)[s].test_cases.size() == g.input.suites[s].test_cases.size());
  }
}

TEST_CASE("upstream bundled_program.bpte opens and validates") {
  auto f = BpteFile::Open(Golden("upstream/bundled_program.bpte"));
  INFO(f.status().ToString());
  REQUIRE(f.ok());
  CHECK((*f)->layout() == BpteLayout::kStandard);
  CHECK((*f)->program_offset() == 64);
  // Its embedded program has a legacy 24-byte eh00 header.
  CHECK((*f)->program().header().present);
  CHECK((*f)->program().header().length == 24);
  auto suites = (*f)->Suites();
  REQUIRE(suites.ok());
  REQUIRE_FALSE(suites->empty());
  CHECK((*suites)[0].method_name == "forward");
  CHECK(CheckAgainstProgram(*suites, (*f)->program()).ok());

  // Re-bundled from what was read, it decodes the same.
  BpteInput in;
  in.program = WholeSourcePlan((*f)->ProgramSource());
  in.suites = std::move(suites).value();
  in.version = (*f)->bundled().version();
  auto plan = PlanBpte(in);
  REQUIRE(plan.ok());
  auto again = ReadOk(Materialize(plan->artifact));
  CHECK(*again->ToFlatcJson() == *(*f)->ToFlatcJson());
}

TEST_CASE("a PtePlan is bundled directly, without being written first") {
  auto pte = PlanPte(SmallProgram({Pattern(1000, 1), Pattern(300, 2)}, {Pattern(700, 3)}));
  REQUIRE(pte.ok());
  const Bytes_ pte_bytes = Materialize(pte->artifact);
  REQUIRE(pte->artifact.placements.size() > 1);

  BpteInput in;
  in.program = pte->artifact;
  in.suites = {{"forward", {BundledTestCase{{}, {ByteTensorValue(Pattern(40, 9))}}}}};
  const BpteLayout layout = GENERATE(BpteLayout::kStandard, BpteLayout::kSegmented);
  BpteOptions opt;
  opt.layout = layout;
  auto plan = PlanBpte(in, opt);
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  auto f = ReadOk(Materialize(plan->artifact));
  CHECK(f->layout() == layout);
  CHECK(ReadSource(*f->ProgramSource()) == pte_bytes);
  CHECK(f->program().layout().segments.size() == 2);
  CHECK(CheckAgainstProgram(in.suites, f->program()).ok());
}

TEST_CASE("standard layout beyond 2 GiB is refused naming the segmented layout") {
  const uint64_t limit = FLATBUFFERS_MAX_BUFFER_SIZE;
  // Too large by itself, and too large once the flatbuffer around it counts.
  const uint64_t size = GENERATE_COPY(uint64_t{5} << 30, limit - 16);
  BpteInput in;
  in.program = WholeSourcePlan(Zeros("program", size));
  in.suites = {{"forward", {BundledTestCase{{IntValue(1)}, {}}}}};
  auto plan = PlanBpte(in);
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().code() == Code::kOutOfRange);
  CHECK_THAT(plan.status().message(), Contains("the segmented layout has no size limit"));
  // The library names no flag and no C++ enumerator: the CLI adds its flag.
  CHECK_THAT(plan.status().message(), !Contains("--layout") && !Contains("BpteLayout::"));

  // Just below the limit the plan goes through (nothing is read).
  in.program = WholeSourcePlan(Zeros("program", limit - 4096));
  auto ok = PlanBpte(in);
  INFO(ok.status().ToString());
  REQUIRE(ok.ok());
  CHECK(ok->artifact.file_size < limit);
  CHECK(ok->program_offset % 32 == 0);
}

TEST_CASE("a bundle over the verifier's table limit is refused before it is built") {
  // One case of 499,999 Int inputs: root, suite, case and two tables per
  // value make 1,000,001 tables, one more than readers' verifier accepts.
  BpteInput in;
  in.program = WholeSourcePlan(Zeros("program", 4096));
  BundledTestCase tc;
  tc.inputs.assign(499999, IntValue(1));
  in.suites = {{"forward", {tc}}};
  auto plan = PlanBpte(in);
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().code() == Code::kOutOfRange);
  CHECK(plan.status().message() ==
        "499999 test values in 1 cases need 1000001 flatbuffer tables; the runtime's verifier "
        "accepts at most 1000000");
}

// ---- segmented layout --------------------------------------------------------

TEST_CASE("segmented layout round-trips at every program alignment") {
  const uint64_t align = GENERATE(uint64_t{128}, uint64_t{4096}, uint64_t{16384});
  INFO("program_alignment " << align);
  GoldenInput g = LoadGoldenInput("bpte_basic.input.json");
  // One large tensor that goes to a segment; the 24-byte ones stay inline.
  SourcePtr big = Pattern((uint64_t{1} << 20) + 5, 7);
  g.input.suites[0].test_cases[0].expected_outputs.push_back(ByteTensorValue(big));

  BpteOptions opt;
  opt.layout = BpteLayout::kSegmented;
  opt.program_alignment = align;
  auto plan = PlanBpte(g.input, opt);
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  CHECK(plan->layout == BpteLayout::kSegmented);
  CHECK(plan->program_offset % align == 0);
  CHECK(plan->program_size == g.program->size());

  const Bytes_ bytes = Materialize(plan->artifact);
  auto header = bpte::ParseHeader(bytes.data(), bytes.size());
  REQUIRE(header.ok());
  REQUIRE(header->present);
  CHECK(header->length == 32);
  CHECK(header->segment_base_offset == plan->program_offset);
  CHECK(header->segment_base_offset + header->segment_data_size == bytes.size());
  CHECK(LoadLE32(bytes.data()) < header->flatbuffer_size);  // root moved past the header

  auto f = ReadOk(bytes);
  CHECK(f->layout() == BpteLayout::kSegmented);
  CHECK(f->program_offset() == plan->program_offset);
  CHECK(f->bundled().program() != nullptr);
  CHECK(f->bundled().program()->size() == 0);
  CHECK(f->bundled().program_segment() == 0);
  REQUIRE(f->bundled().segments()->size() == 2);
  CHECK(f->bundled().segments()->Get(0)->offset() == 0);
  CHECK(f->bundled().segments()->Get(1)->offset() % 16 == 0);
  CHECK(Same(*f->ProgramSource(), *g.program));
  CHECK(f->program().layout().segments.size() == 1);
  for (uint64_t off : InlineTensorOffsets(*f)) CHECK(off % 16 == 0);

  auto suites = f->Suites();
  REQUIRE(suites.ok());
  const auto& tc = (*suites)[0].test_cases[0];
  REQUIRE(tc.expected_outputs.size() == 2);
  CHECK(Same(*tc.expected_outputs[1].data, *big));
  CHECK(tc.expected_outputs[1].layout == ByteTensorValue(big).layout);
  CHECK(Same(*tc.inputs[0].data, *g.input.suites[0].test_cases[0].inputs[0].data));
  CHECK(tc.inputs[3].int_val == g.input.suites[0].test_cases[0].inputs[3].int_val);
  const auto* t = f->bundled()
                      .method_test_suites()
                      ->Get(0)
                      ->test_cases()
                      ->Get(0)
                      ->expected_outputs()
                      ->Get(1)
                      ->val_as_Tensor();
  CHECK(t->data_segment() == 1);
  CHECK(t->data()->size() == 0);

  // From a path, every bulk source is a file range.
  TempDir dir;
  const std::string path = dir.File("seg.bpte");
  REQUIRE(WriteArtifactFile(path, plan->artifact).ok());
  auto opened = BpteFile::Open(path);
  REQUIRE(opened.ok());
  CHECK((*opened)->ProgramSource()->file_range() != nullptr);
  auto opened_suites = (*opened)->Suites();
  REQUIRE(opened_suites.ok());
  CHECK((*opened_suites)[0].test_cases[0].expected_outputs[1].data->file_range() != nullptr);
  CHECK(Same(*(*opened_suites)[0].test_cases[0].expected_outputs[1].data, *big));
}

TEST_CASE("segmented layout plans a program beyond 4 GiB with 64-bit offsets") {
  const uint64_t size = (uint64_t{5} << 30) + 3;
  BpteInput in;
  in.program = WholeSourcePlan(Zeros("program", size));
  in.suites = {{"forward", {BundledTestCase{{ByteTensorValue(Zeros("t", 3 << 20))}, {}}}}};
  BpteOptions opt;
  opt.layout = BpteLayout::kSegmented;
  opt.program_alignment = 4096;
  auto plan = PlanBpte(in, opt);
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());

  const Bytes_& head = plan->artifact.head;
  auto h = bpte::ParseHeader(head.data(), head.size());
  REQUIRE(h.ok());
  REQUIRE(h->present);
  CHECK(h->flatbuffer_size == head.size());
  CHECK(h->segment_base_offset == (head.size() + 4095) / 4096 * 4096);
  const uint64_t tensor_rel = (size + 15) / 16 * 16;
  CHECK(h->segment_data_size == tensor_rel + (3 << 20));
  CHECK(plan->artifact.file_size == h->segment_base_offset + h->segment_data_size);
  CHECK(plan->program_offset == h->segment_base_offset);
  CHECK(plan->program_size == size);

  flatbuffers::Verifier verifier(head.data(), head.size());
  REQUIRE(bfb::VerifyBundledProgramBuffer(verifier));
  const auto* segs = bfb::GetBundledProgram(head.data())->segments();
  REQUIRE(segs->size() == 2);
  CHECK(segs->Get(0)->size() == size);
  CHECK(segs->Get(1)->offset() == tensor_rel);

  REQUIRE(plan->artifact.placements.size() == 2);
  CHECK(plan->artifact.placements[0].offset == h->segment_base_offset);
  CHECK(plan->artifact.placements[1].offset == h->segment_base_offset + tensor_rel);
  CHECK(plan->artifact.placements[1].offset > (uint64_t{1} << 32));
}

TEST_CASE("tensor_segment_threshold decides which tensors go to segments") {
  BpteInput in;
  in.program = WholeSourcePlan(OwnedSource(GoldenPte("pte_constants.pte")));
  in.suites = {
      {"forward",
       {BundledTestCase{{ByteTensorValue(Pattern(100, 1)), ByteTensorValue(Pattern(0, 1))}, {}}}}};
  BpteOptions opt;
  opt.layout = BpteLayout::kSegmented;
  opt.tensor_segment_threshold = 0;  // every tensor, even an empty one
  auto plan = PlanBpte(in, opt);
  REQUIRE(plan.ok());
  auto f = ReadOk(Materialize(plan->artifact));
  CHECK(f->bundled().segments()->size() == 3);
  CHECK(InlineTensorOffsets(*f).empty());
  auto suites = f->Suites();
  REQUIRE(suites.ok());
  CHECK((*suites)[0].test_cases[0].inputs[1].data->size() == 0);
}

// ---- planning errors ---------------------------------------------------------

TEST_CASE("PlanBpte refuses bad options and inconsistent tensors") {
  BpteInput in;
  in.program = WholeSourcePlan(OwnedSource(GoldenPte("pte_constants.pte")));
  BundledValue t = ByteTensorValue(Pattern(10, 1));
  t.layout.sizes = {12};
  in.suites = {{"forward", {BundledTestCase{{IntValue(1)}, {}}, BundledTestCase{{}, {t}}}}};
  auto plan = PlanBpte(in);
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().code() == Code::kInvalidArgument);
  CHECK_THAT(plan.status().message(),
             Contains("method_test_suites[0] 'forward' test_cases[1].expected_outputs[0]"));
  CHECK_THAT(plan.status().message(), Contains("needs 12 bytes"));

  in.suites.clear();
  BpteOptions opt;
  opt.layout = BpteLayout::kSegmented;
  opt.program_alignment = 64;
  CHECK_THAT(PlanBpte(in, opt).status().message(), Contains("program_alignment = 64"));
  opt.program_alignment = 1000;
  CHECK_THAT(PlanBpte(in, opt).status().message(), Contains("not a power of two"));
  opt.program_alignment = kMaxAlignment * 2;
  CHECK(PlanBpte(in, opt).status().code() == Code::kInvalidArgument);
  CHECK_THAT(PlanBpte(in, opt).status().message(),
             Contains("program_alignment = 2147483648 exceeds the maximum of 1073741824 (1 GiB)"));

  in.program = WholeSourcePlan(OwnedSource({}));
  CHECK_THAT(PlanBpte(in).status().message(), Contains("empty"));
}

// ---- reading errors ----------------------------------------------------------

TEST_CASE("hand-built files: the raw builder makes valid files of both layouts") {
  RawBpte std_file;
  std_file.program = GoldenPte("pte_constants.pte");
  auto f = ReadOk(std_file.Build());
  CHECK(f->layout() == BpteLayout::kStandard);

  RawBpte seg;
  seg.header = true;
  seg.program_segment = 0;
  seg.segments = {{0, std_file.program.size()}};
  seg.segment_bytes = std_file.program;
  auto g = ReadOk(seg.Build());
  CHECK(g->layout() == BpteLayout::kSegmented);
  CHECK(ReadSource(*g->ProgramSource()) == std_file.program);
}

TEST_CASE("malformed bundled programs are refused with clear messages") {
  const Bytes_ pte = GoldenPte("pte_constants.pte");
  RawBpte seg;
  seg.header = true;
  seg.program_segment = 0;
  seg.segments = {{0, pte.size()}};
  seg.segment_bytes = pte;
  RawBpte std_file;
  std_file.program = pte;

  SECTION("not a bundled program") { ExpectCorrupt(pte, "not 'BP08'"); }
  SECTION("bh00 header with a non-empty program") {
    RawBpte r = seg;
    r.program = pte;
    ExpectCorrupt(r.Build(), "ambiguous layout");
  }
  SECTION("bh00 header without program_segment") {
    RawBpte r = seg;
    r.program_segment = -1;
    ExpectCorrupt(r.Build(), "ambiguous layout: bh00 header at offset 8 but program_segment = -1");
  }
  SECTION("program_segment without bh00 header") {
    RawBpte r = std_file;
    r.program_segment = 0;
    ExpectCorrupt(r.Build(), "program_segment = 0 but there is no bh00 header");
  }
  SECTION("bh00 header with the program absent") {
    RawBpte r = seg;
    r.program_present = false;
    ExpectCorrupt(r.Build(), "must be present and empty");
  }
  SECTION("standard layout with an empty program") {
    RawBpte r = std_file;
    r.program.clear();
    ExpectCorrupt(r.Build(), "program is empty");
  }
  SECTION("program segment out of range") {
    RawBpte r = seg;
    r.program_segment = 1;
    ExpectCorrupt(r.Build(), "program_segment = 1 is out of range: 1 segments");
  }
  SECTION("segment past the segment data") {
    RawBpte r = seg;
    r.segments = {{0, pte.size() + 1}};
    ExpectCorrupt(r.Build(), "segments[0] = [0, +" + std::to_string(pte.size() + 1) +
                                 ") runs past the segment data");
  }
  SECTION("tensor data_segment out of range") {
    RawBpte r = seg;
    r.tensor_data.clear();
    r.data_segment = 3;
    ExpectCorrupt(r.Build(), "inputs[0].data_segment = 3 is out of range");
  }
  SECTION("tensor data_segment in a standard file") {
    RawBpte r = std_file;
    r.tensor_data.clear();
    r.data_segment = 0;
    ExpectCorrupt(r.Build(), "in a standard-layout file");
  }
  SECTION("tensor in the program's segment") {
    RawBpte r = seg;
    r.tensor_data.clear();
    r.data_segment = 0;
    ExpectCorrupt(r.Build(), "is the program's segment");
  }
  SECTION("tensor segment of the wrong size") {
    RawBpte r = seg;
    r.tensor_data.clear();
    r.data_segment = 1;
    r.segments.push_back({(pte.size() + 15) / 16 * 16, 20});
    r.segment_bytes.resize(r.segments[1].first + 20, 0);
    ExpectCorrupt(r.Build(), "needs 24 bytes but its data segment 1 holds 20");
  }
  SECTION("inline tensor data size mismatch") {
    RawBpte r = std_file;
    r.tensor_data.resize(20);
    ExpectCorrupt(r.Build(),
                  "method_test_suites[0] 'forward'.test_cases[0].inputs[0]: tensor FLOAT[2, 3] "
                  "dim_order [0, 1] needs 24 bytes but its data holds 20");
  }
  SECTION("unknown value kind") {
    RawBpte r = std_file;
    r.val_type = static_cast<bfb::ValueUnion>(9);
    ExpectCorrupt(r.Build(), "inputs[0].val_type = 9 is not a known value kind");
  }
  SECTION("misaligned program segment") {
    RawBpte r = seg;
    r.base_pad = 8;
    ExpectCorrupt(r.Build(), "is not 16-byte aligned");
  }
  SECTION("embedded program is not a program") {
    RawBpte r = std_file;
    r.program = Bytes_(128, 7);
    ExpectCorrupt(r.Build(), "bad.bpte: embedded program: ");
  }
  SECTION("truncated segmented file") {
    Bytes_ b = seg.Build();
    b.resize(b.size() - 10);
    ExpectCorrupt(b, "the file is truncated");
  }
  SECTION("truncated standard file") {
    Bytes_ b = std_file.Build();
    b.resize(b.size() / 2);
    ExpectCorrupt(b, "fails verification");
  }
  SECTION("bh00 header whose flatbuffer size exceeds the file") {
    Bytes_ b = seg.Build();
    StoreLE64(b.data() + 16, b.size() + 1);
    ExpectCorrupt(b, "bh00 header flatbuffer size");
  }
  SECTION("bh00 header length past the file") {
    Bytes_ b = seg.Build();
    StoreLE32(b.data() + 12, 0xFFFFFFFF);
    ExpectCorrupt(b,
                  "bh00 header length = 4294967295 would end the header at byte 4294967303, "
                  "past the end of the " +
                      std::to_string(b.size()) + "-byte file");
  }
}

// ---- CheckAgainstProgram -----------------------------------------------------

TEST_CASE("CheckAgainstProgram names the suite, case and value") {
  auto golden = BpteFile::Open(Golden("bpte_basic.bpte"));
  REQUIRE(golden.ok());
  const PteFile& program = (*golden)->program();
  auto read = (*golden)->Suites();
  REQUIRE(read.ok());
  const std::vector<BundledTestSuite> good = *read;
  REQUIRE(CheckAgainstProgram(good, program).ok());

  SECTION("unknown method") {
    auto s = good;
    s[0].method_name = "backward";
    Status st = CheckAgainstProgram(s, program);
    CHECK(st.code() == Code::kNotFound);
    CHECK_THAT(st.message(), Contains("no method 'backward' (methods: forward)"));
  }
  SECTION("wrong number of inputs") {
    auto s = good;
    s[0].test_cases[1].inputs.pop_back();
    Status st = CheckAgainstProgram(s, program);
    CHECK(st.code() == Code::kInvalidArgument);
    CHECK_THAT(st.message(),
               Contains("suite 0 'forward' test_cases[1]: 3 inputs, but method 'forward' takes 4"));
  }
  SECTION("tensor data size differs from its layout") {
    auto s = good;
    s[0].test_cases[0].expected_outputs[0].data = Pattern(20, 1);
    Status st = CheckAgainstProgram(s, program);
    CHECK_THAT(st.message(), Contains("test_cases[0] expected_outputs[0]: tensor FLOAT[2, 3]"));
    CHECK_THAT(st.message(), Contains("needs 24 bytes but its data holds 20"));
  }
  SECTION("dtype differs from the method's input") {
    auto s = good;
    s[0].test_cases[0].inputs[0].layout.scalar_type = 3;  // INT, same 4-byte size
    Status st = CheckAgainstProgram(s, program);
    CHECK_THAT(st.message(), Contains("inputs[0]: tensor INT[2, 3]"));
    CHECK_THAT(st.message(),
               Contains("method 'forward' input 0 (values[0]), a FLOAT tensor of rank 2"));
  }
  SECTION("rank differs from the method's input") {
    auto s = good;
    s[0].test_cases[1].inputs[0].layout.sizes = {6};
    s[0].test_cases[1].inputs[0].layout.dim_order = {0};
    Status st = CheckAgainstProgram(s, program);
    CHECK_THAT(st.message(), Contains("test_cases[1] inputs[0]: tensor FLOAT[6]"));
    CHECK_THAT(st.message(), Contains("a FLOAT tensor of rank 2"));
  }
  SECTION("a scalar where the method takes a tensor") {
    auto s = good;
    s[0].test_cases[0].inputs[0] = IntValue(5);
    Status st = CheckAgainstProgram(s, program);
    CHECK_THAT(st.message(), Contains("inputs[0] is Int but method 'forward' input 0"));
  }
}
