// Pass one for .pte, checked through the plan (no files) and the bytes it
// produces in memory, read back with the validating reader.
#include <cstring>
#include <functional>
#include "catch.h"

#include "etpack/pte.h"
#include "etpack/pte_file.h"
#include "flatbuffer/tree_builder.h"
#include "program_etpack_generated.h"
#include "test_programs.h"

using namespace etpack;
using namespace etpack::testing;
namespace fb = etpack::pte_fb;

TEST_CASE("no segment bytes: a plain flatbuffer with one empty constant segment") {
  auto plan = PlanPte(SmallProgram({}));
  REQUIRE(plan.ok());
  CHECK(plan->layout.segment_base_offset == 0);
  CHECK(plan->layout.segment_data_size == 0);
  CHECK(plan->artifact.placements.empty());
  CHECK(plan->artifact.file_size == plan->artifact.head.size());
  auto bytes = Materialize(plan->artifact);
  CHECK(std::memcmp(bytes.data() + 4, "ET12", 4) == 0);
  CHECK(std::memcmp(bytes.data() + 8, "eh00", 4) != 0);
  auto f = ReadPte(bytes);
  CHECK_FALSE(f->header().present);
  REQUIRE(f->program().segments()->size() == 1);
  CHECK(f->program().segments()->Get(0)->size() == 0);
  REQUIRE(f->program().constant_segment()->offsets()->size() == 1);
}

TEST_CASE("constants: sub-offsets, header, base and bytes") {
  auto a = Pattern(24, 1), b = Pattern(1, 2), c = Pattern(3, 3);
  auto plan = PlanPte(SmallProgram({a, b, c}));
  REQUIRE(plan.ok());
  const PteSegmentMap& l = plan->layout;
  REQUIRE(l.segments.size() == 1);
  CHECK(l.segments[0].role == SegmentRole::kConstants);
  CHECK(l.segments[0].size == 32 + 16 + 3);
  CHECK(l.segment_base_offset % 128 == 0);
  CHECK(l.segment_base_offset >= l.program_size);
  CHECK(l.segment_base_offset - l.program_size < 128);
  CHECK(plan->artifact.file_size == l.segment_base_offset + l.segment_data_size);

  auto bytes = Materialize(plan->artifact);
  auto f = ReadPte(bytes);
  REQUIRE(f->header().present);
  CHECK(f->header().length == 32);
  CHECK(f->header().program_size == l.program_size);
  const auto* offs = f->program().constant_segment()->offsets();
  REQUIRE(offs->size() == 4);
  CHECK(offs->Get(1) == 0);
  CHECK(offs->Get(2) == 32);
  CHECK(offs->Get(3) == 48);
  auto all = ReadAll(*f->SegmentSource(0));
  REQUIRE(all.ok());
  auto want = *ReadAll(*a);
  CHECK(std::equal(want.begin(), want.end(), all->begin()));
  for (size_t i = 24; i < 32; ++i) CHECK((*all)[i] == 0);  // padding is zero
}

TEST_CASE("constant alignment 64 pads the extended header to 64 bytes") {
  PteOptions o;
  o.constant_tensor_alignment = 64;
  o.segment_alignment = 4096;
  auto plan = PlanPte(SmallProgram({Pattern(5, 1), Pattern(5, 2)}), o);
  REQUIRE(plan.ok());
  auto bytes = Materialize(plan->artifact);
  auto f = ReadPte(bytes);
  CHECK(f->header().length == 32);
  CHECK(f->program().constant_segment()->offsets()->Get(2) == 64);
  CHECK(f->layout().segment_base_offset == 4096);
  // Root offset moved by 64: the first table lies past the padded header.
  uint32_t root;
  std::memcpy(&root, bytes.data(), 4);
  CHECK(root >= 8 + 64);
}

TEST_CASE("delegates: identical bytes share a segment, empty ones stay inline") {
  auto x = Pattern(300, 9);
  auto x_copy = Pattern(300, 9);  // same bytes, different source
  auto y = Pattern(300, 10);      // same size, other bytes
  auto empty = Bytes({});
  auto plan = PlanPte(SmallProgram({}, {x, empty, x_copy, y}));
  REQUIRE(plan.ok());
  const auto& segs = plan->layout.segments;
  REQUIRE(segs.size() == 3);  // constants, x, y
  CHECK(segs[1].role == SegmentRole::kDelegate);
  CHECK(segs[1].offset == 0);  // after an empty constant segment
  CHECK(segs[2].offset == 384);
  auto f = ReadPte(Materialize(plan->artifact));
  const auto* d = f->program().execution_plan()->Get(0)->delegates();
  CHECK(d->Get(0)->processed()->location() == fb::DataLocation::SEGMENT);
  CHECK(d->Get(0)->processed()->index() == 1);
  CHECK(d->Get(1)->processed()->location() == fb::DataLocation::INLINE);
  CHECK(d->Get(1)->processed()->index() == 0);
  CHECK(d->Get(2)->processed()->index() == 1);
  CHECK(d->Get(3)->processed()->index() == 2);
  REQUIRE(f->program().backend_delegate_data()->size() == 1);
  CHECK(f->program().backend_delegate_data()->Get(0)->data()->size() == 0);
}

TEST_CASE("delegates of one size are each read once to deduplicate, not once per pair") {
  // 30 distinct payloads of equal size, plus one repeat of the first.
  constexpr int kDistinct = 30;
  constexpr uint64_t kSize = 4096;
  auto bytes_read = std::make_shared<uint64_t>(0);
  std::vector<SourcePtr> payloads;
  for (int i = 0; i <= kDistinct; ++i) {
    const uint8_t seed = static_cast<uint8_t>(i % kDistinct);
    payloads.push_back(GeneratorSource("payload " + std::to_string(i), kSize,
                                       [bytes_read, seed](uint64_t offset, uint8_t* dst, size_t n) {
                                         *bytes_read += n;
                                         for (size_t k = 0; k < n; ++k)
                                           dst[k] = static_cast<uint8_t>(offset + k + seed);
                                         return Status::OK();
                                       }));
  }
  auto plan = PlanPte(SmallProgram({}, payloads));
  REQUIRE(plan.ok());
  CHECK(plan->layout.segments.size() == 1 + kDistinct);  // the repeat shares a segment
  // Every payload hashed once, and the one hash match confirmed byte by
  // byte; comparing pairs would read about kDistinct^2 / 2 payloads.
  CHECK(*bytes_read == (kDistinct + 1 + 2) * kSize);
}

TEST_CASE("delegates stay inline, aligned, when extraction is off") {
  PteOptions o;
  o.extract_delegate_segments = false;
  o.delegate_alignment = 32;
  auto plan = PlanPte(SmallProgram({}, {Pattern(100, 1), Pattern(100, 1)}), o);
  REQUIRE(plan.ok());
  CHECK(plan->layout.segment_data_size == 0);
  auto bytes = Materialize(plan->artifact);
  auto f = ReadPte(bytes);
  const auto* bdd = f->program().backend_delegate_data();
  REQUIRE(bdd->size() == 2);  // no deduplication inline
  for (uint32_t i = 0; i < 2; ++i) {
    const uint8_t* p = bdd->Get(i)->data()->data();
    CHECK((p - f->head()) % 32 == 0);
  }
}

TEST_CASE("a delegate not given INLINE is an error naming the field") {
  PteInput in = SmallProgram({}, {Pattern(4, 1)});
  auto& d = Delegates(in)[0];
  d.Find("processed")->Set("location", json::Value::Int(1));
  auto plan = PlanPte(in);
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().message().find("execution_plan[0].delegates[0].processed.location") !=
        std::string::npos);
  d.Find("processed")->Set("location", json::Value::Int(0));
  d.Find("processed")->Set("index", json::Value::Int(5));
  auto plan2 = PlanPte(in);
  REQUIRE_FALSE(plan2.ok());
  CHECK(plan2.status().message().find("index = 5 is out of range") != std::string::npos);
}

TEST_CASE("mutable data and named data segments") {
  PteInput in = SmallProgram({Pattern(24, 1)});
  in.mutable_data = {Bytes({}), Pattern(12, 2), Pattern(8, 3), Pattern(5, 4)};
  const SourcePtr a = Pattern(10, 5), b = Pattern(200, 6), c = Pattern(5, 7);
  in.named_data = {
      {"blob.a", a, 1}, {"blob.b", b, 64}, {"blob.b_alias", b, 1024}, {"blob.c", c, 512}};
  auto plan = PlanPte(in);
  REQUIRE(plan.ok());
  const auto& s = plan->layout.segments;
  REQUIRE(s.size() == 5);
  CHECK(s[1].role == SegmentRole::kMutable);
  CHECK(s[1].offset == 128);
  CHECK(s[1].size == 25);
  CHECK(s[2].offset == 256);   // blob.a
  CHECK(s[3].offset == 384);   // blob.b: first key's alignment (64), not the alias's 1024
  CHECK(s[4].offset == 1024);  // blob.c: 512-aligned
  auto f = ReadPte(Materialize(plan->artifact));
  const auto* nd = f->program().named_data();
  REQUIRE(nd->size() == 4);
  CHECK(nd->Get(1)->segment_index() == nd->Get(2)->segment_index());
  const auto* m = f->program().mutable_data_segments();
  REQUIRE(m->size() == 1);
  CHECK(m->Get(0)->offsets()->Get(3) == 20);
}

TEST_CASE("invalid options and inputs are errors, not layouts") {
  for (uint64_t bad : {uint64_t{0}, uint64_t{3}, uint64_t{48}}) {
    PteOptions o;
    o.segment_alignment = bad;
    CHECK(PlanPte(SmallProgram({}), o).ok() == (bad != 0));  // any positive alignment
    o = PteOptions();
    o.constant_tensor_alignment = bad;  // a force_align: powers of two only
    CHECK_FALSE(PlanPte(SmallProgram({}), o).ok());
    o = PteOptions();
    o.delegate_alignment = bad;
    CHECK_FALSE(PlanPte(SmallProgram({}), o).ok());
  }
  PteInput in = SmallProgram({});
  in.named_data = {{"k", Pattern(1, 1), 1}, {"j", nullptr, 1}};
  auto r = PlanPte(in);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message() == "named_data[1]: the data source is null");
  in.named_data = {{"k", Pattern(1, 1), 0}};
  r = PlanPte(in);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message() == "named_data[0]: alignment = 0 is not a positive alignment");
}

TEST_CASE("named data asking an alignment that is no power of two: the lcm rule") {
  // The reference's test_constant_delegate_and_named_data_segments: a key
  // asking 3 starts at a multiple of lcm(3, 128) = 384 from the base.
  PteInput in = SmallProgram({Pattern(24, 1)});
  in.named_data = {{"three", Pattern(8, 2), 3}, {"many", Pattern(16, 3), 256}};
  auto plan = PlanPte(in);
  REQUIRE(plan.ok());
  const auto& s = plan->layout.segments;
  REQUIRE(s.size() == 3);
  CHECK(s[1].offset == 384);
  CHECK(s[1].alignment == 128);  // achieved: a power of two
  CHECK(s[2].offset == 512);
  // segment_alignment 12: the base is a multiple of 12, segments of lcm(12, own).
  PteOptions o;
  o.segment_alignment = 12;
  in = SmallProgram({Pattern(5, 1)});
  in.named_data = {{"a", Pattern(8, 2), 8}, {"b", Pattern(16, 3), 16}};
  plan = PlanPte(in, o);
  REQUIRE(plan.ok());
  CHECK(plan->layout.segment_base_offset % 12 == 0);
  CHECK(plan->layout.segments[1].offset == 24);
  CHECK(plan->layout.segments[2].offset == 48);
  auto f = ReadPte(Materialize(plan->artifact));
  auto b = ReadAll(*f->SegmentSource(2));
  REQUIRE(b.ok());
  CHECK(*b == *ReadAll(*Pattern(16, 3)));
  for (const Placement& p : plan->artifact.placements) CHECK(p.offset % p.alignment == 0);
}

TEST_CASE("no constant_buffer entry at all: no constant segment, constant_segment as given") {
  PteInput in = SmallProgram({});
  in.constants.clear();  // not even the placeholder
  auto plan = PlanPte(in);
  REQUIRE(plan.ok());
  CHECK(plan->layout.segments.empty());
  auto f = ReadPte(Materialize(plan->artifact));
  CHECK(f->program().segments()->size() == 0);
  const auto* cs = f->program().constant_segment();  // as the tree had it, not made up
  CHECK((cs == nullptr || cs->offsets() == nullptr || cs->offsets()->size() == 0));
  // Named data alone then starts at segment 0.
  in = SmallProgram({});
  in.constants.clear();
  in.named_data = {{"k", Pattern(8, 1), 1}};
  plan = PlanPte(in);
  REQUIRE(plan.ok());
  REQUIRE(plan->layout.segments.size() == 1);
  CHECK(plan->layout.segments[0].role == SegmentRole::kNamedData);
  f = ReadPte(Materialize(plan->artifact));
  CHECK(f->program().named_data()->Get(0)->segment_index() == 0);
}

TEST_CASE("only empty delegate payloads: kept inline, no segment, no header") {
  auto plan = PlanPte(SmallProgram({}, {Bytes({}), Bytes({})}));
  REQUIRE(plan.ok());
  REQUIRE(plan->layout.segments.size() == 1);  // the empty constant segment
  CHECK(plan->layout.segment_data_size == 0);
  auto f = ReadPte(Materialize(plan->artifact));
  CHECK_FALSE(f->header().present);
  const auto* d = f->program().execution_plan()->Get(0)->delegates();
  for (flatbuffers::uoffset_t i = 0; i < d->size(); ++i) {
    CHECK(d->Get(i)->processed()->location() == fb::DataLocation::INLINE);
    CHECK(d->Get(i)->processed()->index() == i);
  }
  CHECK(f->program().backend_delegate_data()->size() == 2);
}

TEST_CASE("beyond 4 GiB: planned without reading a byte; near 2^64: an error") {
  auto never = [](uint64_t, uint8_t*, size_t) -> Status {
    FAIL("planning must not read data");
    return Status::OK();
  };
  const uint64_t big = (uint64_t{5} << 30) + 3 * 65536;
  auto plan = PlanPte(
      SmallProgram({GeneratorSource("big", big, never), GeneratorSource("next", 16, never)}));
  REQUIRE(plan.ok());
  CHECK(plan->layout.segments[0].size == big + 16);
  CHECK(plan->artifact.placements[1].offset == plan->layout.segment_base_offset + big);
  CHECK(plan->artifact.file_size > (uint64_t{5} << 30));

  auto huge = PlanPte(SmallProgram(
      {GeneratorSource("huge", UINT64_MAX - 8, never), GeneratorSource("next", 16, never)}));
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.status().code() == Code::kOutOfRange);
}

TEST_CASE("without extraction the inline table and references stay as given") {
  PteOptions o;
  o.extract_delegate_segments = false;
  PteInput in = SmallProgram({}, {Pattern(300, 1), Bytes({}), Pattern(1000, 2)});
  auto& ds = Delegates(in);
  ds[0].Find("processed")->Set("index", json::Value::Int(2));  // swapped
  ds[2].Find("processed")->Set("index", json::Value::Int(0));
  auto f = ReadPte(Materialize(PlanPte(in, o)->artifact));
  const auto* bdd = f->program().backend_delegate_data();
  REQUIRE(bdd->size() == 3);
  CHECK(bdd->Get(0)->data()->size() == 300);
  CHECK(bdd->Get(2)->data()->size() == 1000);
  const auto* d = f->program().execution_plan()->Get(0)->delegates();
  CHECK(d->Get(0)->processed()->index() == 2);
  CHECK(d->Get(2)->processed()->index() == 0);
}

TEST_CASE("with extraction: one inline entry per empty payload, unreferenced data refused") {
  PteInput in = SmallProgram({}, {Bytes({}), Bytes({})});
  Delegates(in)[1].Find("processed")->Set("index", json::Value::Int(0));  // both use entry 0
  in.delegates.pop_back();
  auto f = ReadPte(Materialize(PlanPte(in)->artifact));
  CHECK(f->program().backend_delegate_data()->size() == 2);

  PteInput lost = SmallProgram({}, {Pattern(10, 1)});
  lost.delegates.push_back(Pattern(3, 2));
  auto plan = PlanPte(lost);
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().message() == "delegates[1] is not referenced by any delegate");
}

TEST_CASE("bytes inside the tree are refused, naming the field and where they go") {
  PteInput constant = SmallProgram({Pattern(4, 1)});
  constant.program.tree().Find("constant_buffer")->items() = {
      json::Value::Object(),
      json::Value::Object({{"storage", json::Value::Array({json::Value::Int(1)})}})};
  auto plan = PlanPte(constant);
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().message() ==
        "program.constant_buffer[1].storage holds 1 byte: the bytes go in PteInput::constants[1], "
        "beside the program; leave the field empty");

  PteInput delegate = SmallProgram({}, {Pattern(4, 1)});
  delegate.program.tree().Find("backend_delegate_data")->items() = {json::Value::Object(
      {{"data",
        json::Value::Array({json::Value::Int(1), json::Value::Int(2), json::Value::Int(3)})}})};
  plan = PlanPte(delegate);
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().message() ==
        "program.backend_delegate_data[0].data holds 3 bytes: the bytes go in "
        "PteInput::delegates[0], beside the program; leave the field empty");
  // Not bytes at all: the field is named as well.
  delegate.program.tree().Find("backend_delegate_data")->items() = {
      json::Value::Object({{"data", json::Value::String("abc")}})};
  plan = PlanPte(delegate);
  REQUIRE_FALSE(plan.ok());
  CHECK_THAT(
      plan.status().message(),
      catch_text::StartsWith("program.backend_delegate_data[0].data: expected an array of bytes"));

  PteInput null_source = SmallProgram({Pattern(4, 1)});
  null_source.constants[1] = nullptr;
  plan = PlanPte(null_source);
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().message() == "constants[1]: null source");
}

// The structure alone (no data) as a plain Program flatbuffer.
std::vector<uint8_t> StructureFlatbuffer(const PteInput& in) {
  auto fb = BuildFlatbuffer(SchemaId::kProgram, in.program.tree(), {});
  REQUIRE(fb.ok());
  return std::move(fb).value();
}

TEST_CASE("the structure as flatbuffer bytes plans like the tree") {
  for (bool extract : {true, false}) {
    PteOptions o;
    o.extract_delegate_segments = extract;
    PteInput in = SmallProgram({Pattern(24, 1), Pattern(8, 2)}, {Pattern(100, 3), Bytes({})});
    in.named_data = {{"blob", Pattern(10, 5), 64}};
    std::vector<uint8_t> fb = StructureFlatbuffer(
        SmallProgram({Pattern(24, 1), Pattern(8, 2)}, {Pattern(100, 3), Bytes({})}));
    auto from_tree = PlanPte(in, o);
    REQUIRE(from_tree.ok());
    in.program = ProgramStructure::FromFlatbuffer(OwnedSource(fb));
    auto from_fb = PlanPte(in, o);
    REQUIRE(from_fb.ok());
    CHECK(Materialize(from_fb->artifact) == Materialize(from_tree->artifact));
  }
}

TEST_CASE("a malformed structure flatbuffer is refused, naming the field") {
  PteInput in = SmallProgram({Pattern(24, 1)});
  std::vector<uint8_t> fb = StructureFlatbuffer(in);
  const auto* sizes = pte_fb::GetProgram(fb.data())
                          ->execution_plan()
                          ->Get(0)
                          ->values()
                          ->Get(0)
                          ->val_as_Tensor()
                          ->sizes();
  const size_t at = static_cast<size_t>(reinterpret_cast<const uint8_t*>(sizes) - fb.data());
  fb[at + 3] = 0x70;  // a length far past the end
  in.program = ProgramStructure::FromFlatbuffer(OwnedSource(fb));
  auto plan = PlanPte(in);
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().code() == Code::kCorrupt);
  CHECK(plan.status().message().find("execution_plan[0].values[0].val.sizes: vector is outside "
                                     "the buffer") != std::string::npos);

  in.program =
      ProgramStructure::FromFlatbuffer(OwnedSource({8, 0, 0, 0, 'N', 'O', 'P', 'E', 0, 0, 0, 0}));
  plan = PlanPte(in);
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().message().find("not a Program flatbuffer") != std::string::npos);
}

TEST_CASE("inline alignments above 64 KiB are refused by name") {
  PteOptions o;
  o.constant_tensor_alignment = 131072;
  auto plan = PlanPte(SmallProgram({}), o);
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().message() ==
        "constant_tensor_alignment = 131072 exceeds the maximum of 65536 (64 KiB)");
  o = PteOptions{};
  o.delegate_alignment = kMaxInlineAlignment * 2;
  plan = PlanPte(SmallProgram({}), o);
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().code() == Code::kInvalidArgument);
  CHECK(plan.status().message() ==
        "delegate_alignment = 131072 exceeds the maximum of 65536 (64 KiB)");
}

TEST_CASE("segment and named-data alignments above 1 GiB are refused by name") {
  PteOptions o;
  o.segment_alignment = uint64_t{8} << 30;  // `ptd --align 8GiB` once wrote 17 GB
  auto plan = PlanPte(SmallProgram({Pattern(4, 1)}), o);
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().code() == Code::kInvalidArgument);
  CHECK(plan.status().message() ==
        "segment_alignment = 8589934592 exceeds the maximum of 1073741824 (1 GiB)");
  o.segment_alignment = kMaxAlignment;  // the bound itself is allowed (nothing is written)
  CHECK(PlanPte(SmallProgram({Pattern(4, 1)}), o).ok());

  PteInput in = SmallProgram({});
  in.named_data = {{"k", Pattern(1, 1), kMaxAlignment * 2}};
  plan = PlanPte(in);
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().code() == Code::kInvalidArgument);
  CHECK(plan.status().message() ==
        "named_data[0]: alignment = 2147483648 exceeds the maximum of 1073741824 (1 GiB)");
}

TEST_CASE("program-tree errors name the path from program") {
  PteInput in = SmallProgram({});
  in.program.tree().Set("bogus_field", json::Value::Int(1));
  auto plan = PlanPte(in);
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().message() == "program.bogus_field: unknown member of table Program");
}

TEST_CASE("the planner refuses what the reader would refuse, before writing a byte") {
  // One program, one defect at a time; each is named by the reader's own
  // field path (pte/program_checks.h runs on the planned head).
  struct Case {
    const char* what;
    std::function<void(PteInput&)> edit;
    const char* fragment;
  };
  auto tensor = [](PteInput& in, size_t v) -> Value& { return *Values(in)[v].Find("val"); };
  auto method = [](PteInput& in) -> Value& {
    return in.program.tree().Find("execution_plan")->items()[0];
  };
  const std::vector<Case> cases = {
      {"unknown scalar type",
       [&](PteInput& in) { tensor(in, 0).Set("scalar_type", Value::Int(99)); },
       "execution_plan[0].values[0].scalar_type = 99 is not a scalar type"},
      {"constant index out of range",
       [&](PteInput& in) { tensor(in, 1).Set("data_buffer_idx", Value::Int(999)); },
       "execution_plan[0].values[1].data_buffer_idx = 999 is out of range"},
      {"constant past its segment's end",
       [&](PteInput& in) { tensor(in, 1).Set("sizes", IntArray({5000})); },
       "execution_plan[0].values[1]: 5000 bytes at offset"},
      {"input index out of range",
       [&](PteInput& in) {
         method(in).Set("inputs", IntArray({0, 12345}));
       },
       "execution_plan[0].inputs[1] = 12345 is out of range: execution_plan[0] has 2 values"},
      {"kernel argument out of range",
       [&](PteInput& in) {
         method(in).Set("operators",
                        Value::Array({Value::Object({{"name", Value::String("op")}})}));
         auto& chain = method(in).Find("chains")->items()[0];
         chain.Set("instructions",
                   Value::Array({Value::Object(
                       {{"instr_args_type", Value::String("KernelCall")},
                        {"instr_args", Value::Object({{"op_index", Value::Int(0)},
                                                      {"args", IntArray({0, 999})}})}})}));
       },
       "execution_plan[0].chains[0].instructions[0].instr_args.args[1] = 999 is out of range"},
      {"method name not UTF-8",
       [&](PteInput& in) { method(in).Set("name", Value::String("for\xffward")); },
       "execution_plan[0].name is not valid UTF-8"},
      {"dim_order not a permutation",
       [&](PteInput& in) {
         tensor(in, 0).Set("sizes", IntArray({2, 2}));
         tensor(in, 0).Set("dim_order", IntArray({1, 1}));
       },
       "execution_plan[0].values[0].dim_order[1] = 1: dim_order must be a permutation of 0..1"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    PteInput in = SmallProgram({Pattern(4, 1), Pattern(8, 2)});
    c.edit(in);
    auto plan = PlanPte(std::move(in));
    INFO(plan.status().ToString());
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.status().code() == Code::kInvalidArgument);
    CHECK(plan.status().message().find("the program would not load") != std::string::npos);
    CHECK(plan.status().message().find(c.fragment) != std::string::npos);
  }
}

TEST_CASE("mutable initial values out of range are refused by the planner") {
  PteInput in = SmallProgram({});
  ProgramBuilder program;
  MethodBuilder& forward = program.AddMethod("forward");
  const int32_t t = forward.PlannedTensor({6, {3}, {}}, 1, 0, 2);  // asks for mutable entry 2
  forward.SetInputs({t});
  forward.SetNonConstBufferSizes({0, 16});
  in.program = std::move(program).Build();
  in.mutable_data = {OwnedSource({}), Pattern(12, 1)};  // only entry 1
  auto plan = PlanPte(std::move(in));
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().message().find(
            "execution_plan[0].values[0].data_buffer_idx = 2 is out of range: "
            "mutable_data_segments[0] has 2 offsets") != std::string::npos);
}
