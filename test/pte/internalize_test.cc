// The way back (InternalizeData, `etpack repack --data`): a program split
// into a thin .pte and .ptd files comes back as the self-contained program
// it was, byte for byte where the split kept what it takes.
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>
#include "catch.h"

#include "etpack/external_data.h"
#include "etpack/ptd.h"
#include "etpack/ptd_file.h"
#include "etpack/pte.h"
#include "etpack/pte_file.h"
#include "program_etpack_generated.h"
#include "test_files.h"
#include "test_programs.h"

using namespace etpack;
using namespace etpack::testing;
namespace fb = etpack::pte_fb;

namespace {

std::vector<uint8_t> PlannedBytes(PteInput input, const PteOptions& options = {}) {
  auto plan = PlanPte(std::move(input), options);
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  return Materialize(plan->artifact);
}

std::unique_ptr<PteFile> PteOf(PteInput input, const std::string& name,
                               const PteOptions& options = {}) {
  return Read<PteFile>(name, PlannedBytes(std::move(input), options));
}

std::unique_ptr<PtdFile> PtdOf(const PtdInput& input, const std::string& name) {
  auto plan = PlanPtd(input);
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  return Read<PtdFile>(name, Materialize(plan->artifact));
}

std::unique_ptr<PteFile> OpenPte(const std::string& path) {
  auto f = PteFile::Open(path);
  INFO(f.status().ToString());
  REQUIRE(f.ok());
  return std::move(f).value();
}

std::unique_ptr<PtdFile> OpenPtd(const std::string& path) {
  auto f = PtdFile::Open(path);
  INFO(f.status().ToString());
  REQUIRE(f.ok());
  return std::move(f).value();
}

std::string FlatcJson(const PteFile& f) {
  auto j = f.ToFlatcJson();
  REQUIRE(j.ok());
  return *j;
}

// The first line where `a` and `b` differ, with its neighbours; "" when
// they are equal (Catch2 would print both whole).
std::string FirstDifferentLine(const std::string& a, const std::string& b) {
  if (a == b) return "";
  size_t at = 0, line = 1;
  while (at < a.size() && at < b.size() && a[at] == b[at]) {
    if (a[at++] == '\n') ++line;
  }
  const size_t from = at < 200 ? 0 : at - 200;
  return "line " + std::to_string(line) + ":\n" + a.substr(from, 400) + "\n---- vs ----\n" +
         b.substr(from, 400);
}

// `thin` with `data` inside, planned with `options`, read back.
std::unique_ptr<PteFile> Back(const PteFile& thin, const std::vector<const PtdFile*>& data,
                              const PteOptions& options, InternalizeStats* stats = nullptr) {
  auto in = InternalizeData(thin, data, stats);
  INFO(in.status().ToString());
  REQUIRE(in.ok());
  return PteOf(std::move(*in), "back.pte", options);
}

Status BackError(const PteFile& thin, const std::vector<const PtdFile*>& data) {
  auto in = InternalizeData(thin, data);
  REQUIRE_FALSE(in.ok());
  return in.status();
}

std::vector<uint8_t> Bytes(const Source& s) {
  auto r = ReadAll(s);
  REQUIRE(r.ok());
  return *r;
}

// Every tensor of `a` and `b` the same but for where the bytes sit: layout,
// kind, name and the bytes it reads.
void CheckSameTensors(const PteFile& a, const PteFile& b) {
  const std::vector<PteTensor> ta = a.Tensors(), tb = b.Tensors();
  REQUIRE(ta.size() == tb.size());
  for (size_t i = 0; i < ta.size(); ++i) {
    INFO("tensor " << i << " (method " << ta[i].method << ", value " << ta[i].value << ")");
    CHECK(ta[i].layout == tb[i].layout);
    CHECK(ta[i].data == tb[i].data);
    CHECK(ta[i].key == tb[i].key);
    if (ta[i].data != TensorData::kConstant) continue;
    auto sa = a.TensorSource(ta[i]), sb = b.TensorSource(tb[i]);
    REQUIRE(sa.ok());
    REQUIRE(sb.ok());
    CHECK((Bytes(**sa) == Bytes(**sb)));
  }
}

const fb::Tensor& TensorAt(const PteFile& f, uint32_t value) {
  const fb::Tensor* t = f.program().execution_plan()->Get(0)->values()->Get(value)->val_as_Tensor();
  REQUIRE(t != nullptr);
  return *t;
}

// The split of `orig` as `repack --external-constants` writes it (with the
// options of the file), read back.
std::pair<std::unique_ptr<PteFile>, std::unique_ptr<PtdFile>> Split(const PteFile& orig) {
  const PteOptions options = orig.InferredOptions();
  auto split = ExternalizeConstants(orig, options.constant_tensor_alignment);
  INFO(split.status().ToString());
  REQUIRE(split.ok());
  return {PteOf(std::move(split->first), "thin.pte", options), PtdOf(split->second, "thin.ptd")};
}

}  // namespace

TEST_CASE("every golden program: --external-constants, then the way back, is repack's file") {
  for (const auto& entry : std::filesystem::directory_iterator(GoldenDir())) {
    if (entry.path().extension() != ".pte") continue;
    const std::string name = entry.path().filename().string();
    INFO(name);
    auto orig = OpenPte(entry.path().string());
    // The split does not record the constants' alignment in the program:
    // the way back is laid out as the original was.
    const PteOptions options = orig->InferredOptions();
    std::vector<const PtdFile*> data;
    std::unique_ptr<PtdFile> golden_data;
    if (name == "pte_external.pte") {
      // Its EXTERNAL tensors are in ptd_basic: brought inside, every one
      // reads the entry's bytes and keeps its name (the exporter's).
      golden_data = OpenPtd(Golden("ptd_basic.ptd"));
      data.push_back(golden_data.get());
      InternalizeStats stats;
      auto full = Back(*orig, data, options, &stats);
      CHECK(stats.tensors == 3);
      CHECK(stats.buffers == 3);
      CHECK(CheckExternalReferences(*full, {}).ok());
      const std::vector<PteTensor> before = orig->Tensors(), after = full->Tensors();
      REQUIRE(before.size() == after.size());
      for (size_t i = 0; i < before.size(); ++i) {
        const PteTensor& t = before[i];
        if (t.data != TensorData::kExternal) continue;
        const PteTensor& now = after[i];
        CHECK(now.data == TensorData::kConstant);
        CHECK(now.key == t.key);
        auto bytes = full->TensorSource(now);
        REQUIRE(bytes.ok());
        const int64_t e = golden_data->Find(t.key);
        REQUIRE(e >= 0);
        CHECK(Bytes(**bytes) == Bytes(*golden_data->EntrySource(static_cast<size_t>(e))));
      }
    }
    auto [thin, ptd] = Split(*orig);
    std::vector<const PtdFile*> all = {ptd.get()};
    all.insert(all.end(), data.begin(), data.end());
    auto back = Back(*thin, all, options);
    CHECK(CheckExternalReferences(*back, {}).ok());

    if (name == "pte_external.pte") {
      // --external-constants numbers the moved constants by key, and the
      // way back in program order: the buffers of a program whose
      // constants are not in that order come back renumbered (its constant
      // 1 is read by value 4, after the EXTERNAL values 1-3).
      auto full = Back(*orig, data, options);
      CheckSameTensors(*full, *back);
      continue;
    }
    CHECK(data.empty());
    const std::vector<uint8_t> repacked = PlannedBytes(*orig->ToInput(), options);
    auto repacked_file = Read<PteFile>("repacked.pte", repacked);
    CHECK(FirstDifferentLine(FlatcJson(*back), FlatcJson(*repacked_file)) == "");
    auto back_again = InternalizeData(*thin, all);
    REQUIRE(back_again.ok());
    CHECK((PlannedBytes(std::move(*back_again), options) == repacked));
  }
}

namespace {

// A program as `share` leaves it (docs: the conventions of issue 27), and
// its original. Constants: 1 = A (value 0, named "w.a", on device CUDA),
// 2 = B (values 1 and 3, unnamed), 3 = C (value 2, stays inside). A and B
// move: their tensors keep data_buffer_idx, their buffers are emptied, B's
// key is made up from its content.
struct Shared {
  PteInput original;
  PteInput thin;
  PtdInput data;
};

Shared ShareLike() {
  Shared s;
  PteInput in = SmallProgram({Pattern(64, 1), Pattern(48, 2), Pattern(32, 3)});
  Values(in).push_back(Values(in)[1]);  // value 3 reads B too
  Values(in)[0].Find("val")->Set(
      "extra_tensor_info",
      json::Value::Object({{"fully_qualified_name", json::Value::String("w.a")},
                           {"device_type", json::Value::Int(1)}}));
  s.original.program = ProgramStructure::FromTree(in.program.tree());
  s.original.constants = in.constants;

  s.thin.program = ProgramStructure::FromTree(in.program.tree());
  s.thin.constants = {OwnedSource({}), OwnedSource({}), OwnedSource({}), in.constants[3]};
  auto external = [&](size_t v, const std::string& key) {
    json::Value& val = *Values(s.thin)[v].Find("val");
    json::Value* info = val.Find("extra_tensor_info");
    if (info == nullptr || info->is_null()) {
      val.Set("extra_tensor_info", json::Value::Object({}));
      info = val.Find("extra_tensor_info");
    }
    info->Set("fully_qualified_name", json::Value::String(key));
    info->Set("location", json::Value::Int(1));
  };
  external(0, "w.a");
  external(1, "etpack.content.0123456789abcdef");
  external(3, "etpack.content.0123456789abcdef");
  s.data.buffers = {in.constants[1], in.constants[2]};
  s.data.entries = {{"w.a", 0, 16, TensorLayout{0, {64}, {0}}},
                    {"etpack.content.0123456789abcdef", 1, 16, TensorLayout{0, {48}, {0}}}};
  return s;
}

}  // namespace

TEST_CASE("the way back of a share-like program is the original, byte for byte") {
  Shared s = ShareLike();
  const std::vector<uint8_t> original = PlannedBytes(std::move(s.original));
  auto thin = PteOf(std::move(s.thin), "thin.pte");
  auto data = PtdOf(s.data, "shared.ptd");
  REQUIRE(CheckExternalReferences(*thin, {data.get()}).ok());

  InternalizeStats stats;
  auto back = InternalizeData(*thin, {data.get()}, &stats);
  INFO(back.status().ToString());
  REQUIRE(back.ok());
  CHECK(stats.tensors == 3);
  CHECK(stats.buffers == 2);
  CHECK(stats.named_data == 0);
  auto out = PlannedBytes(std::move(*back));
  CHECK((out == original));
  auto file = Read<PteFile>("back.pte", out);
  // The exporter's name and the other field stay; the made-up key goes,
  // with the extra_tensor_info it leaves with defaults only.
  CHECK(TensorAt(*file, 0).extra_tensor_info()->fully_qualified_name()->str() == "w.a");
  CHECK(TensorAt(*file, 0).extra_tensor_info()->device_type() == fb::DeviceType::CUDA);
  CHECK(TensorAt(*file, 1).extra_tensor_info() == nullptr);
  CHECK(TensorAt(*file, 3).extra_tensor_info() == nullptr);
  CHECK(TensorAt(*file, 1).data_buffer_idx() == 2);
  CHECK(TensorAt(*file, 3).data_buffer_idx() == 2);
}

TEST_CASE("the way back appends a buffer where the tensor's own cannot take the bytes") {
  Shared s = ShareLike();
  SECTION("a tensor inside still reads it") {
    // Value 2 (inside) reads buffer 2 too: B's bytes cannot go there.
    Values(s.thin)[2].Find("val")->Set("data_buffer_idx", json::Value::UInt(2));
    Values(s.thin)[2].Find("val")->Set("sizes", IntArray({1}));
    s.thin.constants[2] = Pattern(1, 9);
    auto thin = PteOf(std::move(s.thin), "thin.pte");
    auto data = PtdOf(s.data, "shared.ptd");
    auto back = Back(*thin, {data.get()}, {});
    CHECK(TensorAt(*back, 0).data_buffer_idx() == 1);
    CHECK(TensorAt(*back, 1).data_buffer_idx() == 4);  // appended, once for both
    CHECK(TensorAt(*back, 3).data_buffer_idx() == 4);
    CHECK(TensorAt(*back, 2).data_buffer_idx() == 2);
    CHECK(back->constant_buffers().size() == 5);
  }
  SECTION("out of range, or the placeholder") {
    Values(s.thin)[1].Find("val")->Set("data_buffer_idx", json::Value::UInt(0));
    Values(s.thin)[3].Find("val")->Set("data_buffer_idx", json::Value::UInt(7));
    auto thin = PteOf(std::move(s.thin), "thin.pte");
    auto data = PtdOf(s.data, "shared.ptd");
    auto back = Back(*thin, {data.get()}, {});
    CHECK(TensorAt(*back, 1).data_buffer_idx() == 4);
    CHECK(TensorAt(*back, 3).data_buffer_idx() == 4);
    auto sb = back->TensorSource(back->Tensors()[1]);
    REQUIRE(sb.ok());
    CHECK(Bytes(**sb) == Bytes(*Pattern(48, 2)));
  }
}

TEST_CASE("the way back: what is wrong with the data is named") {
  Shared s = ShareLike();
  auto thin = PteOf(std::move(s.thin), "thin.pte");

  SECTION("a missing key names the key, the program and the tensor") {
    PtdInput only_a = s.data;
    only_a.entries.pop_back();
    auto data = PtdOf(only_a, "a.ptd");
    const Status st = BackError(*thin, {data.get()});
    CHECK(st.code() == Code::kNotFound);
    INFO(st.message());
    CHECK(Contains(st.message(),
                   "thin.pte: execution_plan[0].values[1]: EXTERNAL key "
                   "'etpack.content.0123456789abcdef' is not in a.ptd"));
  }
  SECTION("a key in two files names both") {
    auto a = PtdOf(s.data, "a.ptd");
    PtdInput only_a = s.data;
    only_a.entries.pop_back();
    auto b = PtdOf(only_a, "b.ptd");
    const Status st = BackError(*thin, {a.get(), b.get()});
    CHECK(st.code() == Code::kInvalidArgument);
    CHECK(Contains(st.message(), "key 'w.a' is in both a.ptd and b.ptd"));
  }
  SECTION("a layout mismatch names both layouts") {
    PtdInput other = s.data;
    other.entries[0].layout = TensorLayout{0, {8, 8}, {0, 1}};
    auto data = PtdOf(other, "x.ptd");
    const Status st = BackError(*thin, {data.get()});
    CHECK(st.code() == Code::kInvalidArgument);
    INFO(st.message());
    CHECK(Contains(st.message(), "thin.pte: execution_plan[0].values[0]: tensor"));
    CHECK(Contains(st.message(), "but key 'w.a' in x.ptd is"));
  }
  SECTION("no data at all") {
    const Status st = BackError(*thin, {});
    CHECK(Contains(st.message(), "is not in any data file (none given)"));
  }
}

TEST_CASE("the way back brings named data in") {
  // A program with named data of its own, whose other keys went to a .ptd
  // (as pack --external-named-data or share leave them).
  PteInput full = SmallProgram({Pattern(16, 1)});
  full.named_data = {{"own", Pattern(100, 4), 16},
                     {"blob.a", Pattern(300, 5), 64},
                     {"blob.b", Pattern(300, 5), 64}};
  PteInput thin_in = SmallProgram({Pattern(16, 1)});
  thin_in.named_data = {full.named_data[0]};
  auto thin = PteOf(std::move(thin_in), "thin.pte");
  PtdInput blobs;
  blobs.buffers = {Pattern(300, 5), Pattern(8, 6)};
  blobs.entries = {{"blob.a", 0, 64, std::nullopt},
                   {"blob.b", 0, 64, std::nullopt},
                   // A tensor entry no EXTERNAL tensor uses stays out.
                   {"unused.tensor", 1, 16, TensorLayout{0, {8}, {0}}}};

  SECTION("every blob of the files, after the program's own keys") {
    PtdOptions integrity;
    integrity.integrity_table = true;  // its table is not named data
    auto plan = PlanPtd(blobs, integrity);
    REQUIRE(plan.ok());
    auto data = Read<PtdFile>("blobs.ptd", Materialize(plan->artifact));
    InternalizeStats stats;
    auto back = InternalizeData(*thin, {data.get()}, &stats);
    REQUIRE(back.ok());
    CHECK(stats.tensors == 0);
    CHECK(stats.named_data == 2);
    REQUIRE(back->named_data.size() == 3);
    CHECK(back->named_data[1].key == "blob.a");
    CHECK(back->named_data[2].key == "blob.b");
    // One content, one source: stored once, read once.
    CHECK(back->named_data[1].source == back->named_data[2].source);
    auto file = PteOf(std::move(*back), "back.pte");
    CHECK(file->named_data().size() == 3);
    auto original = PteOf(std::move(full), "full.pte");
    CHECK(FirstDifferentLine(FlatcJson(*file), FlatcJson(*original)) == "");
  }
  SECTION("a blob whose key the program has is refused") {
    blobs.entries.push_back({"own", 1, 1, std::nullopt});
    auto data = PtdOf(blobs, "blobs.ptd");
    const Status st = BackError(*thin, {data.get()});
    CHECK(st.code() == Code::kInvalidArgument);
    CHECK(Contains(st.message(),
                   "thin.pte: named-data key 'own' is both the program's own and in blobs.ptd"));
  }
}

TEST_CASE("the way back of a program without EXTERNAL tensors is ToInput") {
  auto orig = OpenPte(Golden("pte_constants.pte"));
  PtdInput unrelated;
  unrelated.buffers = {Pattern(8, 1)};
  unrelated.entries = {{"t", 0, 16, TensorLayout{0, {8}, {0}}}};
  auto data = PtdOf(unrelated, "u.ptd");
  InternalizeStats stats;
  auto back = InternalizeData(*orig, {data.get()}, &stats);
  REQUIRE(back.ok());
  CHECK(stats.tensors == 0);
  CHECK(stats.buffers == 0);
  CHECK(stats.named_data == 0);
  // The data file is an input all the same: no output may replace it.
  CHECK(back->read.size() == 2);
  CHECK((PlannedBytes(std::move(*back), orig->InferredOptions()) ==
         PlannedBytes(*orig->ToInput(), orig->InferredOptions())));
}

TEST_CASE("the way back of an EXTERNAL memory-planned tensor is its initial value") {
  PteInput in;
  ProgramBuilder program;
  MethodBuilder& forward = program.AddMethod("forward");
  forward.PlannedTensor({0, {16}, {}}, 1, 0);
  forward.SetNonConstBufferSizes({0, 64});
  in.program = std::move(program).Build();
  json::Value& val = *Values(in)[0].Find("val");
  val.Set("extra_tensor_info",
          json::Value::Object({{"fully_qualified_name", json::Value::String("state.h")},
                               {"location", json::Value::Int(1)}}));
  auto thin = PteOf(std::move(in), "thin.pte");
  PtdInput d;
  d.buffers = {Pattern(16, 3)};
  d.entries = {{"state.h", 0, 16, TensorLayout{0, {16}, {0}}}};
  auto data = PtdOf(d, "state.ptd");
  auto back = Back(*thin, {data.get()}, {});
  const PteTensor t = back->Tensors()[0];
  CHECK(t.data == TensorData::kMutable);
  CHECK(t.buffer_index == 1);
  CHECK(t.key == "state.h");
  auto bytes = back->TensorSource(t);
  REQUIRE(bytes.ok());
  CHECK(Bytes(**bytes) == Bytes(*Pattern(16, 3)));
}

TEST_CASE("the way back drops only the keys --external-constants made up") {
  // Values 0 and 2 read constant 1, value 1 reads constant 2. Value 2 is
  // named by its exporter as the split would name value 1, so value 1's
  // key becomes "constant.forward.1.1"; value 0 has a name of its own.
  PteInput in = SharedBufferProgram();
  auto name = [&](size_t v, const std::string& fqn) {
    Values(in)[v].Find("val")->Set(
        "extra_tensor_info",
        json::Value::Object({{"fully_qualified_name", json::Value::String(fqn)}}));
  };
  name(0, "w.main");
  name(2, "constant.forward.1");
  auto orig = PteOf(std::move(in), "m.pte");
  auto [thin, ptd] = Split(*orig);
  CHECK(ptd->Find("constant.forward.1.1") >= 0);
  auto back = Back(*thin, {ptd.get()}, orig->InferredOptions());
  CHECK(TensorAt(*back, 1).extra_tensor_info() == nullptr);
  CHECK(TensorAt(*back, 2).extra_tensor_info()->fully_qualified_name()->str() ==
        "constant.forward.1");
  auto repacked = PteOf(*orig->ToInput(), "r.pte", orig->InferredOptions());
  CHECK(FirstDifferentLine(FlatcJson(*back), FlatcJson(*repacked)) == "");
}
