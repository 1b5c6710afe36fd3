// ReaderFactory::Open maps only a file's head: PteFile, PtdFile and
// BpteFile open files whose bulk data is larger than the address space
// they are allowed, and read that data through the file. Each check runs
// in a forked child with RLIMIT_AS set a little above its current size.

#include <catch2/catch.hpp>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

#include "etpack/bpte.h"
#include "etpack/ptd.h"
#include "etpack/pte_reader.h"
#include "etpack/writer.h"
#include "mapped_file.h"
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
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) != 2);
  return WEXITSTATUS(status) == 0;
}

// Reads the last byte of `s` (through the file, beyond the mapped head).
Status ReadLast(const SourcePtr& s) {
  uint8_t b = 1;
  ETPACK_RETURN_IF_ERROR(s->ReadAt(s->size() - 1, &b, 1));
  return b == 0 ? Status::OK() : InvalidArgument("read the wrong byte");
}

// The control: mapping the whole file does not fit under the cap.
void CheckCapBites(const std::string& path) {
  CHECK_FALSE(PassesUnderCap([&]() -> Status {
    ETPACK_ASSIGN_OR_RETURN(SourcePtr file, FileSource(path));
    const uint8_t* data = nullptr;
    return MapFileHead(*file, file->size(), &data).status();
  }, /*expect_ok=*/false));
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

}  // namespace
}  // namespace etpack
