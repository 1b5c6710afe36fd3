// Sharded .ptd (PlanPtdFiles): every shard within the cap as a file, stable
// packing, content-keyed names, the set loadable together, and all shards
// published as one unit.
#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <vector>
#include "catch.h"

#include "etpack/external_data.h"
#include "etpack/ptd.h"
#include "etpack/ptd_file.h"
#include "etpack/pte_file.h"
#include "etpack/writer.h"
#include "ptd/ptd_selection.h"
#include "test_files.h"
#include "test_programs.h"

using namespace etpack;
using namespace etpack::testing;

namespace {

TensorLayout U8(int32_t n) { return TensorLayout{0, {n}, {0}}; }

// `n` entries of varied sizes, key lengths, ranks and alignments; every
// third entry shares the buffer of the one before it.
PtdInput Varied(size_t n) {
  PtdInput in;
  for (size_t i = 0; i < n; ++i) {
    const std::string key = "layers." + std::to_string(i) + std::string(i % 7 * 9, 'k') + ".w";
    if (i % 3 == 2) {
      const PtdEntry& prev = in.entries.back();
      in.entries.push_back({key, prev.buffer_index, 1, prev.layout});
      continue;
    }
    const int32_t size = static_cast<int32_t>(100 + (i * 7919) % 3000);
    in.buffers.push_back(Pattern(static_cast<uint64_t>(size), static_cast<uint8_t>(i)));
    TensorLayout layout = i % 2 ? U8(size) : TensorLayout{0, {1, size, 1}, {0, 1, 2}};
    in.entries.push_back(
        {key, static_cast<uint32_t>(in.buffers.size() - 1), uint64_t{1} << (i % 9), layout});
  }
  return in;
}

std::unique_ptr<PtdFile> ReadPlan(const PtdFilePlan& f) {
  Result<std::vector<uint8_t>> bytes = WriteArtifactToMemory(f.plan.artifact);
  REQUIRE(bytes.ok());
  return Read<PtdFile>(f.path, std::move(*bytes));
}

std::string Base(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

}  // namespace

TEST_CASE("shards stay within the cap as files, in input order") {
  const PtdInput in = Varied(60);
  for (const bool integrity : {false, true}) {
    for (const bool strictest : {false, true}) {
      for (const uint64_t cap : {4096u, 6000u, 10000u, 33333u}) {
        PtdOptions options;
        options.max_shard_bytes = cap;
        options.integrity_table = integrity;
        options.strictest_shared_alignment = strictest;
        Result<std::vector<PtdFilePlan>> shards = PlanPtdFiles("out/model.ptd", in, options);
        INFO("cap " << cap << " integrity " << integrity << " strictest " << strictest);
        REQUIRE(shards.ok());
        CHECK(shards->size() > 1);
        std::vector<std::string> keys;
        uint64_t total = 0;
        for (const PtdFilePlan& s : *shards) {
          CHECK(s.plan.artifact.file_size <= cap);
          total += s.plan.artifact.file_size;
          auto file = ReadPlan(s);
          CHECK(file->size() <= cap);
          for (const PtdFile::Entry& e : file->entries()) {
            if (e.key.rfind("etpack.integrity.", 0) != 0) keys.push_back(e.key);
          }
        }
        // Every key once, in the input's order: the shards are the input cut
        // in pieces.
        std::vector<std::string> expected;
        for (const PtdEntry& e : in.entries) expected.push_back(e.key);
        CHECK(keys == expected);
        // Not one shard per entry: the bound packs shards at least half full.
        CHECK(total / shards->size() > cap / 2);
      }
    }
  }
}

TEST_CASE("an entry exactly at the cap fits; one byte less is an error naming it") {
  PtdInput in;
  in.buffers = {Pattern(1000, 1), Pattern(5000, 2)};
  in.entries = {{"small", 0, 1, U8(1000)}, {"big.weight", 1, 1, U8(5000)}};
  Result<PtdPlan> alone = [&] {
    PtdInput one;
    one.buffers = {in.buffers[1]};
    one.entries = {{"big.weight", 0, 1, U8(5000)}};
    return PlanPtd(one);
  }();
  REQUIRE(alone.ok());
  const uint64_t exact = alone->artifact.file_size;

  PtdOptions options;
  options.max_shard_bytes = exact;
  Result<std::vector<PtdFilePlan>> shards = PlanPtdFiles("m.ptd", in, options);
  REQUIRE(shards.ok());
  REQUIRE(shards->size() == 2);
  CHECK(shards->back().plan.artifact.file_size == exact);

  options.max_shard_bytes = exact - 1;
  shards = PlanPtdFiles("m.ptd", in, options);
  REQUIRE_FALSE(shards.ok());
  const std::string m = shards.status().message();
  INFO(m);
  CHECK(shards.status().code() == Code::kInvalidArgument);
  CHECK(Contains(m, "entries[1] 'big.weight'"));
  CHECK(Contains(m, "5000 bytes"));
  CHECK(Contains(m, "max_shard_bytes = " + std::to_string(exact - 1)));
  CHECK(Contains(m, std::to_string(exact) + " bytes"));
}

TEST_CASE("PlanPtd refuses a file over max_shard_bytes") {
  PtdInput in;
  in.buffers = {Pattern(5000, 2)};
  in.entries = {{"w", 0, 1, U8(5000)}};
  PtdOptions options;
  options.max_shard_bytes = 4096;
  Result<PtdPlan> plan = PlanPtd(in, options);
  REQUIRE_FALSE(plan.ok());
  CHECK(Contains(plan.status().message(), "over max_shard_bytes = 4096"));
}

TEST_CASE("shard names and bytes are deterministic and keyed by content") {
  const PtdInput in = Varied(30);
  PtdOptions options;
  options.max_shard_bytes = 8192;
  auto a = PlanPtdFiles("dir/model.ptd", in, options);
  auto b = PlanPtdFiles("dir/model.ptd", Varied(30), options);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(a->size() == b->size());
  const std::regex name(R"(dir/model-[0-9a-f]{16}\.ptd)");
  std::set<std::string> names;
  for (size_t i = 0; i < a->size(); ++i) {
    CHECK(std::regex_match((*a)[i].path, name));
    CHECK((*a)[i].path == (*b)[i].path);
    CHECK(*WriteArtifactToMemory((*a)[i].plan.artifact) ==
          *WriteArtifactToMemory((*b)[i].plan.artifact));
    names.insert((*a)[i].path);
  }
  CHECK(names.size() == a->size());

  SECTION("a prefix without .ptd is kept whole") {
    auto c = PlanPtdFiles("weights", in, options);
    REQUIRE(c.ok());
    CHECK(std::regex_match(c->front().path, std::regex(R"(weights-[0-9a-f]{16}\.ptd)")));
  }
  SECTION("renaming one key renames only its shard") {
    PtdInput renamed = Varied(30);
    renamed.entries.back().key += ".renamed";
    auto c = PlanPtdFiles("dir/model.ptd", renamed, options);
    REQUIRE(c.ok());
    REQUIRE(c->size() == a->size());
    for (size_t i = 0; i + 1 < a->size(); ++i) CHECK((*c)[i].path == (*a)[i].path);
    CHECK(c->back().path != a->back().path);
  }
  SECTION("without a cap: one file under the name given") {
    auto one = PlanPtdFiles("dir/model.ptd", in, PtdOptions{});
    REQUIRE(one.ok());
    REQUIRE(one->size() == 1);
    CHECK(one->front().path == "dir/model.ptd");
    CHECK(one->front().entries == in.entries.size());
  }
}

TEST_CASE("a repeated key joins its first entry's shard") {
  PtdInput in;
  in.buffers = {Pattern(3000, 1), Pattern(3000, 2), Pattern(3000, 3)};
  in.entries = {{"a", 0, 1, U8(3000)}, {"b", 1, 1, U8(3000)}, {"a", 0, 1, U8(3000)}};
  PtdOptions options;
  options.max_shard_bytes = 3500;
  auto shards = PlanPtdFiles("m.ptd", in, options);
  REQUIRE(shards.ok());
  CHECK(shards->size() == 2);

  SECTION("with other bytes it is an error naming both entries") {
    in.entries[2].buffer_index = 2;
    shards = PlanPtdFiles("m.ptd", in, options);
    REQUIRE_FALSE(shards.ok());
    INFO(shards.status().message());
    CHECK(Contains(shards.status().message(), "entries[2] 'a'"));
    CHECK(Contains(shards.status().message(), "entries[0] 'a'"));
  }
}

TEST_CASE("a set of shards loads together; a key in two files or in none is refused") {
  const PtdInput in = Varied(20);
  PtdOptions options;
  options.max_shard_bytes = 6000;
  auto shards = PlanPtdFiles("m.ptd", in, options);
  REQUIRE(shards.ok());
  REQUIRE(shards->size() >= 3);
  std::vector<std::unique_ptr<PtdFile>> files;
  std::vector<const PtdFile*> views;
  for (const PtdFilePlan& s : *shards) {
    files.push_back(ReadPlan(s));
    views.push_back(files.back().get());
  }
  CHECK(CheckDataSet(views).ok());
  // Every tensor reads back intact through the set.
  size_t found = 0;
  for (const PtdEntry& e : in.entries) {
    for (const PtdFile* f : views) {
      for (size_t i = 0; i < f->entries().size(); ++i) {
        if (f->entries()[i].key != e.key) continue;
        ++found;
        auto got = ReadAll(*f->EntrySource(i));
        auto want = ReadAll(*in.buffers[e.buffer_index]);
        REQUIRE(got.ok());
        CHECK(*got == *want);
      }
    }
  }
  CHECK(found == in.entries.size());

  views.push_back(views.front());
  Status twice = CheckDataSet(views);
  REQUIRE_FALSE(twice.ok());
  CHECK(Contains(twice.message(), "is in both"));
}

TEST_CASE("a program's constants sharded: every EXTERNAL key resolves in exactly one shard") {
  TempDir dir;
  auto pte = PteFile::Open(GoldenDir() + "/pte_constants.pte");
  REQUIRE(pte.ok());
  auto split = ExternalizeConstants(**pte, 16);
  REQUIRE(split.ok());
  std::vector<ExternalDataFile> data;
  data.push_back({dir.File("w.ptd"), std::move(split->second), 512});
  auto plan = PlanProgramWithData(dir.File("p.pte"), std::move(split->first), PteOptions{},
                                  std::move(data));
  REQUIRE(plan.ok());
  REQUIRE(plan->data.size() > 1);
  REQUIRE(WriteArtifactFiles(plan->files()).ok());

  auto program = PteFile::Open(dir.File("p.pte"));
  REQUIRE(program.ok());
  std::vector<std::unique_ptr<PtdFile>> files;
  std::vector<const PtdFile*> views;
  for (const auto& d : plan->data) {
    auto f = PtdFile::Open(d.name);
    REQUIRE(f.ok());
    CHECK((*f)->size() <= 512);
    views.push_back(f->get());
    files.push_back(std::move(f).value());
  }
  uint64_t resolved = 0;
  CHECK(CheckExternalReferences(**program, views, &resolved).ok());
  CHECK(resolved > 0);
  // Without one shard a key resolves nowhere.
  views.pop_back();
  Status missing = CheckExternalReferences(**program, views);
  CHECK(missing.code() == Code::kNotFound);
  CHECK(Contains(missing.message(), "EXTERNAL key"));
}

TEST_CASE("shards are published as one unit: nothing on failure") {
  TempDir dir;
  const PtdInput in = Varied(20);
  PtdOptions options;
  options.max_shard_bytes = 6000;
  auto shards = PlanPtdFiles(dir.File("m.ptd"), in, options);
  REQUIRE(shards.ok());
  REQUIRE(shards->size() >= 3);

  SECTION("a source failing in the last shard") {
    PtdInput bad = Varied(20);
    bad.buffers.back() = GeneratorSource(
        "failing", bad.buffers.back()->size(),
        [](uint64_t, uint8_t*, size_t) { return InvalidArgument("injected read failure"); });
    Status s = WritePtd(dir.File("m.ptd"), bad, options).status();
    REQUIRE_FALSE(s.ok());
    CHECK(Contains(s.message(), "injected read failure"));
    CHECK(dir.List().empty());
  }
  SECTION("a destination that cannot be replaced") {
    std::filesystem::create_directory((*shards)[1].path);
    Status s = WritePtd(dir.File("m.ptd"), in, options).status();
    REQUIRE_FALSE(s.ok());
    CHECK(dir.List() == std::set<std::string>{Base((*shards)[1].path)});
  }
  SECTION("success writes exactly the shards planned") {
    Result<std::vector<std::string>> written = WritePtd(dir.File("m.ptd"), in, options);
    REQUIRE(written.ok());
    const std::vector<std::string>& paths = *written;
    std::set<std::string> expected;
    for (const PtdFilePlan& s : *shards) expected.insert(Base(s.path));
    CHECK(dir.List() == expected);
    REQUIRE(paths.size() == shards->size());
    for (size_t i = 0; i < paths.size(); ++i) CHECK(paths[i] == (*shards)[i].path);
  }
}

namespace {

// FlatBuffers tables of a .ptd as the verifier counts them.
uint64_t TablesOf(const PtdFile& f) {
  uint64_t layouts = 0;
  for (const PtdFile::Entry& e : f.entries()) layouts += e.layout ? 1 : 0;
  return FlatTensorTables(f.entries().size(), f.layout().segments.size(), layouts);
}

// `n` tiny entries whose buffers are distinct objects holding `distinct`
// different contents in turn.
PtdInput Tiny(size_t n, size_t distinct) {
  PtdInput in;
  for (size_t i = 0; i < n; ++i) {
    in.buffers.push_back(Pattern(4, static_cast<uint8_t>(i % distinct)));
    in.entries.push_back({"t." + std::to_string(i), static_cast<uint32_t>(i), 1, U8(4)});
  }
  return in;
}

}  // namespace

TEST_CASE("the verifier's table limit splits shards as the cap does") {
  const PtdInput in = Varied(60);
  for (const bool integrity : {false, true}) {
    PtdOptions options;
    options.max_shard_bytes = uint64_t{1} << 30;
    options.integrity_table = integrity;
    ShardLimits limits;
    limits.max_tables = 40;
    Result<std::vector<PtdFilePlan>> shards = PlanPtdShards("m.ptd", in, options, limits);
    INFO("integrity " << integrity);
    INFO(shards.status().ToString());
    REQUIRE(shards.ok());
    CHECK(shards->size() > 3);
    size_t entries = 0;
    for (const PtdFilePlan& s : *shards) {
      auto file = ReadPlan(s);
      CHECK(TablesOf(*file) <= 40);
      // Full: the next entry would not have fit.
      if (&s != &shards->back()) CHECK(TablesOf(*file) + 5 > 40);
      entries += s.entries;
    }
    CHECK(entries == in.entries.size());
  }
}

TEST_CASE("600,000 tiny entries under a 1 GiB cap are split by the table limit, not refused") {
  // Three tables an entry (its table, its layout, its segment): one file
  // holds at most 333,333 of them.
  const PtdInput in = Tiny(600000, 256);
  PtdOptions options;
  options.max_shard_bytes = uint64_t{1} << 30;
  Result<std::vector<PtdFilePlan>> shards = PlanPtdFiles("m.ptd", in, options);
  INFO(shards.status().ToString());
  REQUIRE(shards.ok());
  CHECK(shards->size() == 2);
  size_t entries = 0;
  for (const PtdFilePlan& s : *shards) entries += s.entries;
  CHECK(entries == in.entries.size());
}

TEST_CASE("shards are packed by what is stored: shared contents once, exact sizes") {
  SECTION("a cap of the unsharded file's size gives one shard") {
    for (const PtdInput& in : {Varied(60), Tiny(3000, 3), Tiny(3000, 3000)}) {
      Result<PtdPlan> whole = PlanPtd(in);
      REQUIRE(whole.ok());
      PtdOptions options;
      options.max_shard_bytes = whole->artifact.file_size;
      Result<std::vector<PtdFilePlan>> shards = PlanPtdFiles("m.ptd", in, options);
      REQUIRE(shards.ok());
      CHECK(shards->size() == 1);
      CHECK(*WriteArtifactToMemory(shards->front().plan.artifact) ==
            *WriteArtifactToMemory(whole->artifact));
    }
  }
  SECTION("entries sharing three contents count them once per shard") {
    const PtdInput in = Tiny(3000, 3);
    Result<PtdPlan> whole = PlanPtd(in);
    REQUIRE(whole.ok());
    PtdOptions options;
    // Room for a little more than half: the bound's estimate of a tiny
    // entry is several times its size, which exact plans make up for.
    options.max_shard_bytes = whole->artifact.file_size * 11 / 20;
    Result<std::vector<PtdFilePlan>> shards = PlanPtdFiles("m.ptd", in, options);
    REQUIRE(shards.ok());
    CHECK(shards->size() == 2);
    for (const PtdFilePlan& s : *shards) CHECK(ReadPlan(s)->layout().segments.size() == 3);
  }
  SECTION("every shard but the last is full: with the next entry it would be over the cap") {
    const PtdInput in = Varied(60);
    for (const uint64_t cap : {4096u, 6000u, 10000u, 33333u}) {
      PtdOptions options;
      options.max_shard_bytes = cap;
      Result<std::vector<PtdFilePlan>> shards = PlanPtdFiles("m.ptd", in, options);
      REQUIRE(shards.ok());
      size_t next = 0;
      for (const PtdFilePlan& s : *shards) {
        next += s.entries;  // no key repeats in Varied
        if (&s == &shards->back()) break;
        std::vector<size_t> more;
        for (size_t i = 0; i <= next; ++i) more.push_back(i);
        more.erase(more.begin(), more.begin() + static_cast<std::ptrdiff_t>(next - s.entries));
        PtdInput grown;
        grown.buffers = in.buffers;
        for (const size_t i : more) grown.entries.push_back(in.entries[i]);
        Result<PtdPlan> plan = PlanPtd(grown);
        REQUIRE(plan.ok());
        INFO("cap " << cap << ", shard ending before entry " << next);
        CHECK(plan->artifact.file_size > cap);
      }
    }
  }
}

TEST_CASE("a sharded output needs a name before .ptd") {
  PtdOptions options;
  options.max_shard_bytes = 8192;
  for (const std::string path : {".ptd", "dir/.ptd", "dir/", ""}) {
    Result<std::vector<PtdFilePlan>> shards = PlanPtdFiles(path, Varied(10), options);
    INFO("'" << path << "'");
    REQUIRE_FALSE(shards.ok());
    CHECK(shards.status().code() == Code::kInvalidArgument);
    CHECK(Contains(shards.status().message(), "'" + path + "': shards are named after"));
  }
  // A name of its own, even a hidden one, is kept.
  Result<std::vector<PtdFilePlan>> hidden = PlanPtdFiles("dir/.w.ptd", Varied(10), options);
  REQUIRE(hidden.ok());
  CHECK(std::regex_match(hidden->front().path, std::regex(R"(dir/\.w-[0-9a-f]{16}\.ptd)")));
}

TEST_CASE("the FlatTensor bound packing counts with is an upper bound, and not loose") {
  PtdInput long_keys = Varied(40);
  for (PtdEntry& e : long_keys.entries) e.key += std::string(e.buffer_index % 5, 'x');
  PtdInput blobs = Tiny(500, 7);
  for (PtdEntry& e : blobs.entries) e.layout.reset();
  for (const PtdInput& in : {Varied(60), Tiny(2000, 3), Tiny(2000, 2000), long_keys, blobs}) {
    Result<PtdPlan> plan = PlanPtd(in);
    REQUIRE(plan.ok());
    uint64_t bound = FlatTensorBaseBound();
    std::set<std::vector<uint8_t>> contents;
    for (const PtdEntry& e : in.entries) {
      bound +=
          FlatTensorEntryBound(e, contents.insert(*ReadAll(*in.buffers[e.buffer_index])).second);
    }
    INFO(in.entries.size() << " entries: " << plan->layout.flatbuffer_size << " bytes, bound "
                           << bound);
    CHECK(plan->layout.flatbuffer_size <= bound);
    CHECK(bound < 5 * plan->layout.flatbuffer_size / 2);
  }
}
