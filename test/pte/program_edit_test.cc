// Typed edits of a verified Program (pte/program_edit.h): the bytes a
// build of the same edits made on the tree gives, and errors that name the
// value or delegate an edit names.
#include "pte/program_edit.h"

#include "catch.h"

#include <string>
#include <vector>

#include "etpack/external_data.h"
#include "etpack/pte_file.h"
#include "flatbuffer_fixtures.h"
#include "pte/program_structure.h"

namespace etpack {
namespace {

using namespace etpack::testing;

// SmallProgram with a second tensor that has an extra_tensor_info (non-default
// fields kept by a kSet edit) and two delegates, one in a segment.
json::Value Program() {
  json::Value p = SmallProgram();
  json::Value& plan = Plan0(p);
  plan.Find("values")->items().push_back(ParseJson(R"({"val_type": "Tensor", "val": {
      "scalar_type": 6, "sizes": [4], "dim_order": [0], "data_buffer_idx": 2,
      "extra_tensor_info": {"mutable_data_segments_idx": 3, "device_index": 1}}})"));
  plan.Set("delegates", ParseJson(R"([
      {"id": "A", "processed": {"location": 1, "index": 4}},
      {"id": "B", "processed": {"location": 0, "index": 0}, "compile_specs": []}])"));
  p.Set("constant_buffer", ParseJson(R"([{"storage": [1, 2, 3]}])"));
  p.Set("backend_delegate_data", ParseJson(R"([{"data": [9]}])"));
  return p;
}

std::vector<uint8_t> BytesOf(const ProgramStructure& p) {
  REQUIRE(p.is_flatbuffer());
  const Source& s = *p.flatbuffer();
  REQUIRE(s.contiguous() != nullptr);
  return std::vector<uint8_t>(s.contiguous(), s.contiguous() + s.size());
}

TEST_CASE("tensor and delegate edits give the bytes of the same edits on the tree") {
  json::Value tree = Program();
  const std::vector<uint8_t> original = MustBuild(tree);

  ProgramEdits edits;
  TensorEdit created;  // value 1 has no extra_tensor_info
  created.value = 1;
  created.data_buffer_idx = 0;
  created.info = TensorEdit::Info::kSet;
  created.location = efb::TensorDataLocation::EXTERNAL;
  created.fully_qualified_name = "weight";
  TensorEdit kept;  // value 2's other fields stay
  kept.value = 2;
  kept.info = TensorEdit::Info::kSet;
  kept.location = efb::TensorDataLocation::EXTERNAL;
  kept.fully_qualified_name = "bias";
  edits.tensors = {kept, created};  // any order
  edits.delegates = {{0, 0, efb::DataLocation::INLINE, 1}};
  edits.drop_inline_bytes = true;
  Result<ProgramStructure> edited = EditProgram(original.data(), original.size(), edits);
  INFO(edited.status().ToString());
  REQUIRE(edited.ok());
  CHECK(VerifiedPrograms::IsVerified(*edited));

  json::Value& values = *Plan0(tree).Find("values");
  json::Value& v1 = *values.items()[1].Find("val");
  v1.Set("data_buffer_idx", json::Value::UInt(0));
  v1.Set("extra_tensor_info", ParseJson(R"({"fully_qualified_name": "weight", "location": 1})"));
  json::Value& info2 = *values.items()[2].Find("val")->Find("extra_tensor_info");
  info2.Set("fully_qualified_name", json::Value::String("bias"));
  info2.Set("location", json::Value::Int(1));
  Plan0(tree)
      .Find("delegates")
      ->items()[0]
      .Set("processed", ParseJson(R"({"location": 0, "index": 1})"));
  tree.Set("constant_buffer", ParseJson(R"([{}])"));
  tree.Set("backend_delegate_data", ParseJson(R"([{}])"));
  CHECK(BytesOf(*edited) == MustBuild(tree));

  // An empty name leaves the name out; the other fields stay.
  ProgramEdits unname;
  TensorEdit u;
  u.value = 2;
  u.info = TensorEdit::Info::kSet;
  u.location = efb::TensorDataLocation::SEGMENT;
  unname.tensors = {u};
  const std::vector<uint8_t> named = BytesOf(*edited);
  Result<ProgramStructure> unnamed = EditProgram(named.data(), named.size(), unname);
  REQUIRE(unnamed.ok());
  json::Value tree_unnamed = tree;
  json::Value& info =
      *Plan0(tree_unnamed).Find("values")->items()[2].Find("val")->Find("extra_tensor_info");
  info.Set("fully_qualified_name", json::Value::Null());
  info.Set("location", json::Value::Int(0));
  CHECK(BytesOf(*unnamed) == MustBuild(tree_unnamed));

  // Dropping what was set.
  ProgramEdits drop;
  TensorEdit d;
  d.value = 2;
  d.info = TensorEdit::Info::kDrop;
  drop.tensors = {d};
  const std::vector<uint8_t> once = BytesOf(*edited);
  Result<ProgramStructure> dropped = EditProgram(once.data(), once.size(), drop);
  REQUIRE(dropped.ok());
  values.items()[2].Find("val")->Set("extra_tensor_info", json::Value::Null());
  CHECK(BytesOf(*dropped) == MustBuild(tree));
}

TEST_CASE("an edit of no tensor or delegate, or of one twice, is an error naming it") {
  const std::vector<uint8_t> original = MustBuild(Program());
  auto error = [&](const ProgramEdits& edits) {
    Result<ProgramStructure> r = EditProgram(original.data(), original.size(), edits);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Code::kInvalidArgument);
    return r.status().message();
  };
  ProgramEdits e;
  e.tensors = {TensorEdit{}};  // values[0] is an Int
  CHECK(error(e) == "execution_plan[0].values[0]: not a Tensor value");
  e.tensors[0].plan = 1;
  CHECK(error(e) == "execution_plan[1].values[0]: not a Tensor value");
  e.tensors = {TensorEdit{}, TensorEdit{}};
  e.tensors[0].value = e.tensors[1].value = 2;
  CHECK(error(e) == "execution_plan[0].values[2]: edited twice");
  e.tensors.clear();
  e.delegates = {{0, 2, efb::DataLocation::INLINE, 0}};
  CHECK(error(e) == "execution_plan[0].delegates[2]: no such delegate");
  e.delegates = {{0, 1, efb::DataLocation::INLINE, 0}, {0, 1, efb::DataLocation::INLINE, 0}};
  CHECK(error(e) == "execution_plan[0].delegates[1]: edited twice");
}

TEST_CASE("a program the library built carries the fact, so it is not verified again") {
  const std::vector<uint8_t> bytes = MustBuild(Program());
  ProgramStructure given = ProgramStructure::FromFlatbuffer(OwnedSource(bytes));
  CHECK_FALSE(VerifiedPrograms::IsVerified(given));  // a caller's bytes are verified
  REQUIRE(ExternalTensorLayouts(given).ok());
  CHECK_FALSE(VerifiedPrograms::IsVerified(given));  // const: the structure is not changed
  Result<ProgramStructure> built = EditProgram(bytes.data(), bytes.size(), {});
  REQUIRE(built.ok());
  CHECK(VerifiedPrograms::IsVerified(*built));
  CHECK(VerifiedPrograms::IsVerified(ProgramStructure(*built)));  // copies carry it

  // A program read back from a file is a copy the library made.
  for (const std::string& path : GoldenPtes()) {
    INFO(path);
    Result<std::unique_ptr<PteFile>> f = PteFile::Open(path);
    REQUIRE(f.ok());
    Result<PteInput> in = (*f)->ToInput();
    REQUIRE(in.ok());
    CHECK(VerifiedPrograms::IsVerified(in->program));
  }
}

}  // namespace
}  // namespace etpack
