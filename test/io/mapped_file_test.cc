// ArtifactFile keeps only a file's head in memory: PteFile, PtdFile and
// BpteFile open files whose bulk data is larger than the address space
// they are allowed, and read that data through the file. Each check runs
// in a forked child with RLIMIT_AS set a little above its current size.

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "catch.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "etpack/bpte_file.h"
#include "etpack/ptd_file.h"
#include "etpack/pte_file.h"
#include "etpack/writer.h"
#include "test_files.h"
#include "test_programs.h"

namespace etpack {
namespace {

using testing::Pattern;
using testing::SmallProgram;
using testing::TempDir;

constexpr uint64_t kBulk = uint64_t{96} << 20;      // bytes of data in each file
constexpr uint64_t kHeadroom = uint64_t{48} << 20;  // address space the child may add

SourcePtr Zeros(uint64_t n) {
  return GeneratorSource("zeros", n, [](uint64_t, uint8_t* dst, size_t len) {
    std::memset(dst, 0, len);
    return Status::OK();
  });
}

uint64_t VmSize() {
  uint64_t kib = 0;
  if (FILE* f = std::fopen("/proc/self/status", "re")) {
    char line[256];
    while (std::fgets(line, sizeof line, f)) {
      if (std::sscanf(line, "VmSize: %lu kB", &kib) == 1) break;
    }
    std::fclose(f);
  }
  return kib << 10;
}

// Runs `check` in a child whose address space may grow by kHeadroom only,
// less than kBulk. True when it returned OK there; a failure is printed
// when `expect_ok`. No Catch2 in the child.
bool PassesUnderCap(const std::function<Status()>& check, bool expect_ok = true) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const rlim_t cap = VmSize() + kHeadroom;
    const struct rlimit limit = {cap, cap};
    if (::setrlimit(RLIMIT_AS, &limit) != 0) ::_exit(2);
    const Status s = check();
    if (!s.ok() && expect_ok) std::fprintf(stderr, "under the cap: %s\n", s.ToString().c_str());
    ::_exit(s.ok() ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  // Under AddressSanitizer an allocation beyond the cap aborts the child
  // (its operator new reports out-of-memory) instead of throwing: it did not
  // fit under the cap either.
  if (!WIFEXITED(status)) return false;
  REQUIRE(WEXITSTATUS(status) != 2);
  return WEXITSTATUS(status) == 0;
}

// Reads the last byte of `s` (through the file, beyond the head in memory).
Status ReadLast(const SourcePtr& s) {
  uint8_t b = 1;
  ETPACK_RETURN_IF_ERROR(s->ReadAt(s->size() - 1, &b, 1));
  return b == 0 ? Status::OK() : InvalidArgument("read the wrong byte");
}

// The control: holding the whole file in memory does not fit under the cap.
void CheckCapBites(const std::string& path) {
  CHECK_FALSE(PassesUnderCap(
      [&]() -> Status {
        ETPACK_ASSIGN_OR_RETURN(SourcePtr file, FileSource(path));
        return ReadAll(*file, file->size()).status();
      },
      /*expect_ok=*/false));
}

TEST_CASE("a .pte larger than the address space allows opens and reads") {
  TempDir dir;
  const std::string path = dir.File("big.pte");
  auto plan = PlanPte(SmallProgram({Zeros(kBulk)}));
  REQUIRE(plan.ok());
  REQUIRE(WriteArtifactFile(path, plan->artifact).ok());
  CheckCapBites(path);
  CHECK(PassesUnderCap([&]() -> Status {
    ETPACK_ASSIGN_OR_RETURN(auto f, PteFile::Open(path));
    return ReadLast(f->SegmentSource(0));
  }));
}

TEST_CASE("a .ptd larger than the address space allows opens and reads") {
  TempDir dir;
  const std::string path = dir.File("big.ptd");
  PtdInput in;
  in.buffers = {Zeros(kBulk)};
  in.entries = {PtdEntry{"weight", 0, 64, std::nullopt}};
  REQUIRE(WritePtd(path, in).ok());
  CheckCapBites(path);
  CHECK(PassesUnderCap([&]() -> Status {
    ETPACK_ASSIGN_OR_RETURN(auto f, PtdFile::Open(path));
    return ReadLast(f->EntrySource(0));
  }));
}

TEST_CASE("a segmented .bpte larger than the address space allows opens and reads") {
  TempDir dir;
  const std::string path = dir.File("big.bpte");
  auto pte = PlanPte(SmallProgram({Zeros(kBulk)}));
  REQUIRE(pte.ok());
  BundledValue out;
  out.kind = BundledValue::Kind::kTensor;
  out.layout = {1, {40}, {0}};  // CHAR[40]
  out.data = Pattern(40, 3);
  BpteInput in;
  in.program = pte->artifact;
  in.suites = {{"forward", {BundledTestCase{{}, {out}}}}};
  BpteOptions options;
  options.layout = BpteLayout::kSegmented;
  auto plan = PlanBpte(in, options);
  REQUIRE(plan.ok());
  REQUIRE(WriteArtifactFile(path, plan->artifact).ok());
  CheckCapBites(path);
  CHECK(PassesUnderCap([&]() -> Status {
    ETPACK_ASSIGN_OR_RETURN(auto f, BpteFile::Open(path));
    ETPACK_RETURN_IF_ERROR(f->Suites().status());
    return ReadLast(f->program().SegmentSource(0));
  }));
}

// A file source whose first read puts `value` in the 64-bit header field
// at `field`, while later reads show the real one: what a file rewritten
// in place between the read that sizes the head and the head's own read
// would look like.
class LyingHead final : public Source {
 public:
  LyingHead(SourcePtr file, uint64_t field, uint64_t value)
      : file_(std::move(file)), field_(field), value_(value) {}
  uint64_t size() const override { return file_->size(); }
  Status ReadAt(uint64_t offset, void* dst, size_t n) const override {
    ETPACK_RETURN_IF_ERROR(file_->ReadAt(offset, dst, n));
    if (lied_) return Status::OK();
    lied_ = true;
    for (uint64_t i = 0; i < 8; ++i) {
      if (field_ + i >= offset && field_ + i < offset + n) {
        static_cast<uint8_t*>(dst)[field_ + i - offset] = static_cast<uint8_t>(value_ >> (8 * i));
      }
    }
    return Status::OK();
  }
  const FileRange* file_range() const override { return file_->file_range(); }
  std::string Describe() const override { return file_->Describe(); }

 private:
  SourcePtr file_;
  uint64_t field_;
  uint64_t value_;
  mutable bool lied_ = false;
};

// The flatbuffer is larger than the page the readers always read, and the
// header first read says it is tiny: validation must refuse the file, not
// read past the head it holds.
TEST_CASE("a header that changes between the first read and validation is refused") {
  TempDir dir;
  std::vector<SourcePtr> constants;
  for (int i = 0; i < 300; ++i) constants.push_back(Pattern(16, static_cast<uint8_t>(i)));
  std::vector<BundledValue> outputs(1);
  outputs[0].kind = BundledValue::Kind::kTensor;
  outputs[0].layout = {1, {16384}, {0}};  // CHAR[16384], inline in the flatbuffer
  outputs[0].data = Pattern(16384, 5);

  auto pte = PlanPte(SmallProgram(constants));
  REQUIRE(pte.ok());
  REQUIRE(pte->layout.program_size > 4096);  // more than the first read peeks at
  const std::string pte_path = dir.File("x.pte");
  REQUIRE(WriteArtifactFile(pte_path, pte->artifact).ok());

  PtdInput ptd_in;
  ptd_in.buffers = {Pattern(16, 1)};
  for (int i = 0; i < 300; ++i) {
    ptd_in.entries.push_back(PtdEntry{"weight." + std::to_string(i), 0, 16, std::nullopt});
  }
  auto ptd = PlanPtd(ptd_in);
  REQUIRE(ptd.ok());
  const std::string ptd_path = dir.File("x.ptd");
  REQUIRE(WriteArtifactFile(ptd_path, ptd->artifact).ok());

  BpteInput bpte_in;
  bpte_in.program = pte->artifact;
  bpte_in.suites = {{"forward", {BundledTestCase{{}, outputs}}}};
  BpteOptions segmented;
  segmented.layout = BpteLayout::kSegmented;
  auto bpte = PlanBpte(bpte_in, segmented);
  REQUIRE(bpte.ok());
  const std::string bpte_path = dir.File("x.bpte");
  REQUIRE(WriteArtifactFile(bpte_path, bpte->artifact).ok());

  auto lying = [](const std::string& path, uint64_t field) -> SourcePtr {
    Result<SourcePtr> file = FileSource(path);
    REQUIRE(file.ok());
    return std::make_shared<LyingHead>(*file, field, 64);
  };
  // The field offsets are the header's size field: eh00 program_size,
  // FH01 flatbuffer_size, bh00 flatbuffer_size (docs/formats.md §1.4).
  std::vector<Status> results = {PteFile::Open(pte_path, lying(pte_path, 16)).status(),
                                 PtdFile::Open(ptd_path, lying(ptd_path, 24)).status(),
                                 BpteFile::Open(bpte_path, lying(bpte_path, 16)).status()};
  for (const Status& s : results) {
    INFO(s.ToString());
    CHECK(s.code() == Code::kCorrupt);
    CHECK_THAT(s.message(), catch_text::Contains("changed while being opened"));
  }
  // Told the truth, the same files open.
  CHECK(PteFile::Open(pte_path).ok());
  CHECK(PtdFile::Open(ptd_path).ok());
  CHECK(BpteFile::Open(bpte_path).ok());
}

}  // namespace
}  // namespace etpack
