// Flatbuffer -> tree and flatc-style rendering, checked against the golden
// files and the tree builder.
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
    // Trees carry every scalar (defaults included) and every byte, so the
    // rebuilt tree is the same tree.
    CHECK(Tree(rebuilt) == tree);
  }
}

TEST_CASE("tree form: enums as integers, unions by name, exact 64-bit ints") {
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

TEST_CASE("[ubyte] vectors read as byte arrays; omitted fields as absent") {
  std::vector<uint8_t> file = ReadBytes(GoldenDir() + "/pte_delegates_inline.pte");
  json::Value tree = Tree(file);
  const std::vector<json::Value>& data = tree.Find("backend_delegate_data")->items();
  REQUIRE(data.size() >= 2);
  const json::Value& bytes = *data[0].Find("data");
  REQUIRE(bytes.kind() == json::Kind::kArray);
  CHECK(bytes.items().size() == 300);
  const auto* fb_data = efb::GetProgram(file.data())->backend_delegate_data()->Get(0)->data();
  CHECK(bytes.items()[299].as_int() == fb_data->Get(299));

  TreeReadOptions o;
  o.omit = {"BackendDelegateInlineData.data", "Buffer.storage"};
  Result<json::Value> lean = FlatbufferToTree(SchemaId::kProgram, file.data(), file.size(), o);
  REQUIRE(lean.ok());
  const std::vector<json::Value>& entries = lean->Find("backend_delegate_data")->items();
  REQUIRE(entries.size() == data.size());
  CHECK(entries[0].Find("data") == nullptr);

  o.omit = {"Buffer.nothing"};
  Result<json::Value> bad = FlatbufferToTree(SchemaId::kProgram, file.data(), file.size(), o);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(), catch_text::Contains("Buffer.nothing"));
}

TEST_CASE("verify mode names the first field outside the buffer") {
  std::vector<uint8_t> buf = MustBuild(SmallProgram());
  TreeReadOptions o;
  o.verify = true;
  REQUIRE(FlatbufferToTree(SchemaId::kProgram, buf.data(), buf.size(), o).ok());

  const auto* sizes = efb::GetProgram(buf.data())
                          ->execution_plan()
                          ->Get(0)
                          ->values()
                          ->Get(1)
                          ->val_as_Tensor()
                          ->sizes();
  const size_t at = static_cast<size_t>(reinterpret_cast<const uint8_t*>(sizes) - buf.data());
  buf[at + 2] = 0x7f;  // length far past the end
  Result<json::Value> t = FlatbufferToTree(SchemaId::kProgram, buf.data(), buf.size(), o);
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().code() == Code::kCorrupt);
  CHECK(t.status().message() ==
        "execution_plan[0].values[1].val.sizes: vector is outside the buffer or misaligned");

  std::vector<uint8_t> truncated(buf.begin(), buf.begin() + 24);
  t = FlatbufferToTree(SchemaId::kProgram, truncated.data(), truncated.size(), o);
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().code() == Code::kCorrupt);
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

}  // namespace
}  // namespace etpack
