// The validating reader: every class of malformed .pte is refused with a
// message naming the field and the value.
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include "catch.h"

#include "etpack/pte.h"
#include "etpack/pte_file.h"
#include "plan/header_insert.h"
#include "program_etpack_generated.h"
#include "pte/pte_format.h"
#include "pte/pte_header.h"
#include "test_files.h"
#include "test_programs.h"

using namespace etpack;
using namespace etpack::testing;
namespace fb = etpack::pte_fb;

namespace {

// A valid program with two segments: constants (f32 tensors) and a delegate.
std::vector<uint8_t> ValidFile() {
  PteInput in = SmallProgram({Pattern(24, 1), Pattern(8, 2)}, {Pattern(100, 3)});
  // Make the constants FLOAT so element alignment matters.
  auto& values = Values(in);
  for (auto& v : values) {
    auto& t = *v.Find("val");
    const int64_t n = t.Find("sizes")->items()[0].as_int();
    t.Set("scalar_type", json::Value::Int(6));
    t.Set("sizes", IntArray({n / 4}));
  }
  auto plan = PlanPte(in);
  REQUIRE(plan.ok());
  return Materialize(plan->artifact);
}

Status Validate(const std::vector<uint8_t>& bytes) {
  return TryRead<PteFile>("bad.pte", bytes).status();
}

const fb::Program* ProgramOf(std::vector<uint8_t>& bytes) { return fb::GetProgram(bytes.data()); }

// Overwrites a present scalar field of a table in place.
template <typename T>
void Poke(std::vector<uint8_t>& bytes, const void* table, flatbuffers::voffset_t field, T value) {
  const uint8_t* p = reinterpret_cast<const flatbuffers::Table*>(table)->GetAddressOf(field);
  REQUIRE(p != nullptr);
  std::memcpy(bytes.data() + (p - bytes.data()), &value, sizeof(T));
}

void ExpectError(const std::vector<uint8_t>& bytes, const std::string& fragment) {
  Status s = Validate(bytes);
  INFO(s.ToString());
  REQUIRE_FALSE(s.ok());
  CHECK(s.message().rfind("bad.pte: ", 0) == 0);  // names the file
  CHECK(s.message().find(fragment) != std::string::npos);
}

}  // namespace

TEST_CASE("the valid baseline validates") { CHECK(Validate(ValidFile()).ok()); }

TEST_CASE("truncated files are refused") {
  auto bytes = ValidFile();
  for (size_t keep : {size_t{0}, size_t{7}, size_t{63}}) {
    ExpectError(std::vector<uint8_t>(bytes.begin(), bytes.begin() + keep), "needs at least 64");
  }
  bytes.resize(bytes.size() - 1);
  ExpectError(bytes, "truncated");
  auto mid = ValidFile();
  mid.resize(200);  // inside the flatbuffer
  Status s = Validate(mid);
  CHECK_FALSE(s.ok());
}

TEST_CASE("a wrong identifier is refused, naming what was found") {
  auto bytes = ValidFile();
  std::memcpy(bytes.data() + 4, "ET11", 4);
  ExpectError(bytes, "file identifier is 'ET11', expected 'ET12'");
  bytes[4] = 0x01;
  ExpectError(bytes, "\\x01");
}

TEST_CASE("malformed extended headers are refused") {
  auto bytes = ValidFile();
  pte::StoreLE32(bytes.data() + 12, 16);
  ExpectError(bytes, "extended header length = 16");
  // A length past the file is reported as the length's fault.
  bytes = ValidFile();
  pte::StoreLE32(bytes.data() + 12, 0xFFFFFFFF);
  ExpectError(bytes,
              "extended header length = 4294967295 would end the header at byte 4294967303, "
              "past the end of the " +
                  std::to_string(bytes.size()) + "-byte file");
  bytes = ValidFile();
  pte::StoreLE64(bytes.data() + 16, bytes.size() + 1);
  ExpectError(bytes, "program_size");
  bytes = ValidFile();
  pte::StoreLE64(bytes.data() + 24, 8);  // base inside the flatbuffer
  ExpectError(bytes, "segment_base_offset = 8 lies inside the flatbuffer");
  bytes = ValidFile();
  pte::StoreLE64(bytes.data() + 32, uint64_t{1} << 62);
  ExpectError(bytes, "runs past the end of the file");
}

TEST_CASE("segments out of bounds are refused") {
  auto bytes = ValidFile();
  const auto* seg = ProgramOf(bytes)->segments()->Get(1);
  Poke<uint64_t>(bytes, seg, fb::DataSegment::VT_SIZE, 100000);
  ExpectError(bytes, "segments[1] = [128, +100000) runs past the segment data");
}

TEST_CASE("overlapping segments are refused") {
  auto bytes = ValidFile();
  const auto* seg = ProgramOf(bytes)->segments()->Get(1);
  Poke<uint64_t>(bytes, seg, fb::DataSegment::VT_OFFSET, 16);
  ExpectError(bytes, "segments[1].offset = 16 overlaps the previous segment");
}

TEST_CASE("misaligned and out-of-range constant offsets are refused") {
  auto bytes = ValidFile();
  const auto* offs = ProgramOf(bytes)->constant_segment()->offsets();
  uint64_t bad = 30;  // in bounds, but f32 data must be 4-aligned
  std::memcpy(bytes.data() + (reinterpret_cast<const uint8_t*>(offs->Data()) - bytes.data()) + 16,
              &bad, 8);
  ExpectError(bytes, "not aligned to its element size 4");
  bad = 1000;
  std::memcpy(bytes.data() + (reinterpret_cast<const uint8_t*>(offs->Data()) - bytes.data()) + 16,
              &bad, 8);
  ExpectError(bytes, "constant_segment.offsets[2] = 1000 is past the end of segment 0");
}

TEST_CASE("dangling references are refused") {
  auto bytes = ValidFile();
  const auto* ref = ProgramOf(bytes)->execution_plan()->Get(0)->delegates()->Get(0)->processed();
  Poke<uint32_t>(bytes, ref, fb::BackendDelegateDataReference::VT_INDEX, 7);
  ExpectError(bytes, "delegates[0].processed.index = 7 is out of range: 2 segments");

  bytes = ValidFile();
  const auto* t = ProgramOf(bytes)->execution_plan()->Get(0)->values()->Get(1)->val_as_Tensor();
  Poke<uint32_t>(bytes, t, fb::Tensor::VT_DATA_BUFFER_IDX, 9);
  ExpectError(bytes, "execution_plan[0].values[1].data_buffer_idx = 9 is out of range");
}

TEST_CASE("a tensor larger than its constant is refused") {
  auto bytes = ValidFile();
  const auto* t = ProgramOf(bytes)->execution_plan()->Get(0)->values()->Get(1)->val_as_Tensor();
  const auto* sizes = t->sizes();
  int32_t big = 1000;
  std::memcpy(bytes.data() + (reinterpret_cast<const uint8_t*>(sizes->Data()) - bytes.data()), &big,
              4);
  ExpectError(bytes, "4000 bytes at offset 32 run past the end of segment 0");
}

TEST_CASE("garbage in the flatbuffer fails verification, never crashes") {
  auto good = ValidFile();
  // Flip every byte of the flatbuffer region in turn (skipping the header
  // fields that are checked first): each result is either valid or refused.
  const uint64_t program_size = pte::LoadLE64(good.data() + 16);
  for (uint64_t i = 40; i < program_size; ++i) {
    auto bytes = good;
    bytes[i] ^= 0xA5;
    (void)Validate(bytes);
  }
  auto bytes = good;
  pte::StoreLE32(bytes.data(), 0x7fffff00);  // root offset far out of bounds
  ExpectError(bytes, "fails verification");
}

TEST_CASE("ParseExtendedHeader handles legacy and absent headers") {
  std::vector<uint8_t> head(64, 0);
  std::memcpy(head.data() + 8, "eh00", 4);
  pte::StoreLE32(head.data() + 12, 24);
  pte::StoreLE64(head.data() + 16, 1000);
  pte::StoreLE64(head.data() + 24, 1024);
  pte::StoreLE64(head.data() + 32, 77);  // not part of a 24-byte header
  auto h = ParseExtendedHeader(head.data(), head.size());
  REQUIRE(h.ok());
  CHECK(h->present);
  CHECK(h->segment_data_size == 0);
  CHECK(h->segment_base_offset == 1024);
  std::memcpy(head.data() + 8, "xxxx", 4);
  auto none = ParseExtendedHeader(head.data(), head.size());
  REQUIRE(none.ok());
  CHECK_FALSE(none->present);
}

// --- Regressions from review ----------------------------------------------

TEST_CASE("union types without values and unknown enum values are refused") {
  auto bytes = ValidFile();
  const auto* value = ProgramOf(bytes)->execution_plan()->Get(0)->values()->Get(0);
  Poke<uint8_t>(bytes, value, fb::EValue::VT_VAL_TYPE, 42);
  ExpectError(bytes, "values[0].val_type = 42 is not a value type");

  bytes = ValidFile();
  const auto* ref = ProgramOf(bytes)->execution_plan()->Get(0)->delegates()->Get(0)->processed();
  Poke<int8_t>(bytes, ref, fb::BackendDelegateDataReference::VT_LOCATION, 7);
  ExpectError(bytes, "processed.location = 7 is neither INLINE (0) nor SEGMENT (1)");
}

TEST_CASE("tensors beyond the runtime's rank limit are refused before any size math") {
  PteInput in = SmallProgram({Pattern(1, 1)});
  auto& t = *Values(in)[0].Find("val");
  std::vector<int64_t> ones(17, 1), order(17);
  for (int i = 0; i < 17; ++i) order[i] = i;
  t.Set("sizes", IntArray(ones));
  t.Set("dim_order", IntArray(order));
  // The planner runs the reader's checks: it refuses to write such a file.
  auto plan = PlanPte(in);
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().message().find(
            "sizes: rank 17 exceeds the runtime's limit of 16 dimensions") != std::string::npos);
}

TEST_CASE("repack keeps constants whose offsets alias or run backwards") {
  // Two tensors share constant 2; constant 1 sits after constant 2.
  auto a = Pattern(24, 1), b = Pattern(8, 2);
  PteInput in = SmallProgram({a, b});
  auto bytes = Materialize(PlanPte(in)->artifact);
  const auto* offs = ProgramOf(bytes)->constant_segment()->offsets();
  const size_t at = reinterpret_cast<const uint8_t*>(offs->Data()) - bytes.data();
  StoreLE64(bytes.data() + at + 8, 16);  // offsets [0, 16, 0]: backwards, overlapping
  StoreLE64(bytes.data() + at + 16, 0);
  auto owner = std::make_shared<std::vector<uint8_t>>(bytes);
  auto f = PteFile::FromMemory("alias.pte", owner->data(), owner->size(), owner);
  REQUIRE(f.ok());
  auto input = (*f)->ToInput();
  REQUIRE(input.ok());
  auto again = Materialize(PlanPte(*input)->artifact);
  auto owner2 = std::make_shared<std::vector<uint8_t>>(again);
  auto g = PteFile::FromMemory("repacked.pte", owner2->data(), owner2->size(), owner2);
  INFO(g.status().ToString());
  REQUIRE(g.ok());
  // Each tensor reads the same bytes as before.
  for (uint32_t v = 0; v < 2; ++v) {
    auto read = [&](const PteFile& file) {
      const auto* t = file.program().execution_plan()->Get(0)->values()->Get(v)->val_as_Tensor();
      const uint64_t off = file.program().constant_segment()->offsets()->Get(t->data_buffer_idx());
      const uint64_t n = t->sizes()->Get(0);
      const uint8_t* p = file.head() + file.header().segment_base_offset + off;
      return std::vector<uint8_t>(p, p + n);
    };
    CHECK(read(**g) == read(**f));
  }
}

TEST_CASE("legacy 24-byte headers bound segments by the file end") {
  auto bytes = ValidFile();
  StoreLE32(bytes.data() + 12, 24);  // segment_data_size is not part of it
  auto owner = std::make_shared<std::vector<uint8_t>>(bytes);
  auto f = PteFile::FromMemory("legacy.pte", owner->data(), owner->size(), owner);
  INFO(f.status().ToString());
  CHECK(f.ok());
}

TEST_CASE("inferred options follow the file") {
  PteOptions o;
  o.constant_tensor_alignment = 64;
  o.segment_alignment = 4096;
  auto bytes = Materialize(PlanPte(SmallProgram({Pattern(5, 1), Pattern(5, 2)}), o)->artifact);
  auto owner = std::make_shared<std::vector<uint8_t>>(bytes);
  auto f = PteFile::FromMemory("x.pte", owner->data(), owner->size(), owner);
  REQUIRE(f.ok());
  PteOptions got = (*f)->InferredOptions();
  CHECK(got.constant_tensor_alignment == 64);
  CHECK(got.segment_alignment == 4096);
  CHECK(got.extract_delegate_segments);

  PteOptions inl;
  inl.extract_delegate_segments = false;
  auto b2 = Materialize(PlanPte(SmallProgram({}, {Pattern(100, 1)}), inl)->artifact);
  auto o2 = std::make_shared<std::vector<uint8_t>>(b2);
  auto g = PteFile::FromMemory("y.pte", o2->data(), o2->size(), o2);
  REQUIRE(g.ok());
  CHECK_FALSE((*g)->InferredOptions().extract_delegate_segments);
}

TEST_CASE("uint64 offsets the verifier aligns only to 4 bytes are read byte-safely") {
  // Found by fuzzing under UBSan: the constant-segment and mutable-data
  // offsets moved to a 4- but not 8-aligned address still verify. The files
  // (test/fuzz/regressions/pte_reader) are goldens with only that moved, so
  // they must read as the goldens do; the sanitizer suite checks the reads.
  const std::string regressions = GoldenDir() + "/../fuzz/regressions/pte_reader/";
  for (const auto& [file, golden] :
       {std::pair{"misaligned_constant_segment_offsets.pte", "pte_constants.pte"},
        std::pair{"misaligned_mutable_data_offsets.pte", "pte_mutable.pte"}}) {
    INFO(file);
    auto f = PteFile::Open(regressions + file);
    REQUIRE(f.ok());
    auto g = PteFile::Open(Golden(golden));
    REQUIRE(g.ok());
    auto json = (*f)->ToFlatcJson();
    REQUIRE(json.ok());
    CHECK(*json == *(*g)->ToFlatcJson());
    CHECK((*f)->ToInput().ok());
    CHECK((*f)->InferredOptions().constant_tensor_alignment ==
          (*g)->InferredOptions().constant_tensor_alignment);
  }
}

// --- What the runtime checks when it initialises a method -------------------

namespace {

std::vector<uint8_t> GoldenBytes(const std::string& name) {
  std::ifstream f(Golden(name), std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)),
                              std::istreambuf_iterator<char>());
}

// Overwrites byte `i` of a string of the flatbuffer.
void PokeString(std::vector<uint8_t>& bytes, const flatbuffers::String* s, size_t i, uint8_t b) {
  REQUIRE(s != nullptr);
  REQUIRE(i < s->size());
  bytes[reinterpret_cast<const uint8_t*>(s->c_str()) - bytes.data() + i] = b;
}

// Overwrites element i of an [int] vector.
void PokeInt(std::vector<uint8_t>& bytes, const flatbuffers::Vector<int32_t>* v, size_t i,
             int32_t x) {
  REQUIRE(v != nullptr);
  REQUIRE(i < v->size());
  std::memcpy(bytes.data() + (reinterpret_cast<const uint8_t*>(v->Data()) - bytes.data()) + 4 * i,
              &x, 4);
}

}  // namespace

TEST_CASE("value indices out of range are refused with their path") {
  const auto golden = GoldenBytes("pte_constants.pte");
  REQUIRE(Validate(golden).ok());
  auto bytes = golden;
  const auto* plan = ProgramOf(bytes)->execution_plan()->Get(0);
  PokeInt(bytes, plan->inputs(), 1, 12345);
  ExpectError(bytes, "execution_plan[0].inputs[1] = 12345 is out of range: execution_plan[0] has " +
                         std::to_string(plan->values()->size()) + " values");

  bytes = golden;
  PokeInt(bytes, ProgramOf(bytes)->execution_plan()->Get(0)->outputs(), 0, -1);
  ExpectError(bytes, "execution_plan[0].outputs[0] = -1 is out of range");

  bytes = golden;
  const auto* call = ProgramOf(bytes)
                         ->execution_plan()
                         ->Get(0)
                         ->chains()
                         ->Get(0)
                         ->instructions()
                         ->Get(0)
                         ->instr_args_as_KernelCall();
  REQUIRE(call != nullptr);
  PokeInt(bytes, call->args(), 1, 999);
  ExpectError(bytes, "execution_plan[0].chains[0].instructions[0].instr_args.args[1] = 999");

  bytes = golden;
  call = ProgramOf(bytes)
             ->execution_plan()
             ->Get(0)
             ->chains()
             ->Get(0)
             ->instructions()
             ->Get(1)  // op_index 1: present (0, the default, is left out)
             ->instr_args_as_KernelCall();
  Poke<int32_t>(bytes, call, fb::KernelCall::VT_OP_INDEX, 7);
  ExpectError(bytes,
              "instructions[1].instr_args.op_index = 7 is out of range: execution_plan[0] "
              "has 2 operators");
}

TEST_CASE("strings that are not UTF-8 are refused with their path") {
  auto bytes = GoldenBytes("pte_constants.pte");
  PokeString(bytes, ProgramOf(bytes)->execution_plan()->Get(0)->name(), 0, 0xFF);
  ExpectError(bytes, "execution_plan[0].name is not valid UTF-8 (bytes ff");

  bytes = GoldenBytes("pte_named_data.pte");
  REQUIRE(Validate(bytes).ok());
  PokeString(bytes, ProgramOf(bytes)->named_data()->Get(0)->key(), 0, 0xC0);
  ExpectError(bytes, "named_data[0].key is not valid UTF-8");

  bytes = GoldenBytes("pte_delegates.pte");
  REQUIRE(Validate(bytes).ok());
  PokeString(bytes, ProgramOf(bytes)->execution_plan()->Get(0)->delegates()->Get(0)->id(), 1, 0xED);
  ExpectError(bytes, "execution_plan[0].delegates[0].id is not valid UTF-8");
}

TEST_CASE("tensor shapes the runtime refuses are refused") {
  const auto golden = GoldenBytes("pte_constants.pte");
  // values[5] is INT [2, 2] with dim_order [1, 0].
  auto bytes = golden;
  const auto* t = ProgramOf(bytes)->execution_plan()->Get(0)->values()->Get(5)->val_as_Tensor();
  REQUIRE(t != nullptr);
  REQUIRE(t->dim_order()->size() == 2);
  bytes[reinterpret_cast<const uint8_t*>(t->dim_order()->Data()) - bytes.data()] = 0;
  ExpectError(bytes, "values[5].dim_order[1] = 0: dim_order must be a permutation of 0..1");

  bytes = golden;
  t = ProgramOf(bytes)->execution_plan()->Get(0)->values()->Get(0)->val_as_Tensor();
  PokeInt(bytes, t->sizes(), 1, -3);
  ExpectError(bytes, "execution_plan[0].values[0].sizes[1] = -3 is negative");

  bytes = golden;
  t = ProgramOf(bytes)->execution_plan()->Get(0)->values()->Get(0)->val_as_Tensor();
  PokeInt(bytes, t->sizes(), 0, INT32_MAX);
  PokeInt(bytes, t->sizes(), 1, INT32_MAX);
  CHECK(Validate(bytes).ok());  // 2^62 * 4 bytes still fits in 64 bits
}
