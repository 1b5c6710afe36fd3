#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "etpack/json.h"
#include "test_files.h"
#include "etpack/source.h"
#include "flatbuffer/flatbuffer_tree.h"
#include "program_etpack_generated.h"

#include <flatbuffers/reflection_generated.h>

namespace etpack {
namespace {

using etpack::testing::GoldenDir;

namespace fs = std::filesystem;
namespace efb = etpack::pte_fb;

std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  INFO(path);
  REQUIRE(in.good());
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::string ReadText(const std::string& path) {
  std::vector<uint8_t> b = ReadBytes(path);
  return std::string(b.begin(), b.end());
}

// golden/pte_*.pte and golden/upstream/*.pte, sorted.
std::vector<std::string> GoldenPtes() {
  std::vector<std::string> out;
  for (const std::string& dir : {GoldenDir(), GoldenDir() + "/upstream"}) {
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string name = e.path().filename().string();
      if (e.path().extension() != ".pte") continue;
      if (dir == GoldenDir() && name.rfind("pte_", 0) != 0) continue;
      out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  REQUIRE(out.size() >= 16);
  return out;
}

bool VerifyProgram(const std::vector<uint8_t>& buf) {
  flatbuffers::Verifier v(buf.data(), buf.size());
  return efb::VerifyProgramBuffer(v);
}

json::Value Tree(const std::vector<uint8_t>& buf) {
  auto keep = std::make_shared<std::vector<uint8_t>>(buf);
  Result<json::Value> t = FlatbufferToTree(SchemaId::kProgram, keep->data(), keep->size(), keep);
  INFO(t.status().ToString());
  REQUIRE(t.ok());
  return std::move(t).value();
}

std::string FlatcJson(const std::vector<uint8_t>& buf) {
  Result<std::string> j = FlatbufferToFlatcJson(SchemaId::kProgram, buf.data(), buf.size());
  INFO(j.status().ToString());
  REQUIRE(j.ok());
  return std::move(j).value();
}

json::Value ParseJson(const std::string& text) {
  Result<json::Value> v = json::Parse(text);
  INFO(v.status().ToString());
  REQUIRE(v.ok());
  return std::move(v).value();
}

TreeBuildOptions Alignments(uint64_t storage, uint64_t delegate_data) {
  TreeBuildOptions o;
  o.vector_alignment = {{"Buffer.storage", storage},
                        {"BackendDelegateInlineData.data", delegate_data}};
  return o;
}

std::vector<uint8_t> MustBuild(const json::Value& tree, const TreeBuildOptions& options = {}) {
  Result<std::vector<uint8_t>> b = BuildFlatbuffer(SchemaId::kProgram, tree, options);
  INFO(b.status().ToString());
  REQUIRE(b.ok());
  REQUIRE(VerifyProgram(*b));
  return std::move(b).value();
}

std::string BuildError(const json::Value& tree, const TreeBuildOptions& options = {}) {
  Result<std::vector<uint8_t>> b = BuildFlatbuffer(SchemaId::kProgram, tree, options);
  REQUIRE_FALSE(b.ok());
  return b.status().message();
}

// A small program: one Int value and one Tensor value, in input form.
const char* const kSmallProgram = R"({
  "version": 0,
  "execution_plan": [{
    "name": "forward",
    "values": [
      {"val_type": "Int", "val": {"int_val": 7}},
      {"val": {"scalar_type": 6, "storage_offset": 0, "sizes": [2, 3],
               "dim_order": [0, 1], "requires_grad": false,
               "data_buffer_idx": 1,
               "allocation_info": {"memory_id": 1, "memory_offset_low": 0,
                                   "memory_offset_high": 0},
               "layout": 0, "shape_dynamism": 0, "extra_tensor_info": null},
       "val_type": "Tensor"}
    ],
    "inputs": [1], "outputs": [1],
    "chains": [{"inputs": [1], "outputs": [1], "instructions": [
      {"instr_args_type": "KernelCall", "instr_args": {"op_index": 0, "args": [1, 1]}}]}],
    "operators": [{"name": "aten::relu", "overload": ""}],
    "delegates": [],
    "non_const_buffer_sizes": [0, 24]
  }],
  "constant_buffer": [{"storage": []}],
  "segments": [],
  "constant_segment": {"segment_index": 0, "offsets": []}
})";

json::Value SmallProgram() { return ParseJson(kSmallProgram); }

json::Value& Plan0(json::Value& program) { return program.Find("execution_plan")->items()[0]; }
json::Value& Value1(json::Value& program) {
  return *Plan0(program).Find("values")->items()[1].Find("val");
}

TEST_CASE("GetSchema is the embedded program schema") {
  const reflection::Schema& s = GetSchema(SchemaId::kProgram);
  REQUIRE(s.root_table() != nullptr);
  CHECK(s.root_table()->name()->str() == "etpack.pte_fb.Program");
  CHECK(s.file_ident()->str() == "ET12");
}

TEST_CASE("FlatbufferToFlatcJson matches the golden flatc renderings") {
  int compared = 0;
  for (const std::string& path : GoldenPtes()) {
    const std::string flatc = path.substr(0, path.size() - 4) + ".flatc.json";
    if (!fs::exists(flatc)) continue;
    INFO(path);
    std::vector<uint8_t> bytes = ReadBytes(path);
    CHECK(FlatcJson(bytes) == ReadText(flatc));
    ++compared;
  }
  CHECK(compared == 11);
}

TEST_CASE("tree round trip preserves the flatc rendering of every golden pte") {
  for (const std::string& path : GoldenPtes()) {
    INFO(path);
    std::vector<uint8_t> original = ReadBytes(path);
    REQUIRE(VerifyProgram(original));
    json::Value tree = Tree(original);
    std::vector<uint8_t> rebuilt = MustBuild(tree, Alignments(16, 16));
    CHECK(std::string(reinterpret_cast<const char*>(rebuilt.data()) + 4, 4) == "ET12");
    CHECK(FlatcJson(rebuilt) == FlatcJson(original));
    // Trees carry every scalar (defaults included), so the rebuilt tree
    // prints the same apart from blob descriptions (offsets differ).
    json::Value again = Tree(rebuilt);
    CHECK(again.Find("execution_plan")->items().size() ==
          tree.Find("execution_plan")->items().size());
  }
}

TEST_CASE("tree form: enums as integers, unions by name, exact 64-bit ints, blobs") {
  std::vector<uint8_t> bytes = ReadBytes(GoldenDir() + "/pte_all_kinds.pte");
  json::Value tree = Tree(bytes);
  const json::Value& plan = tree.Find("execution_plan")->items()[0];
  const std::vector<json::Value>& values = plan.Find("values")->items();
  REQUIRE(values.size() > 8);
  CHECK(values[0].Find("val_type")->as_string() == "Null");
  CHECK(values[2].Find("val")->Find("int_val")->as_int() == INT64_MAX);
  CHECK(values[3].Find("val")->Find("int_val")->as_int() == INT64_MIN);
  CHECK(std::isinf(values[6].Find("val")->Find("double_val")->as_double()));
  CHECK(values[6].Find("val")->Find("double_val")->as_double() > 0);
  CHECK(values[7].Find("val")->Find("double_val")->as_double() < 0);

  bool saw_tensor = false;
  for (const json::Value& v : values) {
    if (v.Find("val_type")->as_string() != "Tensor") continue;
    const json::Value& t = *v.Find("val");
    CHECK(t.Find("scalar_type")->kind() == json::Kind::kInt);
    CHECK(t.Find("shape_dynamism")->kind() == json::Kind::kInt);
    CHECK(t.Find("dim_order")->kind() == json::Kind::kArray);
    saw_tensor = true;
  }
  CHECK(saw_tensor);

  // Default scalars are present even though the writer omitted them.
  CHECK(tree.Find("version") != nullptr);
}

TEST_CASE("blobs in the tree borrow the buffer and keep it alive") {
  std::vector<uint8_t> file = ReadBytes(GoldenDir() + "/pte_delegates_inline.pte");
  auto keep = std::make_shared<std::vector<uint8_t>>(file);
  Result<json::Value> tree = FlatbufferToTree(SchemaId::kProgram, keep->data(), keep->size(), keep);
  REQUIRE(tree.ok());
  const uint8_t* base = keep->data();
  keep.reset();  // the tree's blobs hold the only reference now

  const std::vector<json::Value>& data = tree->Find("backend_delegate_data")->items();
  REQUIRE(data.size() >= 2);
  const json::Value& blob = *data[0].Find("data");
  REQUIRE(blob.kind() == json::Kind::kBlob);
  CHECK(blob.blob()->size() == 300);
  REQUIRE(blob.blob()->contiguous() != nullptr);
  const uint64_t offset = static_cast<uint64_t>(blob.blob()->contiguous() - base);
  CHECK(offset % 32 == 0);  // written with delegate_alignment=32
  Result<std::vector<uint8_t>> bytes = ReadAll(*blob.blob());
  REQUIRE(bytes.ok());
  CHECK(std::equal(bytes->begin(), bytes->end(), file.begin() + static_cast<long>(offset)));
}

TEST_CASE("absent and present-empty vectors stay distinct") {
  // Golden: delegate #1 has compile_specs [], the program has no
  // mutable_data_segments.
  std::vector<uint8_t> original = ReadBytes(GoldenDir() + "/pte_delegates.pte");
  json::Value tree = Tree(original);
  const json::Value& plan = tree.Find("execution_plan")->items()[0];
  const json::Value& specs = *plan.Find("delegates")->items()[1].Find("compile_specs");
  CHECK(specs.kind() == json::Kind::kArray);
  CHECK(specs.items().empty());
  CHECK(tree.Find("mutable_data_segments") == nullptr);

  std::vector<uint8_t> rebuilt = MustBuild(tree);
  const efb::Program* p = efb::GetProgram(rebuilt.data());
  const auto* d1 = p->execution_plan()->Get(0)->delegates()->Get(1);
  REQUIRE(d1->compile_specs() != nullptr);
  CHECK(d1->compile_specs()->size() == 0);
  CHECK(p->mutable_data_segments() == nullptr);

  // Synthetic: [] present, null and missing absent.
  json::Value small = SmallProgram();
  Plan0(small).Set("non_const_buffer_device", json::Value::Null());
  std::vector<uint8_t> built = MustBuild(small);
  const efb::Program* q = efb::GetProgram(built.data());
  REQUIRE(q->execution_plan()->Get(0)->delegates() != nullptr);
  CHECK(q->execution_plan()->Get(0)->delegates()->size() == 0);
  CHECK(q->segments() != nullptr);
  CHECK(q->execution_plan()->Get(0)->non_const_buffer_device() == nullptr);
  CHECK(q->named_data() == nullptr);
  const auto* cb = q->constant_buffer();
  REQUIRE(cb != nullptr);
  REQUIRE(cb->Get(0)->storage() != nullptr);
  CHECK(cb->Get(0)->storage()->size() == 0);
  CHECK(q->execution_plan()->Get(0)->values()->Get(1)->val_as_Tensor()->extra_tensor_info() ==
        nullptr);
}

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
                             ->execution_plan()->Get(0)->values()->Get(1)->val_as_Tensor()
                             ->scalar_type()) == 9);
}

TEST_CASE("build errors name the path and the value") {
  SECTION("unknown member") {
    json::Value p = SmallProgram();
    Plan0(p).Set("valuez", json::Value::Array());
    std::string m = BuildError(p);
    CHECK_THAT(m, Catch::Contains("execution_plan[0].valuez"));
    CHECK_THAT(m, Catch::Contains("unknown member of table ExecutionPlan"));
  }
  SECTION("unknown top-level member") {
    json::Value p = SmallProgram();
    p.Set("bogus", json::Value::Int(1));
    CHECK_THAT(BuildError(p), Catch::StartsWith("bogus: unknown member of table Program"));
  }
  SECTION("wrong type") {
    json::Value p = SmallProgram();
    Plan0(p).Set("name", json::Value::Int(5));
    CHECK_THAT(BuildError(p), Catch::StartsWith("execution_plan[0].name: expected a string"));
    json::Value q = SmallProgram();
    Value1(q).Set("sizes", json::Value::Object());
    CHECK_THAT(BuildError(q),
               Catch::StartsWith("execution_plan[0].values[1].val.sizes: expected an array"));
    json::Value r = SmallProgram();
    Value1(r).Set("requires_grad", json::Value::String("yes"));
    CHECK_THAT(BuildError(r),
               Catch::StartsWith("execution_plan[0].values[1].val.requires_grad: expected a boolean"));
    json::Value s = SmallProgram();
    s.Set("execution_plan", json::Value::Array({json::Value::Int(1)}));
    CHECK_THAT(BuildError(s),
               Catch::StartsWith("execution_plan[0]: expected an object (table ExecutionPlan)"));
  }
  SECTION("integer out of range") {
    json::Value p = SmallProgram();
    Value1(p).Find("sizes")->items()[1] = json::Value::Int(int64_t{1} << 31);
    CHECK(BuildError(p) ==
          "execution_plan[0].values[1].val.sizes[1]: 2147483648 out of range for int "
          "(-2147483648..2147483647)");
    json::Value q = SmallProgram();
    Value1(q).Find("allocation_info")->Set("memory_id", json::Value::Int(-3));
    CHECK_THAT(BuildError(q),
               Catch::StartsWith("execution_plan[0].values[1].val.allocation_info.memory_id: -3 "
                                 "out of range for uint"));
    json::Value r = SmallProgram();
    Value1(r).Find("dim_order")->items()[0] = json::Value::Int(256);
    CHECK_THAT(BuildError(r), Catch::StartsWith("execution_plan[0].values[1].val.dim_order[0]: "
                                                "256 out of range for ubyte"));
    json::Value s = SmallProgram();
    Value1(s).Set("scalar_type", json::Value::Int(128));
    CHECK_THAT(BuildError(s),
               Catch::StartsWith("execution_plan[0].values[1].val.scalar_type: 128 out of range "
                                 "for ScalarType (byte)"));
    json::Value t = SmallProgram();
    Plan0(t).Find("non_const_buffer_sizes")->items()[1] = json::Value::UInt(UINT64_MAX);
    CHECK_THAT(BuildError(t), Catch::StartsWith("execution_plan[0].non_const_buffer_sizes[1]: "
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
    CHECK_THAT(BuildError(q), Catch::StartsWith("execution_plan[0].values[1].val_type: 99"));
    json::Value r = SmallProgram();
    Plan0(r).Find("values")->items()[1].Set("val_type", json::Value::Null());
    CHECK_THAT(BuildError(r), Catch::StartsWith("execution_plan[0].values[1].val: union value "
                                                "without a member type"));
    json::Value s = SmallProgram();
    Plan0(s).Find("values")->items()[1].Set("val", json::Value::Null());
    CHECK_THAT(BuildError(s), Catch::StartsWith("execution_plan[0].values[1].val: missing"));
    // The member table is checked against the named type.
    json::Value t = SmallProgram();
    Plan0(t).Find("values")->items()[1].Set("val_type", json::Value::String("Int"));
    CHECK_THAT(BuildError(t),
               Catch::StartsWith("execution_plan[0].values[1].val.scalar_type: unknown member "
                                 "of table Int"));
  }
  SECTION("bad double") {
    json::Value p = SmallProgram();
    Plan0(p).Find("values")->items()[0] =
        ParseJson(R"({"val_type": "Double", "val": {"double_val": "infinity"}})");
    CHECK_THAT(BuildError(p), Catch::StartsWith("execution_plan[0].values[0].val.double_val: "
                                                "expected a number"));
  }
  SECTION("bad vector_alignment option") {
    TreeBuildOptions o;
    o.vector_alignment = {{"Buffer.storage", 48}};
    CHECK_THAT(BuildError(SmallProgram(), o), Catch::Contains("Buffer.storage = 48"));
    o.vector_alignment = {{"Buffer.nothing", 16}};
    CHECK_THAT(BuildError(SmallProgram(), o), Catch::Contains("Buffer.nothing"));
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
  CHECK_THAT(text, Catch::Contains("\"double_val\": inf\n"));
  CHECK_THAT(text, Catch::Contains("\"double_val\": -inf\n"));
  CHECK(text == ReadText(GoldenDir() + "/pte_all_kinds.flatc.json"));
}

uint64_t DataOffset(const std::vector<uint8_t>& buf, const uint8_t* p) {
  return static_cast<uint64_t>(p - buf.data());
}

TEST_CASE("vector alignment: options override the schema's force_align") {
  std::vector<uint8_t> bytes(10);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i + 1);
  json::Value p = SmallProgram();
  p.Set("constant_buffer",
        json::Value::Array({ParseJson(R"({"storage": []})"),
                            ParseJson(R"({"storage": [200, 1, 2]})"),
                            json::Value::Object({{"storage", json::Value::Blob(OwnedSource(bytes))}}),
                            json::Value::Object({{"storage", json::Value::Blob(OwnedSource({7}))}})}));
  p.Set("backend_delegate_data",
        json::Value::Array({json::Value::Object({{"data", json::Value::Blob(OwnedSource(bytes))}})}));

  for (uint64_t align : {uint64_t{64}, uint64_t{16}, uint64_t{4096}}) {
    INFO(align);
    std::vector<uint8_t> buf = MustBuild(p, Alignments(align, 32));
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

TEST_CASE("overrides replace, add and remove fields; the tree is untouched") {
  json::Value p = SmallProgram();
  const json::Value before = p;
  const json::Value seven = json::Value::Int(7), nine = json::Value::Int(9);
  const json::Value renamed = json::Value::String("renamed"), absent;
  const json::Value named = ParseJson(R"([{"key": "k", "segment_index": 0}])");
  TreeBuildOptions o;
  o.overrides = {{&p, "version", &seven},
                 {&Plan0(p), "name", &renamed},
                 {&p, "constant_buffer", &absent},  // present in the tree: removed
                 {&p, "named_data", &named},        // absent from the tree: added
                 {&p, "version", &nine}};           // the later override wins
  std::vector<uint8_t> buf = MustBuild(p, o);
  const efb::Program* prog = efb::GetProgram(buf.data());
  CHECK(prog->version() == 9);
  CHECK(prog->execution_plan()->Get(0)->name()->str() == "renamed");
  CHECK(prog->constant_buffer() == nullptr);
  REQUIRE(prog->named_data() != nullptr);
  CHECK(prog->named_data()->Get(0)->key()->str() == "k");
  CHECK(prog->segments() != nullptr);  // not overridden: as in the tree
  CHECK(p == before);

  o.overrides = {{&Plan0(p), "no_such_field", &seven}};
  const std::string err = BuildError(p, o);
  CHECK_THAT(err, Catch::Contains("execution_plan[0].no_such_field") &&
                      Catch::Contains("ExecutionPlan"));
}

TEST_CASE("blobs come from any source; 2 GiB is refused before building") {
  json::Value p = SmallProgram();
  auto gen = GeneratorSource("gen", 1000, [](uint64_t offset, uint8_t* dst, size_t n) {
    for (size_t i = 0; i < n; ++i) dst[i] = static_cast<uint8_t>((offset + i) * 7);
    return Status::OK();
  });
  p.Set("constant_buffer",
        json::Value::Array({json::Value::Object({{"storage", json::Value::Blob(gen)}})}));
  std::vector<uint8_t> buf = MustBuild(p);
  const auto* storage = efb::GetProgram(buf.data())->constant_buffer()->Get(0)->storage();
  REQUIRE(storage->size() == 1000);
  CHECK(storage->Get(999) == static_cast<uint8_t>(999 * 7));

  auto failing = GeneratorSource("broken", 10, [](uint64_t, uint8_t*, size_t) {
    return IoError("broken read", 5);
  });
  p.Set("constant_buffer",
        json::Value::Array({json::Value::Object({{"storage", json::Value::Blob(failing)}})}));
  CHECK_THAT(BuildError(p), Catch::StartsWith("constant_buffer[0].storage: "));

  auto huge = GeneratorSource("huge", uint64_t{1} << 31, [](uint64_t, uint8_t*, size_t) {
    FAIL("must not be read");
    return Status::OK();
  });
  p.Set("constant_buffer",
        json::Value::Array({json::Value::Object({{"storage", json::Value::Blob(huge)}})}));
  Result<std::vector<uint8_t>> r = BuildFlatbuffer(SchemaId::kProgram, p);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kOutOfRange);
  CHECK_THAT(r.status().message(), Catch::StartsWith("constant_buffer[0].storage: "));
  CHECK_THAT(r.status().message(), Catch::Contains("2 GiB"));
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
    values.push_back(json::Value::Object(
        {{"val_type", json::Value::String("Tensor")}, {"val", std::move(t)}}));
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
