// .ptd planning and reading, with no files: layouts follow the reference
// rules and every malformed file is refused with a message that names it.
#include <algorithm>
#include <cstring>
#include "catch.h"

#include "etpack/json.h"
#include "etpack/ptd_file.h"
#include "flat_tensor_etpack_generated.h"
#include "flatbuffer/tree_builder.h"
#include "plan/assembler.h"
#include "plan/header_insert.h"
#include "ptd/ptd_header.h"
#include "test_programs.h"

using namespace etpack;
using namespace etpack::testing;
namespace ftb = etpack::ptd_fb;

namespace {

TensorLayout F32(std::vector<int32_t> sizes) {
  TensorLayout l{6, std::move(sizes), {}};
  for (size_t i = 0; i < l.sizes.size(); ++i) l.dim_order.push_back(static_cast<uint8_t>(i));
  return l;
}

// ptd_basic's logical input.
PtdInput Basic() {
  PtdInput in;
  in.buffers = {Pattern(48, 1), Pattern(6, 2), Pattern(48, 3)};
  in.entries = {{"linear.weight", 0, 1, F32({4, 3})},
                {"linear.bias", 1, 64, TensorLayout{5, {3}, {0}}},
                {"conv.weight", 2, 256, TensorLayout{15, {2, 3, 2, 2}, {0, 2, 3, 1}}}};
  return in;
}

std::unique_ptr<PtdFile> ReadBack(std::vector<uint8_t> bytes) {
  return Read<PtdFile>("mem.ptd", std::move(bytes));
}

void ExpectError(const std::vector<uint8_t>& bytes, const std::string& fragment) {
  auto f = TryRead<PtdFile>("bad.ptd", bytes);
  INFO(f.status().ToString());
  REQUIRE_FALSE(f.ok());
  CHECK(f.status().message().rfind("bad.ptd: ", 0) == 0);
  CHECK(f.status().message().find(fragment) != std::string::npos);
}

}  // namespace

TEST_CASE("ptd layout follows the reference rules") {
  auto plan = PlanPtd(Basic());
  REQUIRE(plan.ok());
  const PtdSegmentMap& l = plan->layout;
  REQUIRE(l.segments.size() == 3);
  CHECK(l.segments[0].offset == 0);
  CHECK(l.segments[1].offset == 128);
  CHECK(l.segments[2].offset == 256);
  CHECK(l.segment_data_size == 256 + 48);
  CHECK(l.flatbuffer_offset == 48);
  CHECK(l.segment_base_offset % 128 == 0);
  CHECK(l.segment_base_offset >= 48 + l.flatbuffer_size);
  CHECK(l.segment_base_offset - (48 + l.flatbuffer_size) < 128);
  CHECK(plan->artifact.file_size == l.segment_base_offset + l.segment_data_size);

  auto bytes = Materialize(plan->artifact);
  CHECK(std::memcmp(bytes.data() + 4, "FT01", 4) == 0);
  CHECK(std::memcmp(bytes.data() + 8, "FH01", 4) == 0);
  CHECK(LoadLE32(bytes.data() + 12) == 40);
  auto f = ReadBack(bytes);
  REQUIRE(f->entries().size() == 3);
  CHECK(f->entries()[2].layout == TensorLayout{15, {2, 3, 2, 2}, {0, 2, 3, 1}});
  CHECK(*ReadAll(*f->EntrySource(1)) == *ReadAll(*Basic().buffers[1]));
  CHECK(f->Find("conv.weight") == 2);
  CHECK(f->Find("nope") == -1);
}

TEST_CASE("keys sharing a buffer share a segment; blobs have no layout") {
  PtdInput in;
  in.buffers = {Pattern(16, 1), Pattern(20, 2)};
  in.entries = {
      {"t.a", 0, 16, F32({2, 2})}, {"t.a_alias", 0, 512, F32({4})}, {"blob", 1, 256, std::nullopt}};
  auto plan = PlanPtd(in);
  REQUIRE(plan.ok());
  REQUIRE(plan->layout.segments.size() == 2);
  CHECK(plan->layout.segments[1].offset == 256);
  auto f = ReadBack(Materialize(plan->artifact));
  CHECK(f->entries()[0].segment_index == f->entries()[1].segment_index);
  CHECK_FALSE(f->entries()[2].layout.has_value());
}

TEST_CASE("an empty .ptd is valid") {
  auto plan = PlanPtd(PtdInput{});
  REQUIRE(plan.ok());
  auto f = ReadBack(Materialize(plan->artifact));
  CHECK(f->entries().empty());
  CHECK(f->layout().segment_data_size == 0);
}

TEST_CASE("page alignment for device loaders") {
  PtdInput in = Basic();
  for (auto& e : in.entries) e.alignment = 16384;
  PtdOptions o;
  o.segment_alignment = 16384;
  auto plan = PlanPtd(in, o);
  REQUIRE(plan.ok());
  for (const auto& p : plan->artifact.placements) CHECK(p.offset % 16384 == 0);
}

TEST_CASE("every content is stored once; a key repeated with its bytes is one entry") {
  PtdInput in = Basic();
  in.buffers.push_back(Pattern(48, 1));  // buffer 0's bytes again, another source
  in.entries.push_back({"linear.weight.copy", 3, 1, F32({4, 3})});
  in.entries.push_back(in.entries[0]);  // the same key, bytes and layout again
  auto plan = PlanPtd(in);
  REQUIRE(plan.ok());
  CHECK(plan->layout.segments.size() == 3);
  auto f = ReadBack(Materialize(plan->artifact));
  REQUIRE(f->entries().size() == 4);
  CHECK(f->entries()[3].key == "linear.weight.copy");
  CHECK(f->entries()[3].segment_index == f->entries()[0].segment_index);
}

TEST_CASE("bad .ptd input is refused, naming the entry") {
  auto check = [](PtdInput in, const std::string& fragment) {
    auto plan = PlanPtd(in);
    INFO(fragment);
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.status().message().find(fragment) != std::string::npos);
  };
  PtdInput in = Basic();
  in.entries[1].key = "linear.weight";
  check(in,
        "entries[1] 'linear.weight': key \"linear.weight\" (6 bytes) is already entries[0] "
        "'linear.weight' with different bytes (48 bytes)");
  in = Basic();
  in.entries.push_back(in.entries[0]);
  in.entries.back().layout = F32({3, 4});
  check(in,
        "entries[3] 'linear.weight': repeats entries[0] 'linear.weight' with the same bytes "
        "but tensor_layout FLOAT[3, 4]");
  in = Basic();
  in.entries[2].buffer_index = 7;
  check(in, "buffer_index = 7 is out of range");
  in = Basic();
  in.entries[0].alignment = 0;
  check(in, "alignment = 0 is not a positive alignment");
  in = Basic();
  in.entries[0].alignment = kMaxAlignment * 2;
  check(in, "alignment = 2147483648 exceeds the maximum of 1073741824 (1 GiB)");
  in = Basic();
  CHECK(PlanPtd(in, PtdOptions{kMaxAlignment * 2}).status().message() ==
        "segment_alignment = 2147483648 exceeds the maximum of 1073741824 (1 GiB)");
  in = Basic();
  in.entries[0].layout = F32({4, 4});
  check(in, "needs 64 bytes but its buffer");
  in = Basic();
  in.entries[2].layout->dim_order = {0, 2, 2, 1};
  check(in, "dim_order [0, 2, 2, 1] is not a permutation");
  in = Basic();
  in.entries[0].layout->sizes = {-4, 3};
  check(in, "negative size -4");
  in = Basic();
  in.entries[0].key.clear();
  check(in, "empty key");
  PtdOptions o;
  o.segment_alignment = 0;
  CHECK_FALSE(PlanPtd(Basic(), o).ok());
  o.segment_alignment = 100;  // any positive alignment, as the reference takes it
  CHECK(PlanPtd(Basic(), o).ok());
}

TEST_CASE("malformed .ptd files are refused") {
  const auto good = Materialize(PlanPtd(Basic())->artifact);
  auto b = good;
  b.resize(40);
  ExpectError(b, "needs at least 64");
  b = good;
  b.resize(good.size() - 1);
  ExpectError(b, "truncated");
  b = good;
  std::memcpy(b.data() + 8, "FH02", 4);
  ExpectError(b, "no FH01 header");
  b = good;
  std::memcpy(b.data() + 4, "ET12", 4);
  ExpectError(b, "not 'FT01'");
  b = good;
  StoreLE32(b.data() + 12, 8);
  ExpectError(b, "FH01 header length = 8");
  b = good;
  StoreLE32(b.data() + 12, 0xFFFFFFFF);
  ExpectError(b,
              "FH01 header length = 4294967295 would end the header at byte 4294967303, past "
              "the end of the " +
                  std::to_string(good.size()) + "-byte file");
  b = good;
  StoreLE64(b.data() + 24, uint64_t{1} << 40);  // flatbuffer_size
  ExpectError(b, "does not fit the file");

  // A segment past the data, and a tensor larger than its segment.
  const auto* seg = ftb::GetFlatTensor(good.data())->segments()->Get(2);
  const size_t size_at =
      reinterpret_cast<const flatbuffers::Table*>(seg)->GetAddressOf(ftb::DataSegment::VT_SIZE) -
      good.data();
  b = good;
  StoreLE64(b.data() + size_at, 4096);
  ExpectError(b, "segments[2] = [256, +4096) runs past the segment data");
  b = good;
  StoreLE64(b.data() + size_at, 5);
  ExpectError(b,
              "'conv.weight': tensor BFLOAT16[2, 3, 2, 2] dim_order [0, 2, 3, 1] needs 48 bytes "
              "but segment 2 holds 5");
}

TEST_CASE("flipped bytes never crash the reader") {
  const auto good = Materialize(PlanPtd(Basic())->artifact);
  for (size_t i = 0; i < good.size(); ++i) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
      auto b = good;
      b[i] ^= mask;
      auto owner = std::make_shared<std::vector<uint8_t>>(std::move(b));
      (void)PtdFile::FromMemory("x.ptd", owner->data(), owner->size(), owner);
    }
  }
}

TEST_CASE("the FlatTensor is the one the schema-driven tree builder makes") {
  PtdInput shapes = Basic();
  shapes.buffers.push_back(Pattern(4, 4));
  shapes.entries.push_back({"blob", 0, 16, std::nullopt});              // shares buffer 0
  shapes.entries.push_back({"scalar", 3, 4, TensorLayout{6, {}, {}}});  // rank 0
  for (const PtdInput& in : {Basic(), shapes, PtdInput{}}) {
    auto plan = PlanPtd(in);
    REQUIRE(plan.ok());
    std::vector<json::Value> segments, named;
    for (const auto& s : plan->layout.segments) {
      segments.push_back(json::Value::Object(
          {{"offset", json::Value::UInt(s.offset)}, {"size", json::Value::UInt(s.size)}}));
    }
    const auto read = ReadBack(Materialize(plan->artifact));
    for (const PtdFile::Entry& e : read->entries()) {
      json::Value entry =
          json::Value::Object({{"key", json::Value::String(e.key)},
                               {"segment_index", json::Value::UInt(e.segment_index)}});
      if (e.layout) {
        std::vector<json::Value> sizes, dims;
        for (int32_t x : e.layout->sizes) sizes.push_back(json::Value::Int(x));
        for (uint8_t d : e.layout->dim_order) dims.push_back(json::Value::Int(d));
        entry.Set("tensor_layout",
                  json::Value::Object({{"scalar_type", json::Value::Int(e.layout->scalar_type)},
                                       {"sizes", json::Value::Array(std::move(sizes))},
                                       {"dim_order", json::Value::Array(std::move(dims))}}));
      }
      named.push_back(std::move(entry));
    }
    const json::Value root =
        json::Value::Object({{"version", json::Value::Int(0)},
                             {"segments", json::Value::Array(std::move(segments))},
                             {"named_data", json::Value::Array(std::move(named))}});
    auto tree = BuildFlatbuffer(SchemaId::kFlatTensor, root);
    REQUIRE(tree.ok());
    REQUIRE(InsertAfterIdentifier(*tree, 48).ok());
    const std::vector<uint8_t>& head = plan->artifact.head;
    REQUIRE(head.size() == tree->size());
    CHECK(std::equal(head.begin(), head.begin() + 8, tree->begin()));
    CHECK(std::equal(head.begin() + 56, head.end(), tree->begin() + 56));
  }
}

TEST_CASE("a .ptd over the verifier's table limit is refused by the planner, named by the reader") {
  // 500,000 keys naming one buffer: a root, one segment, and an entry and a
  // layout per key make 1,000,002 tables, two more than the FlatBuffers
  // verifier (max_tables 1,000,000) of every reader accepts.
  PtdInput in;
  in.buffers = {Pattern(4, 1)};
  constexpr size_t kKeys = 500000;
  in.entries.reserve(kKeys);
  for (size_t i = 0; i < kKeys; ++i)
    in.entries.push_back({"k" + std::to_string(i), 0, 1, F32({1})});
  auto plan = PlanPtd(in);
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().code() == Code::kOutOfRange);
  CHECK(plan.status().message() ==
        "500000 entries in 1 segments need 1000002 flatbuffer tables; the runtime's verifier "
        "accepts at most 1000000");
  // One key fewer is at the limit and plans.
  in.entries.pop_back();
  in.entries.pop_back();
  CHECK(PlanPtd(in).ok());

  // A file over the limit (1,000,000 entries, which the planner would
  // refuse, made by hand): the reader names the limit, not "corrupt".
  flatbuffers::FlatBufferBuilder fbb;
  const auto key = fbb.CreateString("k");
  std::vector<flatbuffers::Offset<ftb::NamedData>> named;
  for (size_t i = 0; i < 1000000; ++i) named.push_back(ftb::CreateNamedData(fbb, key, 0));
  const auto named_vec = fbb.CreateVector(named);
  std::vector<flatbuffers::Offset<ftb::DataSegment>> segs = {
      ftb::CreateDataSegment(fbb, uint64_t{0}, uint64_t{0})};
  const auto segs_vec = fbb.CreateVector(segs);
  ftb::FinishFlatTensorBuffer(fbb, ftb::CreateFlatTensor(fbb, 0, segs_vec, named_vec));
  std::vector<uint8_t> fb(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  auto a = Assemble(std::move(fb), &ptd::kHeaderCodec, 16, {}, SegmentOffsets{});
  REQUIRE(a.ok());
  ExpectError(Materialize(a->artifact),
              "the FlatTensor flatbuffer (bytes [0, " +
                  std::to_string(a->head.header_size + a->head.flatbuffer_size) +
                  ")) has 1000002 tables; the verifier of the runtime and of etpack's readers "
                  "accepts at most 1000000");
}
