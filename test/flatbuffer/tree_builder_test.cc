// Tree -> flatbuffer: accepted forms, errors that name the path and vector
// alignment.
#include "catch.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "etpack/source.h"
#include "flatbuffer_fixtures.h"

namespace etpack {
namespace {

using namespace etpack::testing;

TEST_CASE("enums and unions by name or by number") {
  json::Value a = SmallProgram();
  Value1(a).Set("scalar_type", json::Value::String("FLOAT"));
  Value1(a).Set("shape_dynamism", json::Value::String("DYNAMIC_BOUND"));
  Plan0(a).Find("values")->items()[1].Set("val_type", json::Value::Int(5));  // Tensor
  std::vector<uint8_t> buf = MustBuild(a);
  const efb::Tensor* t =
      efb::GetProgram(buf.data())->execution_plan()->Get(0)->values()->Get(1)->val_as_Tensor();
  REQUIRE(t != nullptr);
  CHECK(t->scalar_type() == efb::ScalarType::FLOAT);
  CHECK(t->shape_dynamism() == efb::TensorShapeDynamism::DYNAMIC_BOUND);
  CHECK(t->sizes()->Get(1) == 3);
  CHECK(t->dim_order()->size() == 2);

  // An enum value the schema does not name is accepted (reserved codes).
  json::Value b = SmallProgram();
  Value1(b).Set("scalar_type", json::Value::Int(9));
  buf = MustBuild(b);
  CHECK(static_cast<int>(efb::GetProgram(buf.data())
                             ->execution_plan()
                             ->Get(0)
                             ->values()
                             ->Get(1)
                             ->val_as_Tensor()
                             ->scalar_type()) == 9);
}

TEST_CASE("build errors name the path and the value") {
  SECTION("unknown member") {
    json::Value p = SmallProgram();
    Plan0(p).Set("valuez", json::Value::Array());
    std::string m = BuildError(p);
    CHECK_THAT(m, catch_text::Contains("execution_plan[0].valuez"));
    CHECK_THAT(m, catch_text::Contains("unknown member of table ExecutionPlan"));
  }
  SECTION("unknown top-level member") {
    json::Value p = SmallProgram();
    p.Set("bogus", json::Value::Int(1));
    CHECK_THAT(BuildError(p), catch_text::StartsWith("bogus: unknown member of table Program"));
  }
  SECTION("wrong type") {
    json::Value p = SmallProgram();
    Plan0(p).Set("name", json::Value::Int(5));
    CHECK_THAT(BuildError(p), catch_text::StartsWith("execution_plan[0].name: expected a string"));
    json::Value q = SmallProgram();
    Value1(q).Set("sizes", json::Value::Object());
    CHECK_THAT(BuildError(q),
               catch_text::StartsWith("execution_plan[0].values[1].val.sizes: expected an array"));
    json::Value r = SmallProgram();
    Value1(r).Set("requires_grad", json::Value::String("yes"));
    CHECK_THAT(BuildError(r),
               catch_text::StartsWith(
                   "execution_plan[0].values[1].val.requires_grad: expected a boolean"));
    json::Value s = SmallProgram();
    s.Set("execution_plan", json::Value::Array({json::Value::Int(1)}));
    CHECK_THAT(BuildError(s), catch_text::StartsWith(
                                  "execution_plan[0]: expected an object (table ExecutionPlan)"));
  }
  SECTION("integer out of range") {
    json::Value p = SmallProgram();
    Value1(p).Find("sizes")->items()[1] = json::Value::Int(int64_t{1} << 31);
    CHECK(BuildError(p) ==
          "execution_plan[0].values[1].val.sizes[1]: 2147483648 out of range for int "
          "(-2147483648..2147483647)");
    json::Value q = SmallProgram();
    Value1(q).Find("allocation_info")->Set("memory_id", json::Value::Int(-3));
    CHECK_THAT(BuildError(q), catch_text::StartsWith(
                                  "execution_plan[0].values[1].val.allocation_info.memory_id: -3 "
                                  "out of range for uint"));
    json::Value r = SmallProgram();
    Value1(r).Find("dim_order")->items()[0] = json::Value::Int(256);
    CHECK_THAT(BuildError(r),
               catch_text::StartsWith("execution_plan[0].values[1].val.dim_order[0]: "
                                      "256 out of range for ubyte"));
    json::Value s = SmallProgram();
    Value1(s).Set("scalar_type", json::Value::Int(128));
    CHECK_THAT(BuildError(s), catch_text::StartsWith(
                                  "execution_plan[0].values[1].val.scalar_type: 128 out of range "
                                  "for ScalarType (byte)"));
    json::Value t = SmallProgram();
    Plan0(t).Find("non_const_buffer_sizes")->items()[1] = json::Value::UInt(UINT64_MAX);
    CHECK_THAT(BuildError(t), catch_text::StartsWith("execution_plan[0].non_const_buffer_sizes[1]: "
                                                     "18446744073709551615 out of range for long"));
  }
  SECTION("bad enum name") {
    json::Value p = SmallProgram();
    Value1(p).Set("scalar_type", json::Value::String("FLOATY"));
    CHECK(BuildError(p) ==
          "execution_plan[0].values[1].val.scalar_type: \"FLOATY\" is not a value of enum "
          "ScalarType");
  }
  SECTION("bad union type") {
    json::Value p = SmallProgram();
    Plan0(p).Find("values")->items()[1].Set("val_type", json::Value::String("Tensorx"));
    CHECK(BuildError(p) ==
          "execution_plan[0].values[1].val_type: \"Tensorx\" is not a member of union "
          "KernelTypes");
    json::Value q = SmallProgram();
    Plan0(q).Find("values")->items()[1].Set("val_type", json::Value::Int(99));
    CHECK_THAT(BuildError(q), catch_text::StartsWith("execution_plan[0].values[1].val_type: 99"));
    json::Value r = SmallProgram();
    Plan0(r).Find("values")->items()[1].Set("val_type", json::Value::Null());
    CHECK_THAT(BuildError(r), catch_text::StartsWith("execution_plan[0].values[1].val: union value "
                                                     "without a member type"));
    json::Value s = SmallProgram();
    Plan0(s).Find("values")->items()[1].Set("val", json::Value::Null());
    CHECK_THAT(BuildError(s), catch_text::StartsWith("execution_plan[0].values[1].val: missing"));
    // The member table is checked against the named type.
    json::Value t = SmallProgram();
    Plan0(t).Find("values")->items()[1].Set("val_type", json::Value::String("Int"));
    CHECK_THAT(BuildError(t),
               catch_text::StartsWith("execution_plan[0].values[1].val.scalar_type: unknown member "
                                      "of table Int"));
  }
  SECTION("bad double") {
    json::Value p = SmallProgram();
    Plan0(p).Find("values")->items()[0] =
        ParseJson(R"({"val_type": "Double", "val": {"double_val": "infinity"}})");
    CHECK_THAT(BuildError(p), catch_text::StartsWith("execution_plan[0].values[0].val.double_val: "
                                                     "expected a number"));
  }
  SECTION("bad vector_alignment option") {
    BuildOptions o;
    o.vector_alignment = {{"Buffer.storage", 48}};
    CHECK_THAT(BuildError(SmallProgram(), o), catch_text::Contains("Buffer.storage = 48"));
    o.vector_alignment = {{"Buffer.nothing", 16}};
    CHECK_THAT(BuildError(SmallProgram(), o), catch_text::Contains("Buffer.nothing"));
  }
}

TEST_CASE("doubles accept inf, -inf and nan") {
  json::Value p = SmallProgram();
  std::vector<json::Value>& values = Plan0(p).Find("values")->items();
  values.push_back(ParseJson(R"({"val_type": "Double", "val": {"double_val": "inf"}})"));
  values.push_back(ParseJson(R"({"val_type": "Double", "val": {"double_val": "-inf"}})"));
  values.push_back(ParseJson(R"({"val_type": "Double", "val": {"double_val": "nan"}})"));
  values.push_back(ParseJson(R"({"val_type": "DoubleList", "val": {"items": [1, "-inf", 2.5]}})"));
  std::vector<uint8_t> buf = MustBuild(p);
  const auto* v = efb::GetProgram(buf.data())->execution_plan()->Get(0)->values();
  CHECK(v->Get(2)->val_as_Double()->double_val() == std::numeric_limits<double>::infinity());
  CHECK(v->Get(3)->val_as_Double()->double_val() == -std::numeric_limits<double>::infinity());
  CHECK(std::isnan(v->Get(4)->val_as_Double()->double_val()));
  CHECK(v->Get(5)->val_as_DoubleList()->items()->Get(1) ==
        -std::numeric_limits<double>::infinity());
  CHECK(v->Get(5)->val_as_DoubleList()->items()->Get(0) == 1.0);

  // And the golden case with ±inf doubles survives tree -> flatbuffer.
  std::vector<uint8_t> all_kinds = ReadBytes(GoldenDir() + "/pte_all_kinds.pte");
  std::vector<uint8_t> rebuilt = MustBuild(Tree(all_kinds));
  std::string text = FlatcJson(rebuilt);
  CHECK_THAT(text, catch_text::Contains("\"double_val\": inf\n"));
  CHECK_THAT(text, catch_text::Contains("\"double_val\": -inf\n"));
  CHECK(text == ReadText(GoldenDir() + "/pte_all_kinds.flatc.json"));
}

inline uint64_t DataOffset(const std::vector<uint8_t>& buf, const uint8_t* p) {
  return static_cast<uint64_t>(p - buf.data());
}

TEST_CASE("vector alignment: options override the schema's force_align") {
  std::vector<uint8_t> bytes(10);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i + 1);
  json::Value p = SmallProgram();
  p.Set("constant_buffer", ParseJson(R"([{"storage": []}, {"storage": [200, 1, 2]},
                                         {"storage": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]},
                                         {"storage": [7]}])"));
  p.Set("backend_delegate_data", ParseJson(R"([{"data": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}])"));
  auto options = [&](uint64_t storage, uint64_t delegate_data) {
    return Alignments(storage, delegate_data);
  };

  for (uint64_t align : {uint64_t{64}, uint64_t{16}, uint64_t{4096}}) {
    INFO(align);
    std::vector<uint8_t> buf = MustBuild(p, options(align, 32));
    CHECK(buf.size() % align == 0);
    const efb::Program* prog = efb::GetProgram(buf.data());
    const auto* cb = prog->constant_buffer();
    REQUIRE(cb->size() == 4);
    CHECK(cb->Get(1)->storage()->Get(0) == 200);
    for (uint32_t i = 1; i < 4; ++i) {
      CHECK(DataOffset(buf, cb->Get(i)->storage()->data()) % align == 0);
    }
    const auto* blob = cb->Get(2)->storage();
    CHECK(std::equal(blob->begin(), blob->end(), bytes.begin()));
    CHECK(cb->Get(3)->storage()->Get(0) == 7);
    CHECK(DataOffset(buf, prog->backend_delegate_data()->Get(0)->data()->data()) % 32 == 0);
  }

  // Without options the schema's force_align (16) applies; over many
  // builds with different preceding sizes at least one would misalign by
  // chance if it were ignored.
  for (int pad = 0; pad < 16; ++pad) {
    Plan0(p).Set("name", json::Value::String(std::string(static_cast<size_t>(pad), 'x')));
    std::vector<uint8_t> buf = MustBuild(p);
    const efb::Program* prog = efb::GetProgram(buf.data());
    CHECK(DataOffset(buf, prog->constant_buffer()->Get(2)->storage()->data()) % 16 == 0);
    CHECK(DataOffset(buf, prog->backend_delegate_data()->Get(0)->data()->data()) % 16 == 0);
  }
}

TEST_CASE("a program with 100k tensor values builds (timing reported)") {
  constexpr int kValues = 100000;
  json::Value p = SmallProgram();
  std::vector<json::Value> values;
  values.reserve(kValues);
  for (int i = 0; i < kValues; ++i) {
    json::Value t = json::Value::Object({
        {"scalar_type", json::Value::Int(6)},
        {"storage_offset", json::Value::Int(0)},
        {"sizes", json::Value::Array({json::Value::Int(i % 7 + 1), json::Value::Int(64)})},
        {"dim_order", json::Value::Array({json::Value::Int(0), json::Value::Int(1)})},
        {"requires_grad", json::Value::Bool(false)},
        {"data_buffer_idx", json::Value::Int(i)},
        {"allocation_info", json::Value::Null()},
        {"layout", json::Value::Int(0)},
        {"shape_dynamism", json::Value::Int(0)},
        {"extra_tensor_info", json::Value::Null()},
    });
    values.push_back(
        json::Value::Object({{"val_type", json::Value::String("Tensor")}, {"val", std::move(t)}}));
  }
  Plan0(p).Set("values", json::Value::Array(std::move(values)));

  const auto start = std::chrono::steady_clock::now();
  Result<std::vector<uint8_t>> buf = BuildFlatbuffer(SchemaId::kProgram, p);
  const auto end = std::chrono::steady_clock::now();
  REQUIRE(buf.ok());
  std::printf("BuildFlatbuffer, %d Tensor values: %.1f ms, %zu bytes\n", kValues,
              std::chrono::duration<double, std::milli>(end - start).count(), buf->size());
  REQUIRE(VerifyProgram(*buf));
  const auto* v = efb::GetProgram(buf->data())->execution_plan()->Get(0)->values();
  REQUIRE(v->size() == kValues);
  CHECK(v->Get(kValues - 1)->val_as_Tensor()->data_buffer_idx() == kValues - 1);
  CHECK(v->Get(kValues - 1)->val_as_Tensor()->sizes()->Get(0) == (kValues - 1) % 7 + 1);
}

}  // namespace
}  // namespace etpack
