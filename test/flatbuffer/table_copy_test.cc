// A verified flatbuffer copied with typed edits (flatbuffer/table_copy.h):
// the bytes a build of the edited structure gives, and the builder's limits.
#include "flatbuffer/table_copy.h"

#include "catch.h"

#include <cstdint>
#include <string>
#include <vector>

#include "etpack/pte.h"
#include "flatbuffer/table_builder.h"
#include "flatbuffer_fixtures.h"

namespace etpack {
namespace {

using namespace etpack::testing;

std::vector<uint8_t> MustCopy(const std::vector<uint8_t>& verified, fbs::CopyEdits* edits) {
  Result<std::vector<uint8_t>> c =
      fbs::CopyFlatbuffer(SchemaId::kProgram, verified.data(), verified.size(), edits);
  INFO(c.status().ToString());
  REQUIRE(c.ok());
  REQUIRE(VerifyProgram(*c));
  return std::move(c).value();
}

TEST_CASE("a copy without edits has the bytes of a build of the same structure") {
  const std::vector<uint8_t> built = MustBuild(SmallProgram());
  CHECK(MustCopy(built, nullptr) == built);
}

// Every Tensor: data_buffer_idx 5, allocation_info left out, and an
// ExtraTensorInfo made from nothing with a name and location EXTERNAL.
class TensorEdits : public fbs::CopyEdits {
 public:
  explicit TensorEdits(const fbs::SchemaData& d)
      : tensor_(fbs::FindObject(d, "Tensor")), info_(fbs::FindObject(d, "ExtraTensorInfo")) {}
  bool Edits(int obj) const override { return obj == tensor_ || obj == info_; }
  Result<fbs::FieldEdit> Child(int obj, const fbs::FieldInfo& f, const flatbuffers::Table*,
                               fbs::TableBuilder& b) override {
    if (obj == tensor_ && f.offset == efb::Tensor::VT_ALLOCATION_INFO) {
      return fbs::FieldEdit::Drop();
    }
    if (obj == tensor_ && f.offset == efb::Tensor::VT_EXTRA_TENSOR_INFO) {
      ETPACK_ASSIGN_OR_RETURN(const fbs::uoffset_t o, b.Table(info_, nullptr));
      return fbs::FieldEdit::Replace(o);
    }
    if (obj == info_ && f.offset == efb::ExtraTensorInfo::VT_FULLY_QUALIFIED_NAME) {
      ETPACK_ASSIGN_OR_RETURN(const fbs::uoffset_t o, b.StringOf("linear.weight"));
      return fbs::FieldEdit::Replace(o);
    }
    return fbs::FieldEdit::Copy();
  }
  bool Scalar(int obj, const fbs::FieldInfo& f, const flatbuffers::Table*,
              uint64_t* bits) override {
    if (obj == tensor_ && f.offset == efb::Tensor::VT_DATA_BUFFER_IDX) {
      *bits = 5;
      return true;
    }
    if (obj == info_ && f.offset == efb::ExtraTensorInfo::VT_LOCATION) {
      *bits = 1;
      return true;
    }
    return false;
  }

 private:
  const int tensor_, info_;
};

TEST_CASE("typed edits give the bytes of a build of the edited structure") {
  json::Value tree = SmallProgram();
  const std::vector<uint8_t> original = MustBuild(tree);
  TensorEdits edits(fbs::Decoded(SchemaId::kProgram));
  const std::vector<uint8_t> copy = MustCopy(original, &edits);

  json::Value& tensor = Value1(tree);
  tensor.Set("data_buffer_idx", json::Value::UInt(5));
  tensor.Set("allocation_info", json::Value::Null());
  tensor.Set("extra_tensor_info",
             ParseJson(R"({"fully_qualified_name": "linear.weight", "location": 1})"));
  CHECK(copy == MustBuild(tree));
  const efb::Tensor* t =
      efb::GetProgram(copy.data())->execution_plan()->Get(0)->values()->Get(1)->val_as_Tensor();
  CHECK(t->data_buffer_idx() == 5);
  CHECK(t->allocation_info() == nullptr);
  CHECK(t->extra_tensor_info()->fully_qualified_name()->str() == "linear.weight");
}

TEST_CASE("bytes a plan puts inline: a failed read names the field") {
  PteInput in;
  in.program = ProgramStructure::FromTree(ParseJson(R"({
    "execution_plan": [{"name": "forward", "delegates": [
      {"id": "Backend", "processed": {"location": 0, "index": 0}}]}]})"));
  in.delegates = {GeneratorSource(
      "broken", 10, [](uint64_t, uint8_t*, size_t) { return IoError("broken read", 5); })};
  PteOptions options;
  options.extract_delegate_segments = false;
  Result<PtePlan> plan = PlanPte(std::move(in), options);
  REQUIRE_FALSE(plan.ok());
  CHECK_THAT(plan.status().message(),
             catch_text::StartsWith("program.backend_delegate_data[0].data: "));
  CHECK_THAT(plan.status().message(), catch_text::Contains("broken read"));
}

TEST_CASE("bytes a plan puts inline are checked against 2 GiB before they are read") {
  // Without extraction the delegate payloads are copied into the program.
  PteInput in;
  in.program = ProgramStructure::FromTree(ParseJson(R"({
    "execution_plan": [{"name": "forward", "delegates": [
      {"id": "Backend", "processed": {"location": 0, "index": 0}}]}]})"));
  in.delegates = {GeneratorSource("huge", uint64_t{1} << 31, [](uint64_t, uint8_t*, size_t) {
    FAIL("must not be read");
    return Status::OK();
  })};
  PteOptions options;
  options.extract_delegate_segments = false;
  Result<PtePlan> plan = PlanPte(std::move(in), options);
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().code() == Code::kOutOfRange);
  CHECK_THAT(plan.status().message(),
             catch_text::StartsWith("program.backend_delegate_data[0].data: adding "));
  CHECK_THAT(plan.status().message(), catch_text::Contains("2 GiB"));
}

}  // namespace
}  // namespace etpack
