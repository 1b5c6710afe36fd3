// External data: .pte tensors marked EXTERNAL resolve against .ptd files
// exactly as the runtime would resolve them, and a program's constants can
// be moved out into a .ptd and back in again without losing a byte.
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>
#include "catch.h"

#include "etpack/external_data.h"
#include "etpack/manifest.h"
#include "etpack/ptd_file.h"
#include "etpack/pte.h"
#include "etpack/pte_file.h"
#include "flat_tensor_etpack_generated.h"
#include "flatbuffer/scalar_type.h"
#include "plan/header_insert.h"
#include "program_etpack_generated.h"
#include "test_files.h"
#include "test_programs.h"

using namespace etpack;
using namespace etpack::testing;
namespace fb = etpack::pte_fb;
namespace ftb = etpack::ptd_fb;

namespace {

std::unique_ptr<PtdFile> PtdOf(const PtdInput& input, const std::string& name) {
  auto plan = PlanPtd(input);
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  return Read<PtdFile>(name, Materialize(plan->artifact));
}

std::unique_ptr<PteFile> PteOf(const PteInput& input, const std::string& name,
                               const PteOptions& options = {}) {
  auto plan = PlanPte(input, options);
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  return Read<PteFile>(name, Materialize(plan->artifact));
}

PtdInput BasicInput() {
  auto m = LoadPtdManifest(GoldenDir() + "/ptd_basic.input.json");
  INFO(m.status().ToString());
  REQUIRE(m.ok());
  return m->input;
}

std::unique_ptr<PteFile> ExternalPte() {
  auto f = PteFile::Open(GoldenDir() + "/pte_external.pte");
  INFO(f.status().ToString());
  REQUIRE(f.ok());
  return std::move(f).value();
}

PtdEntry& EntryNamed(PtdInput& in, const std::string& key) {
  for (PtdEntry& e : in.entries) {
    if (e.key == key) return e;
  }
  FAIL("no entry " << key);
  throw;
}

// The error of checking pte_external against one .ptd built from `input`.
Status CheckAgainst(const PtdInput& input) {
  auto pte = ExternalPte();
  auto ptd = PtdOf(input, "w.ptd");
  return CheckExternalReferences(*pte, {ptd.get()});
}

std::vector<uint8_t> ReadSource(const Source& s) {
  auto r = ReadAll(s);
  REQUIRE(r.ok());
  return *r;
}

// The bytes a constant tensor reads in a .pte, wherever they live.
std::vector<uint8_t> ConstantBytes(const PteFile& f, const fb::Tensor& t) {
  const fb::Program& p = f.program();
  uint64_t n = 0;
  {
    auto r = TensorNbytes(static_cast<int>(t.scalar_type()), *t.sizes(), "t");
    REQUIRE(r.ok());
    n = *r;
  }
  const auto* cs = p.constant_segment();
  REQUIRE(cs != nullptr);
  const uint64_t start = f.header().segment_base_offset +
                         p.segments()->Get(cs->segment_index())->offset() +
                         cs->offsets()->Get(t.data_buffer_idx());
  REQUIRE(start + n <= f.size());
  return std::vector<uint8_t>(f.head() + start, f.head() + start + n);
}

const fb::Tensor& TensorAt(const PteFile& f, uint32_t plan, uint32_t value) {
  const fb::Tensor* t =
      f.program().execution_plan()->Get(plan)->values()->Get(value)->val_as_Tensor();
  REQUIRE(t != nullptr);
  return *t;
}

std::string KeyOf(const fb::Tensor& t) {
  REQUIRE(t.extra_tensor_info() != nullptr);
  REQUIRE(t.extra_tensor_info()->fully_qualified_name() != nullptr);
  return t.extra_tensor_info()->fully_qualified_name()->str();
}

}  // namespace

TEST_CASE("external references resolve against the matching .ptd") {
  auto pte = ExternalPte();
  auto ptd = PtdOf(BasicInput(), "basic.ptd");
  uint64_t resolved = 0;
  Status s = CheckExternalReferences(*pte, {ptd.get()}, &resolved);
  INFO(s.ToString());
  CHECK(s.ok());
  CHECK(resolved == 3);

  // Keys split over two files merge.
  PtdInput a = BasicInput(), b = BasicInput();
  a.entries.erase(a.entries.begin() + 1);  // without linear.bias
  b.entries = {b.entries[1]};              // only linear.bias
  auto fa = PtdOf(a, "a.ptd"), fbb = PtdOf(b, "b.ptd");
  s = CheckExternalReferences(*pte, {fa.get(), fbb.get()}, &resolved);
  INFO(s.ToString());
  CHECK(s.ok());
  CHECK(resolved == 3);

  // A program without EXTERNAL tensors needs no data at all.
  auto plain = PteFile::Open(GoldenDir() + "/pte_constants.pte");
  REQUIRE(plain.ok());
  CHECK(CheckExternalReferences(**plain, {}, &resolved).ok());
  CHECK(resolved == 0);
}

TEST_CASE("a missing key names the tensor and the key") {
  PtdInput in = BasicInput();
  in.entries.erase(in.entries.begin() + 1);  // linear.bias
  Status s = CheckAgainst(in);
  REQUIRE_FALSE(s.ok());
  CHECK(s.code() == Code::kNotFound);
  CHECK(Contains(s.message(), "pte_external.pte: execution_plan[0].values[2]"));
  CHECK(Contains(s.message(), "'linear.bias' is not in w.ptd"));

  auto pte = ExternalPte();
  Status none = CheckExternalReferences(*pte, {});
  REQUIRE_FALSE(none.ok());
  CHECK(Contains(none.message(), "'linear.weight' is not in any data file (none given)"));
}

TEST_CASE("layout mismatches name both layouts") {
  PtdInput in = BasicInput();
  SECTION("dtype") {
    EntryNamed(in, "linear.weight").layout->scalar_type = 3;  // INT, also 4 bytes
    Status s = CheckAgainst(in);
    REQUIRE_FALSE(s.ok());
    INFO(s.message());
    CHECK(Contains(s.message(),
                   "execution_plan[0].values[1]: tensor FLOAT[4, 3] dim_order [0, 1] "
                   "but key 'linear.weight' in w.ptd is INT[4, 3] dim_order [0, 1]"));
  }
  SECTION("sizes") {
    EntryNamed(in, "linear.weight").layout->sizes = {3, 4};
    Status s = CheckAgainst(in);
    REQUIRE_FALSE(s.ok());
    INFO(s.message());
    CHECK(Contains(s.message(), "FLOAT[3, 4] dim_order [0, 1]"));
    CHECK(Contains(s.message(), "'linear.weight'"));
  }
  SECTION("rank") {
    EntryNamed(in, "linear.weight").layout = TensorLayout{6, {12}, {0}};
    Status s = CheckAgainst(in);
    REQUIRE_FALSE(s.ok());
    CHECK(Contains(s.message(), "is FLOAT[12] dim_order [0]"));
  }
  SECTION("dim_order") {
    EntryNamed(in, "conv.weight").layout->dim_order = {0, 1, 2, 3};
    Status s = CheckAgainst(in);
    REQUIRE_FALSE(s.ok());
    INFO(s.message());
    CHECK(Contains(s.message(),
                   "execution_plan[0].values[3]: tensor BFLOAT16[2, 3, 2, 2] dim_order "
                   "[0, 2, 3, 1] but key 'conv.weight' in w.ptd is BFLOAT16[2, 3, 2, 2] "
                   "dim_order [0, 1, 2, 3]"));
  }
  SECTION("no layout at all") {
    EntryNamed(in, "linear.bias").layout.reset();
    Status s = CheckAgainst(in);
    REQUIRE_FALSE(s.ok());
    CHECK(Contains(s.message(),
                   "key 'linear.bias' in w.ptd is an opaque blob without tensor_layout"));
  }
}

TEST_CASE("a segment shorter than its tensor never gets as far as a program") {
  // The check is made when the .ptd is opened (the runtime would read past
  // the segment), so a data map handed to CheckExternalReferences always
  // holds enough bytes for every layout it states.
  auto plan = PlanPtd(BasicInput());
  REQUIRE(plan.ok());
  std::vector<uint8_t> bytes = Materialize(plan->artifact);
  const auto* seg = ftb::GetFlatTensor(bytes.data())->segments()->Get(0);
  const size_t size_at =
      reinterpret_cast<const flatbuffers::Table*>(seg)->GetAddressOf(ftb::DataSegment::VT_SIZE) -
      bytes.data();
  StoreLE64(bytes.data() + size_at, 47);
  auto f = TryRead<PtdFile>("short.ptd", std::move(bytes));
  REQUIRE_FALSE(f.ok());
  CHECK(Contains(f.status().message(), "'linear.weight'"));
  CHECK(Contains(f.status().message(), "needs 48 bytes but segment 0 holds 47"));
}

TEST_CASE("a key in two .ptd files is an error naming both") {
  auto pte = ExternalPte();
  PtdInput other = BasicInput();
  other.entries = {EntryNamed(other, "linear.bias")};
  auto first = PtdOf(BasicInput(), "first.ptd");
  auto second = PtdOf(other, "second.ptd");
  Status s = CheckExternalReferences(*pte, {first.get(), second.get()});
  REQUIRE_FALSE(s.ok());
  CHECK(s.message() == "key 'linear.bias' is in both first.ptd and second.ptd");
}

TEST_CASE("an EXTERNAL tensor without a name is an error") {
  auto m = LoadPteManifest(GoldenDir() + "/pte_external.input.json");
  REQUIRE(m.ok());
  json::Value& val =
      m->input.program.tree().Find("execution_plan")->items()[0].Find("values")->items()[2];
  val.Find("val")->Find("extra_tensor_info")->Set("fully_qualified_name", json::Value());
  auto pte = PteOf(m->input, "anon.pte", m->options);
  auto ptd = PtdOf(BasicInput(), "basic.ptd");
  Status s = CheckExternalReferences(*pte, {ptd.get()});
  REQUIRE_FALSE(s.ok());
  CHECK(s.message() ==
        "anon.pte: execution_plan[0].values[2] is EXTERNAL but has no fully_qualified_name");
}

TEST_CASE("ExternalizeConstants moves every constant and keeps its bytes") {
  auto original = PteFile::Open(GoldenDir() + "/pte_constants.pte");
  REQUIRE(original.ok());
  const PteFile& orig = **original;
  auto split = ExternalizeConstants(orig);
  INFO(split.status().ToString());
  REQUIRE(split.ok());
  auto pte = PteOf(split->first, "split.pte");
  auto ptd = PtdOf(split->second, "split.ptd");

  uint64_t resolved = 0;
  Status s = CheckExternalReferences(*pte, {ptd.get()}, &resolved);
  INFO(s.ToString());
  REQUIRE(s.ok());

  // No constant bytes stay in the program.
  const auto* cs = pte->program().constant_segment();
  REQUIRE(cs != nullptr);
  CHECK(pte->layout().segments.at(cs->segment_index()).size == 0);

  uint64_t moved = 0;
  const auto* values = orig.program().execution_plan()->Get(0)->values();
  for (uint32_t v = 0; v < values->size(); ++v) {
    const fb::Tensor* t = values->Get(v)->val_as_Tensor();
    if (t == nullptr || t->data_buffer_idx() == 0 || t->allocation_info() != nullptr) continue;
    INFO("value " << v);
    const fb::Tensor& now = TensorAt(*pte, 0, v);
    const std::string key = KeyOf(now);
    CHECK(key == "constant.forward." + std::to_string(v));
    CHECK(now.extra_tensor_info()->location() == fb::TensorDataLocation::EXTERNAL);
    CHECK(now.data_buffer_idx() == moved);
    CHECK(now.allocation_info() == nullptr);
    const int64_t e = ptd->Find(key);
    REQUIRE(e >= 0);
    std::vector<uint8_t> data = ReadSource(*ptd->EntrySource(static_cast<size_t>(e)));
    const std::vector<uint8_t> want = ConstantBytes(orig, *t);
    REQUIRE(data.size() >= want.size());
    data.resize(want.size());
    CHECK(data == want);
    ++moved;
  }
  CHECK(moved == 6);
  CHECK(resolved == 6);
  CHECK(ptd->entries().size() == 6);
  CHECK(split->second.entries[0].alignment == 16);
}

TEST_CASE("ExternalizeConstants: names, shared buffers and generated keys") {
  PteInput in = SharedBufferProgram();
  std::vector<json::Value>& values = Values(in);
  auto name = [&](size_t v, const std::string& fqn) {
    values[v].Find("val")->Set(
        "extra_tensor_info",
        json::Value::Object({{"fully_qualified_name", json::Value::String(fqn)},
                             {"device_type", json::Value::Int(1)}}));
  };

  SECTION("named, unnamed and shared") {
    name(0, "w.main");
    // Takes the key value 1 would be given, so value 1 must get another.
    name(2, "constant.forward.1");
    auto pte = PteOf(in, "m.pte");
    auto split = ExternalizeConstants(*pte, 64);
    INFO(split.status().ToString());
    REQUIRE(split.ok());
    const PtdInput& ptd = split->second;
    REQUIRE(ptd.buffers.size() == 2);
    REQUIRE(ptd.entries.size() == 3);
    CHECK(ptd.entries[0].key == "w.main");
    CHECK(ptd.entries[1].key == "constant.forward.1.1");
    CHECK(ptd.entries[2].key == "constant.forward.1");
    CHECK(ptd.entries[0].buffer_index == 0);
    CHECK(ptd.entries[1].buffer_index == 1);
    CHECK(ptd.entries[2].buffer_index == 0);  // shares value 0's buffer
    CHECK(*ptd.entries[0].layout == TensorLayout{0, {64}, {0}});
    CHECK(*ptd.entries[2].layout == TensorLayout{0, {32}, {0}});
    for (const PtdEntry& e : ptd.entries) CHECK(e.alignment == 64);
    CHECK(ReadSource(*ptd.buffers[0]) == ReadSource(*Pattern(64, 1)));
    CHECK(ReadSource(*ptd.buffers[1]) == ReadSource(*Pattern(32, 2)));

    auto out = PteOf(split->first, "out.pte");
    auto data = PtdOf(ptd, "out.ptd");
    CHECK(CheckExternalReferences(*out, {data.get()}).ok());
    // Other extra_tensor_info fields survive.
    CHECK(TensorAt(*out, 0, 0).extra_tensor_info()->device_type() == fb::DeviceType::CUDA);
    CHECK(KeyOf(TensorAt(*out, 0, 1)) == "constant.forward.1.1");
    CHECK(TensorAt(*out, 0, 0).data_buffer_idx() == 0);
    CHECK(TensorAt(*out, 0, 1).data_buffer_idx() == 1);
    CHECK(TensorAt(*out, 0, 2).data_buffer_idx() == 2);
    // Only the placeholder is left of the constant table.
    REQUIRE(split->first.constants.size() == 1);
    CHECK(split->first.constants[0]->size() == 0);
  }

  SECTION("one name for the same tensor twice is one entry") {
    values.push_back(values[1]);  // value 3: the same as value 1
    name(1, "w.shared");
    name(3, "w.shared");
    auto pte = PteOf(in, "m.pte");
    auto split = ExternalizeConstants(*pte);
    INFO(split.status().ToString());
    REQUIRE(split.ok());
    REQUIRE(split->second.entries.size() == 3);
    auto out = PteOf(split->first, "out.pte");
    CHECK(TensorAt(*out, 0, 1).data_buffer_idx() == TensorAt(*out, 0, 3).data_buffer_idx());
  }

  SECTION("one name for different tensors is an error") {
    name(0, "w.clash");
    name(2, "w.clash");
    auto pte = PteOf(in, "m.pte");
    auto split = ExternalizeConstants(*pte);
    REQUIRE_FALSE(split.ok());
    INFO(split.status().message());
    CHECK(Contains(split.status().message(), "m.pte: execution_plan[0].values[2]"));
    CHECK(Contains(split.status().message(),
                   "'w.clash' is also the name of execution_plan[0].values[0]"));
  }

  SECTION("one name: the error says what differs, with the values") {
    auto refused = [&](const std::string& want) {
      auto pte = PteOf(in, "m.pte");
      auto split = ExternalizeConstants(*pte);
      REQUIRE_FALSE(split.ok());
      INFO(split.status().message());
      CHECK(Contains(split.status().message(),
                     "'w.clash' is also the name of execution_plan[0].values[0], a different "
                     "tensor (" +
                         want + "); a .ptd key holds one tensor"));
    };
    name(0, "w.clash");
    SECTION("only the shape (one buffer)") {
      name(2, "w.clash");
      refused("sizes [64] there, [32] here");
    }
    SECTION("dtype, sizes and dim_order") {
      values.push_back(values[0]);  // value 3: value 0 as an int8[8, 8] in another order
      json::Value& t = *values[3].Find("val");
      t.Set("scalar_type", json::Value::Int(1));
      t.Set("sizes", json::Value::Array({json::Value::Int(8), json::Value::Int(8)}));
      t.Set("dim_order", json::Value::Array({json::Value::Int(1), json::Value::Int(0)}));
      name(3, "w.clash");
      refused(
          "dtype BYTE there, CHAR here; sizes [64] there, [8, 8] here; dim_order [0] there, "
          "[1, 0] here");
    }
    SECTION("bytes of another size") {
      name(1, "w.clash");
      refused("sizes [64] there, [32] here; bytes: 64 there, 32 here");
    }
    SECTION("bytes of the same size") {
      in.constants[2] = Pattern(64, 9);
      values[1].Find("val")->Set("sizes", json::Value::Array({json::Value::Int(64)}));
      name(1, "w.clash");
      refused("bytes: 64 each, first different at byte 0 (1 there, 9 here)");
    }
  }

  SECTION("one name for the same bytes in two buffers is one entry") {
    in.constants[2] = Pattern(64, 1);  // constant 2: constant 1's bytes again
    values[1].Find("val")->Set("sizes", json::Value::Array({json::Value::Int(64)}));
    name(0, "w.same");
    name(1, "w.same");
    auto pte = PteOf(in, "m.pte");
    auto split = ExternalizeConstants(*pte);
    INFO(split.status().ToString());
    REQUIRE(split.ok());
    REQUIRE(split->second.entries.size() == 2);
    CHECK(split->second.entries[0].key == "w.same");
    auto out = PteOf(split->first, "out.pte");
    CHECK(TensorAt(*out, 0, 0).data_buffer_idx() == TensorAt(*out, 0, 1).data_buffer_idx());
    auto data = PtdOf(split->second, "out.ptd");
    CHECK(CheckExternalReferences(*out, {data.get()}).ok());
  }

  SECTION("alignment must be positive, at most 1 GiB") {
    auto pte = PteOf(in, "m.pte");
    CHECK_FALSE(ExternalizeConstants(*pte, 0).ok());
    CHECK(ExternalizeConstants(*pte, 48).ok());  // any positive one, as the reference takes
    auto big = ExternalizeConstants(*pte, kMaxAlignment * 2);
    REQUIRE_FALSE(big.ok());
    CHECK(big.status().code() == Code::kInvalidArgument);
    CHECK(Contains(big.status().message(), "exceeds the maximum of 1073741824 (1 GiB)"));
  }
}

TEST_CASE("ExternalizeConstants leaves EXTERNAL tensors alone") {
  auto pte = ExternalPte();
  auto split = ExternalizeConstants(*pte);
  INFO(split.status().ToString());
  REQUIRE(split.ok());
  REQUIRE(split->second.entries.size() == 1);
  CHECK(split->second.entries[0].key == "constant.forward.4");
  auto out = PteOf(split->first, "out.pte");
  auto moved = PtdOf(split->second, "moved.ptd");
  auto basic = PtdOf(BasicInput(), "basic.ptd");
  uint64_t resolved = 0;
  Status s = CheckExternalReferences(*out, {basic.get(), moved.get()}, &resolved);
  INFO(s.ToString());
  CHECK(s.ok());
  CHECK(resolved == 4);
  CHECK(TensorAt(*out, 0, 3).data_buffer_idx() == 2);  // as the exporter left it
  const std::vector<uint8_t> half{0, 0, 0, 0x3f};      // 0.5f
  CHECK(ReadSource(*moved->EntrySource(0)) == half);
}

namespace {

// The .pte and .ptd bytes of a split.
std::pair<std::vector<uint8_t>, std::vector<uint8_t>> Written(
    Result<std::pair<PteInput, PtdInput>> split, const PteOptions& options) {
  INFO(split.status().ToString());
  REQUIRE(split.ok());
  auto pte = PlanPte(std::move(split->first), options);
  INFO(pte.status().ToString());
  REQUIRE(pte.ok());
  PtdOptions ptd_options;
  ptd_options.segment_alignment = options.segment_alignment;
  auto ptd = PlanPtd(split->second, ptd_options);
  INFO(ptd.status().ToString());
  REQUIRE(ptd.ok());
  return {Materialize(pte->artifact), Materialize(ptd->artifact)};
}

}  // namespace

TEST_CASE("ExternalizeConstants of an input splits as that program's file does") {
  // Splitting the input gives the bytes of splitting the file written from
  // it (what save_pte(external_constants=) once did), but for named data:
  // a file does not record the alignments its keys asked for (its input
  // shows what their offsets happen to divide), the input does.
  for (const std::string& name : testing::GoldenPrograms()) {
    INFO(name);
    auto m = LoadPteManifest(GoldenDir() + "/" + name + ".input.json");
    INFO(m.status().ToString());
    REQUIRE(m.ok());
    const uint64_t alignment = m->options.constant_tensor_alignment;
    auto file = PteOf(m->input, std::string(name) + ".pte", m->options);
    auto file_split = ExternalizeConstants(*file, alignment);
    if (file_split.ok()) file_split->first.named_data = m->input.named_data;
    const auto from_file = Written(std::move(file_split), m->options);
    const auto from_input = Written(ExternalizeConstants(m->input, alignment), m->options);
    CHECK(from_input.first == from_file.first);
    CHECK(from_input.second == from_file.second);
  }
}

TEST_CASE("ExternalizeConstants of an input reads each constant byte once") {
  uint64_t read = 0;
  auto counted = [&read](uint64_t size, uint8_t seed) {
    return GeneratorSource("counted", size,
                           [&read, size, seed](uint64_t off, uint8_t* dst, size_t n) {
                             if (off + n > size) return OutOfRange("read past the end");
                             for (size_t i = 0; i < n; ++i)
                               dst[i] = static_cast<uint8_t>(seed + (off + i) * 7);
                             read += n;
                             return Status::OK();
                           });
  };
  PteInput in = SmallProgram({counted(3 << 20, 1), counted(1 << 20, 2)}, {Pattern(100, 3)});
  auto split = ExternalizeConstants(std::move(in));
  INFO(split.status().ToString());
  REQUIRE(split.ok());
  CHECK(read == 0);  // splitting plans, it does not read
  const auto [pte, ptd] = Written(std::move(split), PteOptions{});
  CHECK(read == (4u << 20));  // once, into the .ptd
  CHECK(pte.size() < 4096);   // the program holds none of them
  auto data = Read<PtdFile>("m.ptd", ptd);
  REQUIRE(data->entries().size() == 2);
  CHECK(ReadSource(*data->EntrySource(0)) == ReadSource(*Pattern(3 << 20, 1)));
  CHECK(ReadSource(*data->EntrySource(1)) == ReadSource(*Pattern(1 << 20, 2)));
}

TEST_CASE("ExternalizeConstants: one source given for two constants is one .ptd buffer") {
  // The same source is stored once (SourceIndex); equal bytes in another
  // source are not (that is dedup's work, not the split's).
  const SourcePtr shared = Pattern(64, 1);
  auto split = ExternalizeConstants(SmallProgram({shared, shared, Pattern(64, 1)}));
  INFO(split.status().ToString());
  REQUIRE(split.ok());
  const PtdInput& ptd = split->second;
  REQUIRE(ptd.entries.size() == 3);
  CHECK(ptd.buffers.size() == 2);
  CHECK(ptd.entries[0].buffer_index == ptd.entries[1].buffer_index);
  CHECK(ptd.entries[2].buffer_index != ptd.entries[0].buffer_index);
}

TEST_CASE("ExternalizeConstants of an input: errors") {
  SECTION("what the planner refuses") {
    PteInput in = SmallProgram({Pattern(8, 1)});
    in.constants[1] = nullptr;
    auto split = ExternalizeConstants(std::move(in));
    REQUIRE_FALSE(split.ok());
    CHECK(split.status().message() == "constants[1]: null source");
  }
  SECTION("what the split refuses") {
    PteInput in = SmallProgram({Pattern(8, 1), Pattern(8, 2)});
    for (size_t v : {0, 1}) {
      Values(in)[v].Find("val")->Set(
          "extra_tensor_info",
          json::Value::Object({{"fully_qualified_name", json::Value::String("w")}}));
    }
    auto split = ExternalizeConstants(std::move(in));
    REQUIRE_FALSE(split.ok());
    INFO(split.status().message());
    CHECK(Contains(split.status().message(),
                   "program: execution_plan[0].values[1]: fully_qualified_name 'w' is also the "
                   "name of execution_plan[0].values[0]"));
  }
  SECTION("alignment") {
    auto split = ExternalizeConstants(SmallProgram({Pattern(8, 1)}), 0);
    REQUIRE_FALSE(split.ok());
    CHECK(split.status().code() == Code::kInvalidArgument);
  }
}

TEST_CASE("PlanProgramWithData plans a program and its data files as one unit") {
  auto split = ExternalizeConstants(SmallProgram({Pattern(64, 1), Pattern(32, 2)}));
  REQUIRE(split.ok());
  PteOptions options;
  options.segment_alignment = 256;
  SECTION("data files first, each with the program's segment alignment") {
    std::vector<ExternalDataFile> data;
    data.push_back({"a.ptd", std::move(split->second)});
    data.push_back({"b.ptd", PtdInput()});
    auto plan = PlanProgramWithData("m.pte", std::move(split->first), options, std::move(data));
    INFO(plan.status().ToString());
    REQUIRE(plan.ok());
    const ArtifactFiles files = plan->files();
    REQUIRE(files.size() == 3);
    CHECK(files[0].first == "a.ptd");
    CHECK(files[1].first == "b.ptd");
    CHECK(files[2].first == "m.pte");
    CHECK(files[2].second == &plan->program.artifact);
    CHECK(plan->data[0].options.segment_alignment == 256);
    CHECK(plan->data[0].entries == 2);
    MemoryOutputFs fs;
    REQUIRE(WriteArtifactFiles(fs, files).ok());
    auto pte = Read<PteFile>("m.pte", fs.files().at("m.pte"));
    auto ptd = Read<PtdFile>("a.ptd", fs.files().at("a.ptd"));
    CHECK(CheckExternalReferences(*pte, {ptd.get()}).ok());
    CHECK(ptd->layout().segment_base_offset % 256 == 0);
  }
  SECTION("a name given twice") {
    std::vector<ExternalDataFile> data;
    data.push_back({"m.pte", std::move(split->second)});
    auto plan = PlanProgramWithData("m.pte", std::move(split->first), options, std::move(data));
    REQUIRE_FALSE(plan.ok());
    CHECK(Contains(plan.status().message(), "'m.pte' is named for two of the files"));
  }
  SECTION("errors name the file they are about") {
    split->second.entries[0].alignment = 0;
    std::vector<ExternalDataFile> data;
    data.push_back({"w.ptd", std::move(split->second)});
    auto plan = PlanProgramWithData("m.pte", std::move(split->first), options, std::move(data),
                                    "manifest.json");
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.status().message().rfind("w.ptd: ", 0) == 0);
    PteOptions bad = options;
    bad.segment_alignment = 0;
    auto program_error =
        PlanProgramWithData("m.pte", SmallProgram({Pattern(8, 1)}), bad, {}, "manifest.json");
    REQUIRE_FALSE(program_error.ok());
    CHECK(program_error.status().message().rfind("manifest.json: ", 0) == 0);
  }
}
