// etpack/share.h: families of programs made thin around one shared .ptd.
// Every family is checked the same way (CheckFamily): each thin program
// verifies with its data files, decodes to its original except for the
// moved data's locations, and finds the original's bytes under every key
// it now looks up.

#include "etpack/share.h"

#include <filesystem>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>
#include "catch.h"

#include "etpack/external_data.h"
#include "etpack/json.h"
#include "etpack/ptd.h"
#include "etpack/ptd_file.h"
#include "etpack/pte.h"
#include "etpack/pte_file.h"
#include "etpack/verify.h"
#include "etpack/writer.h"
#include "share_test_util.h"
#include "test_files.h"
#include "test_programs.h"

namespace etpack {
namespace {

using json::Value;
using testing::Pattern;
using testing::SmallProgram;
using testing::TempDir;

Value Fqn(const std::string& name) {
  return Value::Object({{"fully_qualified_name", Value::String(name)}});
}

// A variant of an LLM-shaped family: weights w1, w2 shared by all, a mask
// of its own size (as a causal mask per context window), a small bias,
// one delegate payload and named data shared by all. `names`: the
// constants carry fully_qualified_names.
PteInput Variant(int v, bool names) {
  PteInput in =
      SmallProgram({Pattern(8192, 1), Pattern(16384, 2),
                    Pattern(4096 * (v + 1), static_cast<uint8_t>(50 + v)), Pattern(100, 3)},
                   {Pattern(5000, 7)});
  if (names) {
    auto& values = testing::Values(in);
    const char* fqn[] = {"w1", "w2", "mask", "bias"};
    for (int i = 0; i < 4; ++i) values[i].Find("val")->Set("extra_tensor_info", Fqn(fqn[i]));
  }
  in.named_data = {{"xnn.weight", Pattern(6000, 9), 16}};
  return in;
}

std::vector<std::string> WriteFamily(const TempDir& dir, int n, bool names) {
  std::vector<std::string> paths;
  for (int v = 0; v < n; ++v) {
    paths.push_back(dir.File("v" + std::to_string(v) + ".pte"));
    Status s = WritePte(paths.back(), Variant(v, names));
    INFO(s.ToString());
    REQUIRE(s.ok());
  }
  return paths;
}

SharePlan Plan(const std::vector<std::string>& paths, const ShareOptions& options) {
  Result<SharePlan> plan = PlanShare(paths, options);
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  return std::move(plan).value();
}

SharePlan Share(const std::vector<std::string>& paths, const ShareOptions& options) {
  SharePlan plan = Plan(paths, options);
  Status s = WriteShare(plan);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return plan;
}

Value Decoded(const PteFile& f) {
  Result<std::string> text = f.ToFlatcJson();
  REQUIRE(text.ok());
  // flatc writes non-finite doubles bare (inf, nan): as strings here.
  const std::string strict =
      std::regex_replace(*text, std::regex(R"(([:\[,]\s*)(-?inf|-?nan)\b)"), "$1\"$2\"");
  Result<Value> doc = json::Parse(strict);
  INFO(doc.status().ToString());
  REQUIRE(doc.ok());
  return std::move(doc).value();
}

std::unique_ptr<PteFile> OpenPte(const std::string& path) {
  Result<std::unique_ptr<PteFile>> f = PteFile::Open(path);
  INFO(f.status().ToString());
  REQUIRE(f.ok());
  return std::move(f).value();
}

// The entry `key` of the data files, and which file holds it.
struct Found {
  const PtdFile* file = nullptr;
  size_t entry = 0;
};
Found Lookup(const std::vector<std::unique_ptr<PtdFile>>& data, const std::string& key) {
  for (const auto& f : data) {
    const int64_t i = f->Find(key);
    if (i >= 0) return {f.get(), static_cast<size_t>(i)};
  }
  return {};
}

bool Same(const SourcePtr& a, const SourcePtr& b) {
  Result<bool> same = SameBytes(*a, *b);
  REQUIRE(same.ok());
  return *same;
}

// The thin program `thin` against its original `original` with its data
// files `data`: it decodes to the original but for the moved tensors'
// extra_tensor_info (EXTERNAL under a key, every other field kept), the
// moved named-data keys and the layout fields (segments, constant_segment,
// constant_buffer, named_data segment indices); every key it looks up in
// `data` holds the original's bytes. Returns the keys it looks up.
std::vector<std::unique_ptr<PtdFile>> OpenAll(const std::vector<std::string>& paths) {
  std::vector<std::unique_ptr<PtdFile>> data;
  for (const std::string& p : paths) {
    Result<std::unique_ptr<PtdFile>> f = PtdFile::Open(p);
    REQUIRE(f.ok());
    data.push_back(std::move(f).value());
  }
  return data;
}

// `own_paths`: the original's own .ptd files whose entries its thin
// program took in (ShareFileReport::taken_from): an EXTERNAL tensor of the
// original may now be a constant holding its entry's bytes, and their
// blobs may be the thin program's named data.
std::set<std::string> CheckThin(const std::string& original, const std::string& thin,
                                const std::vector<std::string>& data_paths,
                                const std::vector<std::string>& own_paths = {}) {
  INFO(thin);
  auto o = OpenPte(original);
  auto t = OpenPte(thin);
  std::vector<std::unique_ptr<PtdFile>> data = OpenAll(data_paths);
  std::vector<std::unique_ptr<PtdFile>> own = OpenAll(own_paths);
  Value expected = Decoded(*o), actual = Decoded(*t);
  std::set<std::string> keys;

  // Tensors: a moved constant is EXTERNAL under a key holding its bytes.
  const std::vector<PteTensor> before = o->Tensors(), after = t->Tensors();
  REQUIRE(before.size() == after.size());
  auto& plans = expected.Find("execution_plan")->items();
  const auto& thin_plans = actual.Find("execution_plan")->items();
  for (size_t i = 0; i < before.size(); ++i) {
    const PteTensor &b = before[i], &a = after[i];
    if (b.data == TensorData::kExternal && a.data == TensorData::kConstant) {
      // Taken in: the bytes of its own .ptd's entry, its name kept.
      INFO("taken in: execution_plan[" << a.method << "].values[" << a.value << "] " << b.key);
      CHECK(a.key == b.key);
      const Found found = Lookup(own, b.key);
      REQUIRE(found.file != nullptr);
      Result<SourcePtr> bytes = t->TensorSource(a);
      REQUIRE(bytes.ok());
      CHECK(Same(SliceSource(found.file->EntrySource(found.entry), 0, *a.nbytes), *bytes));
      Value& val = *plans[a.method].Find("values")->items()[a.value].Find("val");
      const Value& thin_val = *thin_plans[a.method].Find("values")->items()[a.value].Find("val");
      for (const char* field : {"extra_tensor_info", "data_buffer_idx"}) {
        const Value* v = thin_val.Find(field);
        val.Set(field, v ? *v : Value::Null());
      }
      continue;
    }
    if (a.data != TensorData::kExternal || b.data == TensorData::kExternal) {
      CHECK(a.data == b.data);
      continue;
    }
    INFO("execution_plan[" << a.method << "].values[" << a.value << "] key " << a.key);
    REQUIRE(b.data == TensorData::kConstant);
    Value& val = *plans[a.method].Find("values")->items()[a.value].Find("val");
    const Value& thin_val = *thin_plans[a.method].Find("values")->items()[a.value].Find("val");
    Value info = *thin_val.Find("extra_tensor_info");
    CHECK(info.Find("location")->as_string() == "EXTERNAL");
    CHECK(info.Find("fully_qualified_name")->as_string() == a.key);
    // Every other field as it was (a missing table: its defaults).
    const Value* old_info = val.Find("extra_tensor_info");
    Value kept = old_info && !old_info->is_null()
                     ? *old_info
                     : Value::Object({{"mutable_data_segments_idx", Value::UInt(0)},
                                      {"fully_qualified_name", Value::String("")},
                                      {"location", Value::String("SEGMENT")},
                                      {"device_type", Value::String("CPU")},
                                      {"device_index", Value::UInt(0)}});
    kept.Set("fully_qualified_name", Value::String(a.key));
    kept.Set("location", Value::String("EXTERNAL"));
    CHECK(json::Print(kept) == json::Print(info));
    val.Set("extra_tensor_info", info);
    const Found found = Lookup(data, a.key);
    REQUIRE(found.file != nullptr);
    Result<SourcePtr> bytes = o->TensorSource(b);
    REQUIRE(bytes.ok());
    CHECK(Same(SliceSource(found.file->EntrySource(found.entry), 0, *a.nbytes), *bytes));
    keys.insert(a.key);
  }
  // Named data: the keys gone hold their bytes in `data`.
  std::set<std::string> thin_named, original_named;
  for (const PteNamedData& n : o->named_data()) original_named.insert(n.key);
  for (const PteNamedData& n : t->named_data()) {
    if (n.key == kNamedDataOrderKey) continue;  // checked by the way back
    if (original_named.count(n.key)) {
      thin_named.insert(n.key);
      continue;
    }
    // Taken in from its own .ptd: the entry's bytes.
    INFO("named data taken in " << n.key);
    const Found found = Lookup(own, n.key);
    REQUIRE(found.file != nullptr);
    CHECK(Same(found.file->EntrySource(found.entry), t->SegmentSource(n.segment_index)));
  }
  for (const PteNamedData& n : o->named_data()) {
    if (thin_named.count(n.key)) continue;
    INFO("named data " << n.key);
    const Found found = Lookup(data, n.key);
    REQUIRE(found.file != nullptr);
    CHECK(Same(found.file->EntrySource(found.entry), o->SegmentSource(n.segment_index)));
    keys.insert(n.key);
  }
  auto strip = [](Value& program, const std::set<std::string>& keep) {
    for (const char* field : {"segments", "constant_segment", "constant_buffer"}) {
      program.Set(field, Value::Null());
    }
    std::vector<Value> named;
    if (const Value* nd = program.Find("named_data"); nd && !nd->is_null()) {
      for (const Value& n : nd->items()) {
        if (keep.count(n.Find("key")->as_string())) named.push_back(*n.Find("key"));
      }
    }
    program.Set("named_data", Value::Array(std::move(named)));
  };
  strip(expected, thin_named);
  strip(actual, thin_named);
  CHECK(json::Print(expected, 1) == json::Print(actual, 1));
  return keys;
}

// The way back (InternalizeData, `repack --data`): `thin` with `data`
// brought inside decodes to `original`, the layout fields (segments,
// constant_segment, constant_buffer, where named data lies) aside: named
// data comes back in its order. Only for an original without EXTERNAL tensors: the way back brings
// in the data the original held outside too.
void CheckWayBack(const std::string& original, const std::string& thin,
                  const std::vector<std::string>& data_paths) {
  INFO("way back of " << thin);
  for (const PteTensor& t : OpenPte(original)->Tensors()) {
    if (t.data == TensorData::kExternal) return;
  }
  auto t = OpenPte(thin);
  std::vector<std::unique_ptr<PtdFile>> data;
  std::vector<const PtdFile*> files;
  for (const std::string& p : data_paths) {
    Result<std::unique_ptr<PtdFile>> f = PtdFile::Open(p);
    REQUIRE(f.ok());
    data.push_back(std::move(f).value());
    files.push_back(data.back().get());
  }
  Result<PteInput> full = InternalizeData(*t, files);
  INFO(full.status().ToString());
  REQUIRE(full.ok());
  Result<PtePlan> plan = PlanPte(std::move(full).value(), t->InferredOptions());
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  auto back = testing::Read<PteFile>("back.pte", testing::Materialize(plan->artifact));
  auto strip = [](Value program) {
    for (const char* field : {"segments", "constant_segment", "constant_buffer"}) {
      program.Set(field, Value::Null());
    }
    std::vector<Value> named;
    if (const Value* nd = program.Find("named_data"); nd && !nd->is_null()) {
      for (const Value& n : nd->items()) named.push_back(*n.Find("key"));
    }
    program.Set("named_data", Value::Array(std::move(named)));
    return json::Print(program, 1);
  };
  CHECK(strip(Decoded(*OpenPte(original))) == strip(Decoded(*back)));
}

// What every family must satisfy: each thin program verifies with the data
// files the report gives it and decodes to its original; the shared file
// holds each key once, in key order.
// `way_back`: also check that the way back restores each original (not
// where a constant's name is replaced by a content key: see the test
// "names are kept where they mean the same bytes everywhere").
void CheckFamily(const std::vector<std::string>& inputs, const SharePlan& plan,
                 bool way_back = true) {
  const ShareReport& r = plan.report;
  REQUIRE(r.files.size() == inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ShareFileReport& f = r.files[i];
    CHECK(f.input == inputs[i]);
    if (f.kind != ArtifactKind::kPte) {
      CHECK(f.output.empty());  // a .ptd input is never written
      continue;
    }
    // One data file set for every program: the shared file(s), nothing of
    // its own (a loader taking one data file loads it).
    for (const std::string& d : f.data) {
      CHECK(std::count(r.shared_files.begin(), r.shared_files.end(), d) == 1);
    }
    const VerifyReport v = testing::CheckVerifies(f);
    if (!f.data.empty()) CHECK(v.external_resolved);
    CheckThin(f.input, f.output, f.data, f.taken_from);
    if (way_back) CheckWayBack(f.input, f.output, f.data);
  }
  std::vector<std::string> keys;
  for (const ShareEntry& e : r.entries) keys.push_back(e.key);
  CHECK(std::is_sorted(keys.begin(), keys.end()));
  CHECK(std::set<std::string>(keys.begin(), keys.end()).size() == keys.size());
  uint64_t after = r.shared_bytes;
  for (const ShareFileReport& f : r.files) after += f.bytes_after;
  CHECK(r.bytes_after == after);
}

uint64_t FileSize(const std::string& path) { return std::filesystem::file_size(path); }

TEST_CASE("share: weights shared by variants move once; each variant's own constant stays") {
  TempDir dir;
  const std::vector<std::string> in = WriteFamily(dir, 3, false);
  ShareOptions options;
  options.out_dir = dir.File("out");
  const SharePlan plan = Share(in, options);
  CheckFamily(in, plan);
  const ShareReport& r = plan.report;

  // w1, w2 (content keys: they have no names) and the named data.
  REQUIRE(r.entries.size() == 3);
  std::map<uint64_t, const ShareEntry*> by_size;
  for (const ShareEntry& e : r.entries) by_size[e.size] = &e;
  for (uint64_t n : {8192, 16384}) {
    REQUIRE(by_size.count(n));
    const std::string& key = by_size[n]->key;
    CHECK(key.rfind(kContentKeyPrefix, 0) == 0);
    CHECK(key.size() == std::string(kContentKeyPrefix).size() + 32);
    CHECK(by_size[n]->files == std::vector<uint32_t>{0, 1, 2});
    REQUIRE(by_size[n]->tensor_layout);
  }
  REQUIRE(by_size.count(6000));
  CHECK(by_size[6000]->key == "xnn.weight");
  CHECK_FALSE(by_size[6000]->tensor_layout);
  CHECK(r.shared_files == std::vector<std::string>{dir.File("out") + "/shared.ptd"});
  CHECK(r.shared_bytes == FileSize(r.shared_files[0]));
  for (size_t i = 0; i < 3; ++i) {
    const ShareFileReport& f = r.files[i];
    CHECK(f.output == dir.File("out") + "/v" + std::to_string(i) + ".pte");
    CHECK(f.bytes_before == FileSize(in[i]));
    CHECK(f.bytes_after == FileSize(f.output));
    CHECK(f.bytes_moved == 8192 + 16384 + 6000);
    CHECK(f.items_moved == 3);
    CHECK(f.data == r.shared_files);
    // The mask (this variant's own) and the bias (under 4096 bytes) stay.
    auto thin = OpenPte(f.output);
    int constants = 0;
    for (const PteTensor& t : thin->Tensors()) constants += t.data == TensorData::kConstant;
    CHECK(constants == 2);
  }
  CHECK(r.bytes_after < r.bytes_before);
  // What stayed duplicated, and why.
  std::set<std::string> reasons;
  for (const SharedContent& c : r.analysis.contents) {
    if (!c.shareable) reasons.insert(c.reason);
  }
  CHECK(reasons ==
        std::set<std::string>{"delegate payloads have no external form", "below min_bytes"});
  // No input changed; the JSON report is the typed one.
  const Value j = ShareReportJson(r);
  CHECK(j.Find("files")->items().size() == 3);
  CHECK(j.Find("entries")->items().size() == 3);
  CHECK(j.Find("stayed")->items().size() == 2);
  CHECK(j.Find("bytes_saved")->as_int() ==
        static_cast<int64_t>(r.bytes_before) - static_cast<int64_t>(r.bytes_after));
}

// Named data of `keys`, in that order: a key starting with "own" holds
// bytes of variant `v` alone, every other key the same bytes in every
// variant.
std::vector<std::string> WriteNamedFamily(const TempDir& dir,
                                          const std::vector<std::string>& keys) {
  std::vector<std::string> paths;
  for (int v = 0; v < 2; ++v) {
    PteInput in = Variant(v, false);
    in.named_data.clear();
    for (size_t i = 0; i < keys.size(); ++i) {
      const bool own = keys[i].rfind("own", 0) == 0;
      in.named_data.push_back(
          {keys[i], Pattern(5000, static_cast<uint8_t>(own ? 100 + v : 20 + i)), 16});
    }
    paths.push_back(dir.File("v" + std::to_string(v) + ".pte"));
    REQUIRE(WritePte(paths.back(), std::move(in)).ok());
  }
  return paths;
}

bool RecordsOrder(const std::string& pte) {
  const auto file = OpenPte(pte);
  for (const PteNamedData& n : file->named_data()) {
    if (n.key == kNamedDataOrderKey) return true;
  }
  return false;
}

TEST_CASE("share: the way back restores the order of named data") {
  TempDir dir;
  ShareOptions options;
  options.out_dir = dir.File("out");
  SECTION("moved keys out of key order") {
    const std::vector<std::string> in = WriteNamedFamily(dir, {"zeta", "own", "alpha"});
    const SharePlan plan = Share(in, options);
    CheckFamily(in, plan);
    CHECK(RecordsOrder(plan.report.files[0].output));
  }
  SECTION("the shared file as shards, given in any order") {
    options.max_shard_bytes = 20000;
    const std::vector<std::string> in = WriteNamedFamily(dir, {"zeta", "mid", "alpha"});
    const SharePlan plan = Share(in, options);
    REQUIRE(plan.report.shared_files.size() >= 2);
    CheckFamily(in, plan);
    const ShareFileReport& f = plan.report.files[0];
    CheckWayBack(f.input, f.output, {f.data.rbegin(), f.data.rend()});
  }
  SECTION("an order the way back gives anyway is not recorded") {
    const std::vector<std::string> in = WriteNamedFamily(dir, {"own", "alpha", "zeta"});
    const SharePlan plan = Share(in, options);
    CheckFamily(in, plan);
    CHECK_FALSE(RecordsOrder(plan.report.files[0].output));
  }
}

TEST_CASE("share agrees with inspect --sizes on what moves") {
  TempDir dir;
  const std::vector<std::string> in = WriteFamily(dir, 3, true);
  Result<FileSizes> sizes = SizesOfFiles(in);
  REQUIRE(sizes.ok());
  ShareOptions options;
  options.out_dir = dir.File("out");
  const SharePlan plan = Plan(in, options);
  uint64_t moved = 0;
  for (const ShareFileReport& f : plan.report.files) moved += f.bytes_moved;
  uint64_t shared = 0;
  for (const ShareEntry& e : plan.report.entries) shared += e.size;
  // Bytes saved = bytes moved out of the files - the one copy kept.
  CHECK(sizes->shared.bytes_saved == moved - shared);
  CHECK(SharedReportJson(sizes->shared) == SharedReportJson(plan.report.analysis));
  // A plan writes nothing.
  CHECK_FALSE(std::filesystem::exists(dir.File("out")));
}

TEST_CASE("share: names are kept where they mean the same bytes everywhere") {
  TempDir dir;
  std::vector<std::string> in;
  for (int v = 0; v < 3; ++v) {
    PteInput p = Variant(v, true);
    // The mask of v0 and v1 is alike; v2's "mask" holds other bytes (and
    // the same size): the shared copy cannot be called "mask".
    p.constants[3] = Pattern(8000, v == 2 ? 60 : 61);
    testing::Values(p)[2].Find("val")->Find("sizes")->items()[0] = Value::Int(8000);
    // A named-data key meaning other bytes in v2: not moved, reported.
    p.named_data.push_back({"xnn.table", Pattern(4500, v == 2 ? 40 : 41), 16});
    in.push_back(dir.File("v" + std::to_string(v) + ".pte"));
    REQUIRE(WritePte(in.back(), std::move(p)).ok());
  }
  ShareOptions options;
  options.out_dir = dir.File("out");
  const SharePlan plan = Share(in, options);
  // The way back cannot restore "mask" on v0 and v1: their shared mask is
  // found by a content key, which the way back drops (the name is not
  // recorded anywhere else in the thin program).
  CheckFamily(in, plan, /*way_back=*/false);
  CheckWayBack(in[2], plan.report.files[2].output, plan.report.files[2].data);
  std::map<std::string, const ShareEntry*> by_key;
  for (const ShareEntry& e : plan.report.entries) by_key[e.key] = &e;
  CHECK(by_key.count("w1"));
  CHECK(by_key.count("w2"));
  CHECK(by_key.count("xnn.weight"));
  CHECK_FALSE(by_key.count("mask"));
  CHECK_FALSE(by_key.count("xnn.table"));
  REQUIRE(by_key.size() == 4);
  const ShareEntry* mask = nullptr;
  for (const auto& [key, e] : by_key) {
    if (key.rfind(kContentKeyPrefix, 0) == 0) mask = e;
  }
  REQUIRE(mask != nullptr);
  CHECK(mask->size == 8000);
  CHECK(mask->files == std::vector<uint32_t>{0, 1});
  REQUIRE(plan.report.analysis.conflicts.size() == 1);
  CHECK(plan.report.analysis.conflicts[0].key == "xnn.table");
  CHECK(plan.report.analysis.conflicts[0].entry_files.empty());
  // v2 keeps its own mask.
  CHECK(plan.report.files[2].items_moved == 3);
  CHECK(plan.report.files[0].items_moved == 4);
}

// A program reading "w1" from a .ptd, plus a constant of its own.
PteInput ExternalVariant() {
  PteInput in;
  ProgramBuilder program;
  MethodBuilder& forward = program.AddMethod("forward");
  forward.ExternalTensor({0, {8192}, {}}, "w1");
  forward.ExternalTensor({0, {5000}, {}}, "own");
  forward.ConstantTensor({0, {16384}, {}}, 1);
  in.constants = {OwnedSource({}), Pattern(16384, 2)};
  in.program = std::move(program).Build();
  return in;
}

TEST_CASE("share: a family where one program already uses a .ptd") {
  TempDir dir;
  std::vector<std::string> in = WriteFamily(dir, 2, true);
  in.push_back(dir.File("x.pte"));
  REQUIRE(WritePte(in.back(), ExternalVariant()).ok());
  PtdInput data;
  data.buffers = {Pattern(8192, 1), Pattern(5000, 77)};
  data.entries = {{"w1", 0, 16, TensorLayout{0, {8192}, {0}}},
                  {"own", 1, 16, TensorLayout{0, {5000}, {0}}}};
  in.push_back(dir.File("x.ptd"));
  REQUIRE(WritePtd(in.back(), data).ok());

  ShareOptions options;
  options.out_dir = dir.File("out");
  const SharePlan plan = Share(in, options);
  CheckFamily(in, plan);
  const ShareReport& r = plan.report;
  // w1 (constants and the entry alike), w2 (two constants named so, and
  // x's unnamed one under a content key: a name is kept where there is
  // one, never given), the named data of v0 and v1.
  std::set<std::string> keys;
  for (const ShareEntry& e : r.entries) keys.insert(e.key);
  REQUIRE(keys.size() == 4);
  CHECK(keys.count("w1"));
  CHECK(keys.count("w2"));
  CHECK(keys.count("xnn.weight"));
  CHECK(keys.begin()->rfind(kContentKeyPrefix, 0) == 0);
  // x.ptd is not written: "own" (x's alone) is inside x.pte, which loads
  // with the shared file alone.
  const ShareFileReport& x = r.files[2];
  const ShareFileReport& xd = r.files[3];
  CHECK(xd.kind == ArtifactKind::kPtd);
  CHECK(xd.output.empty());
  CHECK_FALSE(std::filesystem::exists(dir.File("out/x.ptd")));
  CHECK(xd.items_moved == 1);
  CHECK(xd.into == std::vector<std::string>{r.shared_files[0], x.output});
  CHECK(x.data == r.shared_files);
  CHECK(x.items_taken == 1);
  CHECK(x.bytes_taken == 5000);
  CHECK(x.taken_from == std::vector<std::string>{in[3]});
  bool own_inside = false;
  for (const PteTensor& t : OpenPte(x.output)->Tensors()) {
    if (t.key == "own") own_inside = t.data == TensorData::kConstant;
  }
  CHECK(own_inside);
}

// A variant exported with its weights in a .ptd of its own: w (the same in
// every variant), a rope table of the variant's size under one name in all
// (different bytes each), and a delegate's blob of its own.
void WriteDataVariant(const TempDir& dir, int v, std::vector<std::string>* paths) {
  const std::string stem = "ctx" + std::to_string(v);
  PteInput in;
  ProgramBuilder program;
  MethodBuilder& forward = program.AddMethod("forward");
  forward.ExternalTensor({0, {8192}, {}}, "w");
  forward.ExternalTensor({0, {static_cast<int32_t>(1000 * (v + 1))}, {}}, "rope");
  in.program = std::move(program).Build();
  paths->push_back(dir.File(stem + ".pte"));
  REQUIRE(WritePte(paths->back(), in).ok());
  PtdInput data;
  data.buffers = {Pattern(8192, 1), Pattern(1000 * (v + 1), static_cast<uint8_t>(60 + v)),
                  Pattern(6000, static_cast<uint8_t>(80 + v)), Pattern(7000, 5)};
  data.entries = {{"w", 0, 16, TensorLayout{0, {8192}, {0}}},
                  {"rope", 1, 16, TensorLayout{0, {1000 * (v + 1)}, {0}}},
                  {"xnn.own", 2, 16, std::nullopt},
                  {"xnn.same", 3, 16, std::nullopt}};
  paths->push_back(dir.File(stem + ".ptd"));
  REQUIRE(WritePtd(paths->back(), data).ok());
}

TEST_CASE(
    "share: a family with a .ptd per variant: each thin program loads with the shared file "
    "alone") {
  TempDir dir;
  std::vector<std::string> in;
  for (int v = 0; v < 3; ++v) WriteDataVariant(dir, v, &in);
  ShareOptions options;
  options.out_dir = dir.File("out");
  const SharePlan plan = Share(in, options);
  CheckFamily(in, plan);
  const ShareReport& r = plan.report;
  std::set<std::string> keys;
  for (const ShareEntry& e : r.entries) keys.insert(e.key);
  CHECK(keys == std::set<std::string>{"w", "xnn.same"});
  // Only the thin programs and the shared file are written.
  std::set<std::string> written;
  for (const auto& e : std::filesystem::directory_iterator(dir.File("out"))) {
    written.insert(e.path().filename().string());
  }
  CHECK(written ==
        std::set<std::string>{".etpack-unit", "ctx0.pte", "ctx1.pte", "ctx2.pte", "shared.ptd"});
  for (int v = 0; v < 3; ++v) {
    const ShareFileReport& p = r.files[2 * v];
    INFO(p.input);
    CHECK(p.data == r.shared_files);
    CHECK(p.items_taken == 2);  // rope and xnn.own
    CHECK(p.bytes_taken == 1000u * (v + 1) + 6000);
    // With the shared file alone: every EXTERNAL tensor resolves.
    Result<VerifyReport> verified = Verify({p.output, r.shared_files[0]});
    REQUIRE(verified.ok());
    CHECK(verified->ok());
    auto thin = OpenPte(p.output);
    std::set<std::string> named;
    for (const PteNamedData& n : thin->named_data()) named.insert(n.key);
    CHECK(named == std::set<std::string>{"xnn.own"});
    CHECK(r.files[2 * v + 1].into == std::vector<std::string>{r.shared_files[0], p.output});
  }
}

TEST_CASE("share: a program whose EXTERNAL keys no input holds is refused up front") {
  TempDir dir;
  std::vector<std::string> in = WriteFamily(dir, 2, true);
  in.push_back(dir.File("x.pte"));
  REQUIRE(WritePte(in.back(), ExternalVariant()).ok());  // reads w1 and own: no .ptd given
  ShareOptions options;
  options.out_dir = dir.File("out");
  Result<SharePlan> plan = PlanShare(in, options);
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().code() == Code::kInvalidArgument);
  const std::string& m = plan.status().message();
  CHECK(m.find(in[2]) != std::string::npos);
  CHECK(m.find("'w1'") != std::string::npos);
  CHECK(m.find("'own'") != std::string::npos);
}

TEST_CASE("share: an input whose name lacks its kind's suffix is refused, not written nameless") {
  TempDir dir;
  std::vector<std::string> in = WriteFamily(dir, 2, false);
  std::filesystem::rename(in[1], dir.File("7"));
  in[1] = dir.File("7");
  ShareOptions options;
  options.out_dir = dir.File("out");
  Result<SharePlan> plan = PlanShare(in, options);
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().message().find(in[1]) != std::string::npos);
  CHECK(plan.status().message().find("ending in .pte") != std::string::npos);
}

TEST_CASE("share: a 0-byte constant at its neighbour's offset stays; share and inspect agree") {
  TempDir dir;
  std::vector<std::string> in;
  for (int v = 0; v < 2; ++v) {
    // e0 BYTE[0] first: it lies at the offset of w BYTE[8192].
    in.push_back(dir.File("z" + std::to_string(v) + ".pte"));
    REQUIRE(WritePte(in.back(), SmallProgram({OwnedSource({}), Pattern(8192, 1)})).ok());
  }
  auto first = OpenPte(in[0]);
  REQUIRE(first->constant_buffers()[1].offset == first->constant_buffers()[2].offset);
  ShareOptions options;
  options.out_dir = dir.File("out");
  const SharePlan plan = Share(in, options);
  CheckFamily(in, plan);
  for (const ShareEntry& e : plan.report.entries) {
    INFO(e.key << " " << e.size << " "
               << (e.tensor_layout ? DescribeLayout(*e.tensor_layout) : ""));
  }
  std::string listed;
  for (const ShareEntry& e : plan.report.entries) {
    listed += e.key + " " + std::to_string(e.size) + " " +
              (e.tensor_layout ? DescribeLayout(*e.tensor_layout) : std::string()) + "; ";
  }
  INFO(listed);
  REQUIRE(plan.report.entries.size() == 1);
  CHECK(plan.report.entries[0].size == 8192);
  CHECK(plan.report.entries[0].tensor_layout == TensorLayout{0, {8192}, {0}});
  CHECK(plan.report.files[0].items_moved == 1);
  for (const ShareFileReport& f : plan.report.files) {
    const std::vector<PteTensor> tensors = OpenPte(f.output)->Tensors();
    REQUIRE(tensors.size() == 2);
    CHECK(tensors[0].data == TensorData::kConstant);  // e0 stays
    CHECK(tensors[1].data == TensorData::kExternal);
  }
  Result<FileSizes> sizes = SizesOfFiles(in);
  REQUIRE(sizes.ok());
  uint64_t shareable = 0;
  for (const SharedContent& c : sizes->shared.contents) shareable += c.shareable;
  CHECK(shareable == plan.report.entries.size());
}

TEST_CASE("share: each plan lists what it reads; every input is listed once for the unit") {
  // The writer checks every output against what every plan lists: listing
  // every input in every plan made that outputs x plans x inputs.
  TempDir dir;
  const std::vector<std::string> in = WriteFamily(dir, 6, false);
  ShareOptions options;
  options.out_dir = dir.File("out");
  const SharePlan plan = Plan(in, options);
  size_t listed = 0;
  for (const auto& [path, artifact] : plan.files()) listed += artifact->inputs.size();
  CHECK(listed <= 3 * in.size());  // was in.size() + 1 per plan
}

TEST_CASE("share: a .ptd input whose every entry moves is not written") {
  TempDir dir;
  std::vector<std::string> in = WriteFamily(dir, 2, true);
  PtdInput data;
  data.buffers = {Pattern(8192, 1)};
  data.entries = {{"w1", 0, 16, TensorLayout{0, {8192}, {0}}}};
  in.push_back(dir.File("w.ptd"));
  REQUIRE(WritePtd(in.back(), data).ok());
  ShareOptions options;
  options.out_dir = dir.File("out");
  const SharePlan plan = Share(in, options);
  CheckFamily(in, plan);
  CHECK(plan.report.files[2].output.empty());
  CHECK(plan.report.files[2].bytes_after == 0);
  CHECK(plan.report.files[2].items_moved == 1);
  CHECK_FALSE(std::filesystem::exists(dir.File("out/w.ptd")));
}

TEST_CASE("share: two .ptd entries of one key with different bytes refuse the share") {
  TempDir dir;
  std::vector<std::string> in = WriteFamily(dir, 2, true);
  for (int i = 0; i < 2; ++i) {
    PtdInput data;
    data.buffers = {Pattern(5000, static_cast<uint8_t>(90 + i))};
    data.entries = {{"emb", 0, 16, TensorLayout{0, {5000}, {0}}}};
    in.push_back(dir.File("d" + std::to_string(i) + ".ptd"));
    REQUIRE(WritePtd(in.back(), data).ok());
  }
  ShareOptions options;
  options.out_dir = dir.File("out");
  Result<SharePlan> plan = PlanShare(in, options);
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().code() == Code::kInvalidArgument);
  CHECK(plan.status().message().find("'emb'") != std::string::npos);
  CHECK(plan.status().message().find(in[2]) != std::string::npos);
  CHECK(plan.status().message().find(in[3]) != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.File("out")));
}

TEST_CASE("share: --min-bytes decides which small items stay") {
  TempDir dir;
  const std::vector<std::string> in = WriteFamily(dir, 2, false);
  ShareOptions options;
  options.out_dir = dir.File("out");
  options.min_bytes = 0;  // the 100-byte bias moves too
  SharePlan all = Share(in, options);
  CheckFamily(in, all);
  CHECK(all.report.entries.size() == 4);
  options.out_dir = dir.File("out2");
  options.min_bytes = 10000;  // only w2 (16 KiB)
  SharePlan big = Share(in, options);
  CheckFamily(in, big);
  REQUIRE(big.report.entries.size() == 1);
  CHECK(big.report.entries[0].size == 16384);
  // Nothing moves: no shared file, each program copied as it is.
  options.out_dir = dir.File("out3");
  options.min_bytes = 1 << 20;
  SharePlan none = Share(in, options);
  CheckFamily(in, none);
  CHECK(none.report.shared_files.empty());
  for (const ShareFileReport& f : none.report.files) {
    CHECK(f.items_moved == 0);
    CHECK(testing::ReadFile(f.output) == testing::ReadFile(f.input));
  }
}

TEST_CASE("share: the same bytes whatever the order of the inputs") {
  TempDir dir;
  std::vector<std::string> in = WriteFamily(dir, 3, true);
  PtdInput data;
  data.buffers = {Pattern(16384, 2)};
  data.entries = {{"w2", 0, 16, TensorLayout{0, {16384}, {0}}}};
  in.push_back(dir.File("w.ptd"));
  REQUIRE(WritePtd(in.back(), data).ok());
  ShareOptions options;
  options.out_dir = dir.File("a");
  Share(in, options);
  options.out_dir = dir.File("b");
  Share({in[3], in[2], in[0], in[1]}, options);
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir.File("a"))) {
    names.insert(e.path().filename().string());
  }
  CHECK(names.size() == 5);  // v0, v1, v2, shared (w.ptd moved whole), the marker
  for (const std::string& n : names) {
    INFO(n);
    CHECK(testing::ReadFile(dir.File("a/" + n)) == testing::ReadFile(dir.File("b/" + n)));
  }
}

TEST_CASE("share: contents whose samples agree get distinct keys in the order of their bytes") {
  TempDir dir;
  // Two 64 KiB constants alike at the start, middle and end, different in
  // between: one content key text, two contents.
  auto odd = [](uint8_t at) {
    std::vector<uint8_t> b(65536, 1);
    b[10000] = at;
    return OwnedSource(std::move(b));
  };
  std::vector<std::string> in;
  for (int v = 0; v < 2; ++v) {
    PteInput p = SmallProgram({odd(7), odd(5)});
    in.push_back(dir.File("v" + std::to_string(v) + ".pte"));
    REQUIRE(WritePte(in.back(), std::move(p)).ok());
  }
  ShareOptions options;
  options.out_dir = dir.File("out");
  const SharePlan plan = Share(in, options);
  CheckFamily(in, plan);
  REQUIRE(plan.report.entries.size() == 2);
  const std::string& base = plan.report.entries[0].key;
  CHECK(plan.report.entries[1].key == base + "-2");
  // The plain key is the one with the smaller bytes: odd(5), value 1.
  auto thin = OpenPte(plan.report.files[0].output);
  for (const PteTensor& t : thin->Tensors()) {
    if (t.value == 1) CHECK(t.key == base);
    if (t.value == 0) CHECK(t.key == base + "-2");
  }
}

TEST_CASE("share: the shared file as shards") {
  TempDir dir;
  const std::vector<std::string> in = WriteFamily(dir, 2, true);
  ShareOptions options;
  options.out_dir = dir.File("out");
  options.max_shard_bytes = 20000;
  options.data_name = "weights.ptd";
  const SharePlan plan = Share(in, options);
  CheckFamily(in, plan);
  CHECK(plan.report.shared_files.size() >= 2);
  for (const std::string& s : plan.report.shared_files) {
    CHECK(s.rfind(dir.File("out") + "/weights-", 0) == 0);
  }
}

// Shares `in` into their own folder `dir`: refused, no input changed, no
// shared file made.
void CheckRefusedInPlace(const TempDir& dir, const std::vector<std::string>& in) {
  std::vector<std::vector<uint8_t>> before;
  for (const std::string& p : in) before.push_back(testing::ReadFile(p));
  ShareOptions options;
  options.out_dir = dir.path();  // OUTDIR/v0.pte is v0.pte
  SharePlan plan = Plan(in, options);
  Status s = WriteShare(plan);
  REQUIRE_FALSE(s.ok());
  CHECK(s.message().find("refusing to overwrite an input") != std::string::npos);
  for (size_t i = 0; i < in.size(); ++i) CHECK(testing::ReadFile(in[i]) == before[i]);
  CHECK_FALSE(std::filesystem::exists(dir.File("shared.ptd")));
}

TEST_CASE("share: an output that is an input is refused; nothing changes") {
  TempDir dir;
  CheckRefusedInPlace(dir, WriteFamily(dir, 2, false));
}

TEST_CASE("share: a thin program reading nothing of its input still may not replace it") {
  // Programs without data: nothing moves, no shared file, and the thin
  // programs read no byte of the inputs they would replace (PteFile::ToInput
  // lists the file it read); yet the inputs are refused as outputs.
  TempDir dir;
  std::vector<std::string> in;
  for (int v = 0; v < 2; ++v) {
    in.push_back(dir.File("v" + std::to_string(v) + ".pte"));
    REQUIRE(WritePte(in.back(), SmallProgram({})).ok());
  }
  CheckRefusedInPlace(dir, in);
}

TEST_CASE("share: refuses what it cannot do, before writing") {
  TempDir dir;
  const std::vector<std::string> in = WriteFamily(dir, 2, false);
  ShareOptions options;
  options.out_dir = dir.File("out");
  Result<SharePlan> one = PlanShare({in[0]}, options);
  CHECK(one.status().code() == Code::kInvalidArgument);
  CHECK(one.status().message().find("two or more .pte") != std::string::npos);
  std::filesystem::create_directories(dir.File("sub"));
  std::filesystem::copy_file(in[0], dir.File("sub/v0.pte"));
  Result<SharePlan> twice = PlanShare({in[0], in[1], dir.File("sub/v0.pte")}, options);
  CHECK(twice.status().message().find("would both be written as") != std::string::npos);
  options.data_name = "v0.pte";
  CHECK(PlanShare(in, options).status().message().find("ending in .ptd") != std::string::npos);
  options.data_name = "x/y.ptd";
  CHECK(PlanShare(in, options).status().code() == Code::kInvalidArgument);
  options.data_name = "shared.ptd";
  options.alignment = 3;
  CHECK(PlanShare(in, options).status().code() == Code::kInvalidArgument);
  options.alignment = 0;
  options.out_dir = "";
  CHECK(PlanShare(in, options).status().code() == Code::kInvalidArgument);
  CHECK_FALSE(std::filesystem::exists(dir.File("out")));
}

}  // namespace
}  // namespace etpack

namespace etpack {
namespace {

// Every golden program shared with a copy of itself: everything a program
// can hold that may move does (min_bytes 0), the rest stays, and both thin
// copies decode to the original. pte_external reads ptd_basic.ptd.
TEST_CASE("share: every golden program with a copy of itself") {
  for (const std::string& name : testing::GoldenPrograms()) {
    INFO(name);
    TempDir dir;
    std::vector<std::string> in = {dir.File("a.pte"), dir.File("b.pte")};
    for (const std::string& p : in) {
      std::filesystem::copy_file(testing::Golden(std::string(name) + ".pte"), p);
    }
    if (std::string(name) == "pte_external") in.push_back(testing::Golden("ptd_basic.ptd"));
    ShareOptions options;
    options.out_dir = dir.File("out");
    options.min_bytes = 0;
    const SharePlan plan = Share(in, options);
    CheckFamily(in, plan);
  }
}

}  // namespace
}  // namespace etpack
