// ReadProgramObjects through an ObjectReader of this test's own: JSON
// values standing in for an exporter's objects (a table is an object whose
// "__class__" member names its class, as a Python object's type does).
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>
#include "catch.h"

#include "etpack/json.h"
#include "etpack/manifest.h"
#include "etpack/program_objects.h"
#include "etpack/pte.h"
#include "etpack/writer.h"
#include "pte/program_structure.h"
#include "test_files.h"
#include "test_programs.h"

using namespace etpack;
using namespace etpack::testing;

namespace {

const json::Value* J(ObjectReader::Object o) { return static_cast<const json::Value*>(o); }

class JsonObjects final : public ObjectReader {
 public:
  JsonObjects(std::vector<SourcePtr> constants, std::vector<SourcePtr> delegates)
      : constants_(std::move(constants)), delegates_(std::move(delegates)) {}

  Key KeyOf(std::string_view name) override {
    keys_.push_back(std::make_unique<std::string>(name));
    return keys_.back().get();
  }
  Status Get(Object object, Key key, Object* value, bool* found) override {
    const json::Value* m = J(object)->Find(*static_cast<const std::string*>(key));
    *found = m != nullptr;
    *value = m != nullptr && !m->is_null() ? m : nullptr;
    return Status::OK();
  }
  Kind KindOf(Object object) override {
    if (object == nullptr) return Kind::kNone;
    switch (J(object)->kind()) {
      case json::Kind::kNull: return Kind::kNone;
      case json::Kind::kBool: return Kind::kBool;
      case json::Kind::kInt:
      case json::Kind::kUInt: return Kind::kInt;
      case json::Kind::kDouble: return Kind::kFloat;
      case json::Kind::kString: return Kind::kString;
      case json::Kind::kArray: return Kind::kList;
      case json::Kind::kObject: return Kind::kOther;
    }
    return Kind::kOther;
  }
  std::string_view ClassName(Object object) override {
    switch (KindOf(object)) {
      case Kind::kNone: return "None";
      case Kind::kBool: return "bool";
      case Kind::kInt: return "int";
      case Kind::kFloat: return "float";
      case Kind::kString: return "str";
      case Kind::kList: return "list";
      default: break;
    }
    const json::Value* cls = J(object)->Find("__class__");
    return cls != nullptr ? std::string_view(cls->as_string()) : "object";
  }
  std::string Text(Object object) override { return json::Print(*J(object)); }
  bool Bool(Object object) override { return J(object)->as_bool(); }
  bool Int64(Object object, int64_t* value) override {
    if (J(object)->kind() == json::Kind::kUInt && J(object)->as_uint() > INT64_MAX) return false;
    *value = J(object)->as_int();
    return true;
  }
  bool UInt64(Object object, uint64_t* value) override {
    if (J(object)->kind() == json::Kind::kInt && J(object)->as_int() < 0) return false;
    *value = J(object)->as_uint();
    return true;
  }
  double Double(Object object) override { return J(object)->as_double(); }
  Status Utf8(Object object, std::string_view* text) override {
    *text = J(object)->as_string();
    return Status::OK();
  }
  Status ItemsOf(Object list, bool, ItemSpan* items) override {
    std::vector<Object>& out = lists_.emplace_back();
    for (const json::Value& v : J(list)->items()) out.push_back(v.is_null() ? nullptr : &v);
    items->items = out.data();
    items->size = out.size();
    return Status::OK();
  }
  Status BytesOf(Object, const uint8_t**, size_t*) override {
    return InvalidArgument("no bytes objects here");
  }
  Result<SourcePtr> DataOf(Object object, const std::function<std::string()>& path) override {
    if (J(object)->kind() != json::Kind::kObject)
      return InvalidArgument(path() + ": holds no data");
    const json::Value* c = J(object)->Find("__constant__");
    if (c != nullptr) return constants_.at(c->as_uint());
    const json::Value* d = J(object)->Find("__delegate__");
    if (d != nullptr) return delegates_.at(d->as_uint());
    return InvalidArgument(path() + ": holds no data");
  }

 private:
  std::vector<SourcePtr> constants_;
  std::vector<SourcePtr> delegates_;
  std::vector<std::unique_ptr<std::string>> keys_;
  std::deque<std::vector<Object>> lists_;
};

// A tree in flatc form as objects: each union's "<field>_type" becomes the
// "__class__" of its member, and the data lists hold one entry per source.
json::Value AsObjects(const json::Value& v) {
  if (v.kind() == json::Kind::kArray) {
    std::vector<json::Value> items;
    for (const json::Value& i : v.items()) items.push_back(AsObjects(i));
    return json::Value::Array(std::move(items));
  }
  if (v.kind() != json::Kind::kObject) return v;
  json::Value out = json::Value::Object();
  for (const auto& [name, member] : v.members()) {
    if (name.size() > 5 && name.compare(name.size() - 5, 5, "_type") == 0 &&
        member.kind() == json::Kind::kString) {
      continue;
    }
    json::Value m = AsObjects(member);
    if (const json::Value* type = v.Find(name + "_type");
        type != nullptr && type->kind() == json::Kind::kString) {
      m.Set("__class__", json::Value::String(type->as_string()));
    }
    out.Set(name, std::move(m));
  }
  return out;
}

json::Value DataList(size_t n, const char* field, const char* marker) {
  std::vector<json::Value> items;
  for (size_t i = 0; i < n; ++i) {
    items.push_back(
        json::Value::Object({{field, json::Value::Object({{marker, json::Value::UInt(i)}})}}));
  }
  return json::Value::Array(std::move(items));
}

struct ObjectCase {
  json::Value objects;
  PteManifest manifest;
};

ObjectCase Load(const std::string& name) {
  auto manifest = LoadPteManifest(GoldenDir() + "/" + name + ".input.json");
  REQUIRE(manifest.ok());
  json::Value objects = AsObjects(manifest->input.program.tree());
  objects.Set("constant_buffer",
              DataList(manifest->input.constants.size(), "storage", "__constant__"));
  objects.Set("backend_delegate_data",
              DataList(manifest->input.delegates.size(), "data", "__delegate__"));
  return {std::move(objects), std::move(manifest).value()};
}

Result<PteInput> Read(const ObjectCase& c) {
  JsonObjects reader(c.manifest.input.constants, c.manifest.input.delegates);
  PteInput input;
  input.mutable_data = c.manifest.input.mutable_data;
  input.named_data = c.manifest.input.named_data;
  ETPACK_RETURN_IF_ERROR(ReadProgramObjects(reader, &c.objects, "program", &input));
  return input;
}

const char* kCases[] = {
    "pte_constants",        "pte_constants_align64", "pte_mutable",     "pte_delegates",
    "pte_delegates_inline", "pte_named_data",        "pte_no_segments", "pte_multi_method",
    "pte_all_kinds",        "pte_external",          "pte_fat"};

}  // namespace

TEST_CASE("each golden program read as objects writes the same bytes as its tree") {
  for (const char* name : kCases) {
    SECTION(name) {
      ObjectCase c = Load(name);
      Result<PteInput> input = Read(c);
      INFO(input.status().ToString());
      REQUIRE(input.ok());
      CHECK(input->program.is_flatbuffer());
      // Built by the library: PlanPte does not verify it again.
      CHECK(VerifiedPrograms::IsVerified(input->program));
      CHECK(input->constants.size() == c.manifest.input.constants.size());
      auto from_objects = PlanPte(std::move(input).value(), c.manifest.options);
      INFO(from_objects.status().ToString());
      REQUIRE(from_objects.ok());
      auto from_tree = PlanPte(c.manifest.input, c.manifest.options);
      REQUIRE(from_tree.ok());
      // The planner copies its input in one canonical order, so two forms of
      // one program give one file.
      CHECK(Materialize(from_objects->artifact) == Materialize(from_tree->artifact));
    }
  }
}

TEST_CASE("objects of the wrong kind are refused naming the path, found and expected") {
  ObjectCase c = Load("pte_all_kinds");
  std::vector<json::Value>& values =
      c.objects.Find("execution_plan")->items()[0].Find("values")->items();
  json::Value* tensor = nullptr;
  size_t at = 0;
  for (size_t i = 0; i < values.size() && tensor == nullptr; ++i) {
    json::Value* val = values[i].Find("val");
    if (val != nullptr && val->Find("__class__") != nullptr &&
        val->Find("__class__")->as_string() == "Tensor") {
      tensor = val;
      at = i;
    }
  }
  REQUIRE(tensor != nullptr);
  const std::string path = "program.execution_plan[0].values[" + std::to_string(at) + "].val";
  auto message = [&] {
    Result<PteInput> r = Read(c);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Code::kInvalidArgument);
    return r.status().message();
  };

  const json::Value sizes = *tensor->Find("sizes");
  tensor->Set("sizes", json::Value::String("2,3"));
  CHECK(message() == path + ".sizes: expected list of int, found str");
  tensor->Set("sizes", json::Value::Array({json::Value::Int(2), json::Value::Double(3)}));
  CHECK(message() == path + ".sizes[1]: expected int, found float");
  tensor->Set("sizes", sizes);

  tensor->Set("shape_dynamism", json::Value::Int(7));
  CHECK_THAT(message(), catch_text::StartsWith(path + ".shape_dynamism: 7 is not a value of enum "
                                                      "TensorShapeDynamism (found int 7"));
  tensor->Set("shape_dynamism", json::Value::Int(0));
  tensor->Set("scalar_type", json::Value::Int(300));
  CHECK_THAT(message(), catch_text::Contains(path + ".scalar_type: 300 is out of range"));
  tensor->Set("scalar_type", json::Value::Int(0));

  json::Value saved = std::move(*tensor);
  *tensor = json::Value::Object({{"__class__", json::Value::String("Operator")}});
  CHECK_THAT(message(), catch_text::StartsWith(path + ": expected one of Null, Int") &&
                            catch_text::EndsWith(", found Operator"));
  *tensor = json::Value::Object({{"__class__", json::Value::String("Tensor")}});
  CHECK_THAT(message(), catch_text::StartsWith(path + ".") && catch_text::Contains(": expected ") &&
                            catch_text::Contains("found a Tensor without attribute"));
  *tensor = std::move(saved);

  c.objects.Find("constant_buffer")->items()[0] = json::Value::Null();
  CHECK(message() == "program.constant_buffer[0]: expected Buffer, found None");
  c.objects.Find("constant_buffer")->items()[0] =
      json::Value::Object({{"storage", json::Value::Int(3)}});
  CHECK(message() == "program.constant_buffer[0].storage: holds no data");

  // None is an absent field; a program must still be an object.
  c.objects = json::Value::Null();
  CHECK(message() == "program: expected Program, found None");
}
