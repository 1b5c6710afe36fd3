// The Env pair (etpack/env.h) reaches every entry point that opens a path:
// each one below reads files that exist only in a test's memory input file
// system (so nothing could have come from the disk), and a read failure
// injected under it is a Status naming the file.

#include "catch.h"

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "etpack/artifact_file.h"
#include "etpack/bundle_cases.h"
#include "etpack/env.h"
#include "etpack/inspect.h"
#include "etpack/manifest.h"
#include "etpack/npy.h"
#include "etpack/output.h"
#include "etpack/path_text.h"
#include "etpack/ptd.h"
#include "etpack/ptd_file.h"
#include "etpack/pte.h"
#include "etpack/pte_file.h"
#include "etpack/safetensors.h"
#include "etpack/sizes.h"
#include "etpack/update.h"
#include "etpack/verify.h"
#include "fault_input.h"
#include "memory_input.h"
#include "test_files.h"
#include "test_programs.h"

namespace etpack {
namespace {

using testing::Contains;
using testing::F32Safetensors;
using testing::Materialize;
using testing::Pattern;
using testing::SmallProgram;
using Bytes = std::vector<uint8_t>;

// Paths under a folder that does not exist on disk.
const std::string kDir = "/nonexistent-etpack-env-test/";

Bytes PteBytes() {
  Result<PtePlan> plan = PlanPte(SmallProgram({Pattern(100, 1), Pattern(5000, 2)}));
  REQUIRE(plan.ok());
  return Materialize(plan->artifact);
}

Bytes PtdBytes(const std::string& key) {
  PtdInput in;
  in.buffers = {Pattern(3000, 3)};
  in.entries = {PtdEntry{key, 0, 64, std::nullopt}};
  Result<PtdPlan> plan = PlanPtd(in);
  REQUIRE(plan.ok());
  return Materialize(plan->artifact);
}

// Every kind of file the entry points read, in memory only.
struct Files {
  MemoryInputFs fs;
  Env env{&fs, nullptr};
  Files() {
    fs.Add(kDir + "model.pte", PteBytes());
    fs.Add(kDir + "a.ptd", PtdBytes("a"));
    fs.Add(kDir + "b.ptd", PtdBytes("b"));
    fs.Add(kDir + "w.safetensors", F32Safetensors(16));
    fs.Add(kDir + "weights.bin", Bytes(256, 7));
    fs.Add(kDir + "x.npy",
           testing::Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", Bytes(12, 1)));
    fs.Add(kDir + "data.json",
           std::string(R"({"format": "ptd", "buffers": [{"file": "weights.bin", "length": 64}],)") +
               R"( "entries": [{"key": "w", "buffer_index": 0}]})");
    fs.Add(kDir + "cases.json",
           std::string(R"({"methods": {"forward": [{"inputs": [{"tensor": {"npy": "x.npy"}}],)") +
               R"( "expected_outputs": []}]}})");
  }
};

TEST_CASE("env: every reading entry point opens its paths through env.input") {
  Files f;
  const std::string pte = kDir + "model.pte";

  SECTION("artifact files") {
    Result<std::unique_ptr<PteFile>> p = PteFile::Open(pte, f.env);
    INFO(p.status().ToString());
    REQUIRE(p.ok());
    CHECK((*p)->methods().size() == 1);
    CHECK(PtdFile::Open(kDir + "a.ptd", f.env).ok());
    // Without the env the default (POSIX) finds no such file.
    CHECK(PteFile::Open(pte).status().code() == Code::kNotFound);
  }
  SECTION("inspect and sizes") {
    Result<ArtifactKind> kind = DetectArtifactKind(pte, nullptr, f.env);
    REQUIRE(kind.ok());
    CHECK(*kind == ArtifactKind::kPte);
    Result<json::Value> report = InspectJson(pte, f.env);
    INFO(report.status().ToString());
    REQUIRE(report.ok());
    CHECK(report->Find("file")->as_string() == pte);
    Result<SizeReport> sizes = SizesOf(pte, f.env);
    REQUIRE(sizes.ok());
    CHECK(sizes->file_size > 5100);
    Result<FileSizes> both = SizesOfFiles({kDir + "a.ptd", kDir + "b.ptd"}, {}, f.env);
    REQUIRE(both.ok());
    CHECK(both->reports.size() == 2);
  }
  SECTION("verify") {
    VerifyOptions options;
    options.deep = true;
    Result<VerifyReport> one = Verify({pte}, options, f.env);
    REQUIRE(one.ok());
    INFO(one->verdict.ToString());
    CHECK(one->ok());
    Result<VerifyReport> set = Verify({kDir + "a.ptd", kDir + "b.ptd"}, options, f.env);
    REQUIRE(set.ok());
    CHECK(set->ok());
    CHECK(set->files.size() == 2);
  }
  SECTION("imports") {
    Result<std::vector<SafetensorsTensor>> st =
        ReadSafetensors(kDir + "w.safetensors", nullptr, f.env);
    INFO(st.status().ToString());
    REQUIRE(st.ok());
    REQUIRE(st->size() == 1);
    CHECK((*st)[0].data->size() == 64);
    Result<NpyArray> npy = ReadNpy(kDir + "x.npy", f.env);
    REQUIRE(npy.ok());
    CHECK(npy->data->size() == 12);
    // The manifest's file reference resolves beside it, in the same fs.
    Result<AnyManifest> m = LoadManifest(kDir + "data.json", f.env);
    INFO(m.status().ToString());
    REQUIRE(m.ok());
    CHECK(std::get<PtdManifest>(*m).input.buffers[0]->size() == 64);
    // The case file's .npy too.
    Result<std::vector<BundledTestSuite>> cases =
        LoadBundleCases(kDir + "cases.json", nullptr, f.env);
    INFO(cases.status().ToString());
    REQUIRE(cases.ok());
    CHECK(cases->at(0).test_cases.at(0).inputs.at(0).data->size() == 12);
    // New weights for an update, from a checkpoint and a .ptd.
    Result<PtdInput> weights = ReadWeights({kDir + "w.safetensors", kDir + "a.ptd"}, f.env);
    INFO(weights.status().ToString());
    REQUIRE(weights.ok());
    CHECK(weights->entries.size() == 2);
  }
}

TEST_CASE("env: an entry point opens each file once") {
  // Detecting a file's kind hands the opened file to its reader.
  Files f;
  const std::string pte = kDir + "model.pte", a = kDir + "a.ptd", b = kDir + "b.ptd";
  REQUIRE(InspectJson(pte, f.env).ok());
  CHECK(f.fs.opened() == std::vector<std::string>{pte});
  REQUIRE(SizesOfFiles({a, b}, {}, f.env).ok());
  CHECK(f.fs.opened() == std::vector<std::string>{pte, a, b});
  VerifyOptions options;
  options.data = {a};
  Result<VerifyReport> v = Verify({pte}, options, f.env);
  REQUIRE(v.ok());
  INFO(v->verdict.ToString());
  CHECK(v->ok());
  // Verify also looks (through the same Env) for a publishing marker beside
  // each file, which it does not find.
  const std::string pte_marker = kDir + ".model.pte.etpack-publishing",
                    a_marker = kDir + ".a.ptd.etpack-publishing";
  CHECK(f.fs.opened() == std::vector<std::string>{pte, a, b, pte, pte_marker, a_marker, a});
  REQUIRE(ReadWeights({b}, f.env).ok());
  CHECK(f.fs.opened() == std::vector<std::string>{pte, a, b, pte, pte_marker, a_marker, a, b});
}

TEST_CASE("env: a read error under env.input is a Status naming the file") {
  Files f;
  // Reads past the first 40 bytes of every file fail with EIO (the 8 bytes
  // that say what a file is can still be read).
  InputFault fault;
  fault.kind = InputFaultKind::kRead;
  fault.at = 40;
  std::unique_ptr<InputFs> faulty = NewFaultInjectingInputFs(&f.fs, fault);
  const Env env{faulty.get(), nullptr};

  const std::string pte = kDir + "model.pte";
  Result<SizeReport> sizes = SizesOf(pte, env);
  REQUIRE(!sizes.ok());
  CHECK(sizes.status().code() == Code::kIoError);
  CHECK(Contains(sizes.status().message(), pte));
  CHECK(Contains(sizes.status().message(), "injected fault"));

  Result<VerifyReport> v = Verify({pte}, {}, env);
  REQUIRE(v.ok());
  CHECK(!v->ok());
  CHECK(v->unreadable);
  CHECK(v->failed == pte);
  CHECK(Contains(v->verdict.message(), pte));

  Result<std::vector<SafetensorsTensor>> st = ReadSafetensors(kDir + "w.safetensors", nullptr, env);
  REQUIRE(!st.ok());
  CHECK(st.status().code() == Code::kIoError);
  CHECK(Contains(st.status().message(), kDir + "w.safetensors"));
}

TEST_CASE("env: an update reads its file through env.input") {
  // A real file (the update's lock is on the POSIX file), read through an
  // input that fails past byte 40: the update fails naming the file and
  // writes nothing.
  testing::TempDir dir;
  const std::string path = dir.File("model.ptd");
  const Bytes before = PtdBytes("a");
  testing::WriteFile(path, before);
  InputFault fault;
  fault.kind = InputFaultKind::kRead;
  fault.at = 40;
  std::unique_ptr<InputFs> faulty = NewFaultInjectingInputFs(DefaultInputFs(), fault);
  PtdInput weights;
  weights.buffers = {Pattern(3000, 9)};
  weights.entries = {PtdEntry{"a", 0, 1, std::nullopt}};
  Result<UpdateReport> r = UpdateWeights(path, weights, {}, Env{faulty.get(), nullptr});
  REQUIRE(!r.ok());
  CHECK(r.status().code() == Code::kIoError);
  CHECK(Contains(r.status().message(), path));
  CHECK(testing::ReadFile(path) == before);
  // Through the default input the same update lands.
  REQUIRE(UpdateWeights(path, weights).ok());
  CHECK(testing::ReadFile(path) != before);
}

TEST_CASE("env: every writing entry point makes its files through env.output") {
  MemoryOutputFs out;
  const Env env{nullptr, &out};
  Result<PtePlan> plan = PlanPte(SmallProgram({Pattern(100, 1)}));
  REQUIRE(plan.ok());
  REQUIRE(WriteArtifactFile(kDir + "a.pte", plan->artifact, {}, env).ok());
  REQUIRE(WriteArtifactFiles({{kDir + "b.pte", &plan->artifact}}, {}, env).ok());
  REQUIRE(WritePte(kDir + "c.pte", SmallProgram({Pattern(100, 1)}), {}, {}, env).ok());
  PtdInput in;
  in.buffers = {Pattern(64, 3)};
  in.entries = {PtdEntry{"w", 0, 1, std::nullopt}};
  REQUIRE(WritePtd(kDir + "d.ptd", in, {}, {}, env).ok());
  const Bytes program = Materialize(plan->artifact);
  CHECK(out.files().at(kDir + "a.pte") == program);
  CHECK(out.files().at(kDir + "b.pte") == program);
  CHECK(out.files().at(kDir + "c.pte") == program);
  CHECK(out.files().count(kDir + "d.ptd") == 1);
}

TEST_CASE("env: folders and update locks come from the output file system") {
  // Memory has no folders to make and nothing to lock.
  MemoryOutputFs memory;
  const Env env{nullptr, &memory};
  CHECK(env.out().MakeFolders(kDir + "x/y").ok());
  Result<std::unique_ptr<UpdateLock>> none = env.out().LockForUpdate(kDir + "m.pte", nullptr);
  REQUIRE(none.ok());
  Files f;
  Result<std::shared_ptr<const InputFile>> any = f.fs.Open(kDir + "a.ptd");
  REQUIRE(any.ok());
  CHECK((*none)->Covers(**any));

  // The default Env's are the POSIX folders and flock(2).
  testing::TempDir dir;
  const Env posix;
  REQUIRE(posix.out().MakeFolders(dir.File("p/q")).ok());
  REQUIRE(posix.out().MakeFolders(dir.File("p/q")).ok());  // as mkdir -p: there already
  testing::WriteFile(dir.File("p/q/m.ptd"), PtdBytes("a"));
  testing::WriteFile(dir.File("p/other.ptd"), PtdBytes("a"));
  Result<std::unique_ptr<UpdateLock>> lock =
      posix.out().LockForUpdate(dir.File("p/q/m.ptd"), nullptr);
  REQUIRE(lock.ok());
  Result<std::shared_ptr<const InputFile>> same =
      DefaultInputFs()->Open(dir.File("p/q/../q/m.ptd"));
  Result<std::shared_ptr<const InputFile>> other = DefaultInputFs()->Open(dir.File("p/other.ptd"));
  REQUIRE(same.ok());
  REQUIRE(other.ok());
  CHECK((*lock)->Covers(**same));
  CHECK_FALSE((*lock)->Covers(**other));
  // A file a folder stands in the way of cannot be made a folder.
  Status s = posix.out().MakeFolders(dir.File("p/other.ptd/r"));
  CHECK(s.code() == Code::kIoError);
  CHECK(Contains(s.message(), "cannot create the folder " + dir.File("p/other.ptd/r")));
}

TEST_CASE("env: one file under two names is one file; two files are two") {
  testing::TempDir dir;
  testing::WriteFile(dir.File("a.bin"), Bytes(64, 1));
  testing::WriteFile(dir.File("b.bin"), Bytes(64, 1));
  REQUIRE(::link(dir.File("a.bin").c_str(), dir.File("a2.bin").c_str()) == 0);
  Result<SourcePtr> a = FileSource(dir.File("a.bin"));
  Result<SourcePtr> a2 = FileSource(dir.File("a2.bin"), 8);
  Result<SourcePtr> b = FileSource(dir.File("b.bin"));
  REQUIRE((a.ok() && a2.ok() && b.ok()));
  CHECK(SameFile(**a, **a2));
  CHECK_FALSE(SameFile(**a, **b));
  CHECK_FALSE(SameFile(**a, *OwnedSource(Bytes(64, 1))));
  CHECK((*a)->file_range()->file->Links() == 2);
  CHECK((*b)->file_range()->file->Links() == 1);
  // Memory files are each their own.
  Files f;
  Result<SourcePtr> m1 = FileSource(f.fs, kDir + "a.ptd");
  Result<SourcePtr> m2 = FileSource(f.fs, kDir + "b.ptd");
  REQUIRE((m1.ok() && m2.ok()));
  CHECK(SameFile(**m1, **m1));
  CHECK_FALSE(SameFile(**m1, **m2));
}

TEST_CASE("path text: names, stems, folders and joins without the disk") {
  CHECK(PathFileName("a/b.pte") == "b.pte");
  CHECK(PathFileName("b.pte") == "b.pte");
  CHECK(PathFileName("a/") == "");
  CHECK(PathStem("a/b.c.pte") == "b.c");
  CHECK(PathFolder("a/b.pte") == "a");
  CHECK(PathFolder("b.pte") == "");
  CHECK(JoinPath("a", "b.pte") == "a/b.pte");
  CHECK(JoinPath("a/", "b.pte") == "a/b.pte");
  CHECK(JoinPath("", "b.pte") == "b.pte");
  CHECK(JoinPath("a", "/b.pte") == "/b.pte");
  CHECK(SamePathText("a/./b.pte", "a//b.pte"));
  CHECK(SamePathText("a/x/../b.pte", "a/b.pte"));
  CHECK_FALSE(SamePathText("a/b.pte", "b.pte"));
}

}  // namespace
}  // namespace etpack
