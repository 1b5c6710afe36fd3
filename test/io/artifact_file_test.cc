// What every reader shares (etpack/artifact_file.h): the error codes its
// contract promises, the head-only mapping, RangeSource; and the typed
// views of a program (etpack/pte_file.h) checked against the flatbuffer.

#include "etpack/etpack.h"  // first: the umbrella compiles on its own

#include "catch.h"

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "etpack/bpte_file.h"
#include "etpack/ptd_file.h"
#include "etpack/pte_file.h"
#include "program_etpack_generated.h"
#include "test_files.h"
#include "test_programs.h"

namespace etpack {
namespace {

using testing::Golden;
using testing::Pattern;
using testing::ReadFile;
using testing::SmallProgram;
using testing::TempDir;

namespace fb = etpack::pte_fb;

// Opens `path` with each reader, as a file and from memory.
struct Opener {
  const char* format;
  std::function<Status(const std::string&)> open;
  std::function<Status(const std::string&, const uint8_t*, uint64_t)> from_memory;
};

std::vector<Opener> Openers() {
  return {
      {"pte", [](const std::string& p) { return PteFile::Open(p).status(); },
       [](const std::string& n, const uint8_t* d, uint64_t s) {
         return PteFile::FromMemory(n, d, s, nullptr).status();
       }},
      {"ptd", [](const std::string& p) { return PtdFile::Open(p).status(); },
       [](const std::string& n, const uint8_t* d, uint64_t s) {
         return PtdFile::FromMemory(n, d, s, nullptr).status();
       }},
      {"bpte", [](const std::string& p) { return BpteFile::Open(p).status(); },
       [](const std::string& n, const uint8_t* d, uint64_t s) {
         return BpteFile::FromMemory(n, d, s, nullptr).status();
       }},
  };
}

// 16-byte aligned storage for FromMemory.
struct Aligned {
  explicit Aligned(const std::vector<uint8_t>& bytes) : words((bytes.size() + 31) / 16) {
    if (!bytes.empty()) std::memcpy(words.data(), bytes.data(), bytes.size());
  }
  const uint8_t* data() const { return reinterpret_cast<const uint8_t*>(words.data()); }
  struct alignas(16) Word {
    uint8_t b[16];
  };
  std::vector<Word> words;
};

TEST_CASE("a missing file is kNotFound, naming it") {
  TempDir dir;
  const std::string path = dir.File("nope");
  for (const Opener& o : Openers()) {
    INFO(o.format);
    const Status s = o.open(path);
    CHECK(s.code() == Code::kNotFound);
    CHECK_THAT(s.message(), catch_text::Contains(path));
  }
}

TEST_CASE("a directory is kInvalidArgument") {
  TempDir dir;
  for (const Opener& o : Openers()) {
    INFO(o.format);
    CHECK(o.open(dir.path()).code() == Code::kInvalidArgument);
  }
}

TEST_CASE("malformed bytes are kCorrupt, from a file and from memory") {
  TempDir dir;
  const std::vector<std::string> goldens = {"pte_constants.pte", "ptd_basic.ptd",
                                            "bpte_basic.bpte"};
  const std::vector<Opener> openers = Openers();
  for (size_t i = 0; i < openers.size(); ++i) {
    const Opener& o = openers[i];
    INFO(o.format);
    const std::vector<uint8_t> good = ReadFile(Golden(goldens[i]));
    std::vector<std::vector<uint8_t>> bad = {
        {},                                                    // empty
        std::vector<uint8_t>(good.begin(), good.begin() + 7),  // shorter than an identifier
        std::vector<uint8_t>(good.begin(), good.end() - 1),    // truncated
        std::vector<uint8_t>(4096, 0xAB),                      // garbage
    };
    REQUIRE(good.size() > 8);
    std::vector<uint8_t> wrong_id = good;
    for (size_t j = 4; j < 8; ++j) wrong_id[j] = 'X';
    bad.push_back(wrong_id);
    for (size_t k = 0; k < bad.size(); ++k) {
      INFO("case " << k);
      const std::string path = dir.File(std::string("bad") + std::to_string(k));
      testing::WriteFile(path, bad[k]);
      const Status from_file = o.open(path);
      CHECK(from_file.code() == Code::kCorrupt);
      CHECK(from_file.message().rfind(path + ": ", 0) == 0);
      const Aligned mem(bad[k]);
      const Status from_memory = o.from_memory("mem", mem.data(), bad[k].size());
      CHECK(from_memory.code() == Code::kCorrupt);
      CHECK(from_memory.message().rfind("mem: ", 0) == 0);
    }
    // The unharmed bytes open both ways.
    CHECK(o.open(Golden(goldens[i])).ok());
    const Aligned mem(good);
    CHECK(o.from_memory("mem", mem.data(), good.size()).ok());
  }
}

TEST_CASE("OpenArtifact opens each kind as its reader; no artifact is kCorrupt") {
  const std::vector<std::pair<std::string, ArtifactKind>> goldens = {
      {"pte_constants.pte", ArtifactKind::kPte},
      {"ptd_basic.ptd", ArtifactKind::kPtd},
      {"bpte_basic.bpte", ArtifactKind::kBpte}};
  for (const auto& [name, kind] : goldens) {
    INFO(name);
    Result<OpenedArtifact> a = OpenArtifact(Golden(name));
    INFO(a.status().ToString());
    REQUIRE(a.ok());
    CHECK(a->kind == kind);
    CHECK((a->pte != nullptr) == (kind == ArtifactKind::kPte));
    CHECK((a->ptd != nullptr) == (kind == ArtifactKind::kPtd));
    CHECK((a->bpte != nullptr) == (kind == ArtifactKind::kBpte));
    CHECK(a->file().name() == Golden(name));
    CHECK(a->file().size() == ReadFile(Golden(name)).size());
  }
  // Opened as a kind it is not: the reader of that kind refuses it.
  Result<SourcePtr> pte = FileSource(Golden("pte_constants.pte"));
  REQUIRE(pte.ok());
  CHECK(OpenArtifact(ArtifactKind::kPtd, "x.pte", *pte).status().code() == Code::kCorrupt);

  TempDir dir;
  const std::string short_file = dir.File("short");
  const std::string other = dir.File("other");
  testing::WriteFile(short_file, std::vector<uint8_t>{1, 2, 3});
  testing::WriteFile(other, std::vector<uint8_t>(64, 'x'));
  for (const std::string& path : {short_file, other}) {
    INFO(path);
    const Status s = OpenArtifact(path).status();
    CHECK(s.code() == Code::kCorrupt);
    CHECK(s.message().rfind(path + ": ", 0) == 0);
    Result<SourcePtr> file = FileSource(path);
    REQUIRE(file.ok());
    Result<std::optional<ArtifactKind>> none = ArtifactKindOrNone(path, **file);
    REQUIRE(none.ok());
    CHECK(!none->has_value());
  }
  CHECK_THAT(OpenArtifact(other).status().message(),
             catch_text::Contains("'xxxx' at bytes 4..7 is none of ET12"));
  CHECK(OpenArtifact(dir.File("nope")).status().code() == Code::kNotFound);
}

TEST_CASE("memory that is not 16-byte aligned is kInvalidArgument") {
  const std::vector<uint8_t> good = ReadFile(Golden("pte_constants.pte"));
  std::vector<uint8_t> shifted(good.size() + 32);
  uint8_t* p = shifted.data() + 1;
  while (reinterpret_cast<uintptr_t>(p) % 16 == 0) ++p;
  std::memcpy(p, good.data(), good.size());
  for (const Opener& o : Openers()) {
    INFO(o.format);
    CHECK(o.from_memory("mem", p, good.size()).code() == Code::kInvalidArgument);
  }
}

TEST_CASE("Open(name, source) wants a file source") {
  auto r = PteFile::Open("mem", Pattern(100, 1));
  CHECK(r.status().code() == Code::kInvalidArgument);
  CHECK_THAT(r.status().message(), catch_text::Contains("FromMemory"));
}

TEST_CASE("a file holds only its head; RangeSource reads any byte") {
  TempDir dir;
  const std::string path = dir.File("x.pte");
  auto plan = PlanPte(SmallProgram({Pattern(10000, 3), Pattern(300, 4)}));
  REQUIRE(plan.ok());
  REQUIRE(WriteArtifactFile(path, plan->artifact).ok());
  auto f = PteFile::Open(path);
  REQUIRE(f.ok());
  const std::vector<uint8_t> bytes = ReadFile(path);
  CHECK((*f)->name() == path);
  CHECK((*f)->size() == bytes.size());
  CHECK((*f)->head_size() < (*f)->size());
  CHECK((*f)->head_size() >= (*f)->layout().program_size);
  CHECK(std::memcmp((*f)->head(), bytes.data(), (*f)->head_size()) == 0);
  std::vector<uint8_t> tail(100);
  REQUIRE((*f)->RangeSource(bytes.size() - 100, 100)->ReadAt(0, tail.data(), 100).ok());
  CHECK(std::equal(tail.begin(), tail.end(), bytes.end() - 100));
}

// The typed views say what the generated accessors say.
void CheckViewsAgainstFlatbuffer(const PteFile& f) {
  const fb::Program& p = f.program();
  REQUIRE(f.methods().size() == p.execution_plan()->size());
  size_t tensors = 0;
  for (uint32_t m = 0; m < p.execution_plan()->size(); ++m) {
    const fb::ExecutionPlan* plan = p.execution_plan()->Get(m);
    const PteMethod& method = f.methods()[m];
    CHECK(method.name == plan->name()->str());
    CHECK(method.value_count == plan->values()->size());
    CHECK(method.inputs.size() == (plan->inputs() ? plan->inputs()->size() : 0));
    CHECK(method.delegates.size() == (plan->delegates() ? plan->delegates()->size() : 0));
    for (uint32_t v = 0; v < plan->values()->size(); ++v) {
      if (plan->values()->Get(v)->val_as_Tensor() != nullptr) ++tensors;
    }
  }
  const std::vector<PteTensor> all = f.Tensors();
  CHECK(all.size() == tensors);
  for (const PteTensor& t : all) {
    INFO("method " << t.method << " value " << t.value);
    const fb::Tensor* ft =
        p.execution_plan()->Get(t.method)->values()->Get(t.value)->val_as_Tensor();
    REQUIRE(ft != nullptr);
    CHECK(t.layout.scalar_type == static_cast<int>(ft->scalar_type()));
    CHECK(t.layout.sizes.size() == ft->sizes()->size());
    const bool external = ft->extra_tensor_info() &&
                          ft->extra_tensor_info()->location() == fb::TensorDataLocation::EXTERNAL;
    if (external) {
      CHECK(t.data == TensorData::kExternal);
      CHECK(f.TensorSource(t).status().code() == Code::kNotFound);
    } else if (ft->allocation_info() != nullptr) {
      CHECK(t.data == TensorData::kMutable);
    } else if (ft->data_buffer_idx() > 0) {
      REQUIRE(t.data == TensorData::kConstant);
      REQUIRE(t.nbytes.has_value());
      auto src = f.TensorSource(t);
      REQUIRE(src.ok());
      CHECK((*src)->size() == *t.nbytes);
      CHECK(f.constant_buffers()[t.buffer_index].size >= *t.nbytes);
    } else {
      CHECK(t.data == TensorData::kNone);
    }
  }
  CHECK(f.named_data().size() == (p.named_data() ? p.named_data()->size() : 0));
}

TEST_CASE("the typed views of every golden program agree with the flatbuffer") {
  for (const char* name : {"pte_all_kinds.pte", "pte_constants.pte", "pte_delegates.pte",
                           "pte_delegates_inline.pte", "pte_external.pte", "pte_multi_method.pte",
                           "pte_mutable.pte", "pte_named_data.pte", "pte_no_segments.pte"}) {
    INFO(name);
    auto f = PteFile::Open(Golden(name));
    REQUIRE(f.ok());
    CheckViewsAgainstFlatbuffer(**f);
  }
}

TEST_CASE("TensorSource reads a constant's own bytes") {
  TempDir dir;
  const std::string path = dir.File("x.pte");
  std::vector<SourcePtr> constants = {Pattern(24, 1), Pattern(100, 2), Pattern(7, 3)};
  auto plan = PlanPte(SmallProgram(constants));
  REQUIRE(plan.ok());
  REQUIRE(WriteArtifactFile(path, plan->artifact).ok());
  auto f = PteFile::Open(path);
  REQUIRE(f.ok());
  const std::vector<PteTensor> tensors = (*f)->Tensors();
  REQUIRE(tensors.size() == 3);
  REQUIRE((*f)->methods().size() == 1);
  CHECK((*f)->methods()[0].name == "forward");
  for (size_t i = 0; i < 3; ++i) {
    const PteTensor& t = tensors[i];
    CHECK(t.data == TensorData::kConstant);
    CHECK(t.buffer_index == i + 1);
    CHECK(t.layout.scalar_type == dtype::kByte);
    CHECK(t.nbytes == constants[i]->size());
    auto src = (*f)->TensorSource(t);
    REQUIRE(src.ok());
    std::vector<uint8_t> got((*src)->size()), want(constants[i]->size());
    REQUIRE((*src)->ReadAt(0, got.data(), got.size()).ok());
    REQUIRE(constants[i]->ReadAt(0, want.data(), want.size()).ok());
    CHECK(got == want);
  }
}

}  // namespace
}  // namespace etpack
