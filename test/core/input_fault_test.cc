// The input seam under faults: a read error, a short read and a file that
// ends early (injected through etpack/input.h, or a real truncation) are
// each a Status naming the file, and a write reading such a file publishes
// nothing. A reader whose file shrinks after opening fails its reads and
// never dies of SIGBUS.

#include <unistd.h>
#include "catch.h"

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "etpack/input.h"
#include "etpack/ptd.h"
#include "etpack/pte.h"
#include "etpack/pte_file.h"
#include "etpack/source.h"
#include "etpack/writer.h"
#include "fault_input.h"
#include "test_files.h"
#include "test_programs.h"

namespace etpack {
namespace {

using testing::Contains;
using testing::PatternBytes;
using testing::ReadFile;
using testing::SmallProgram;
using testing::TempDir;
using testing::WriteFile;
using Bytes = std::vector<uint8_t>;

constexpr uint64_t kData = 300000;  // bytes of the data file

// A .ptd holding all of `data` as one blob.
Result<PtdPlan> PlanBlob(const SourcePtr& data) {
  PtdInput in;
  in.buffers = {data};
  in.entries = {PtdEntry{"blob", 0, 64, std::nullopt}};
  return PlanPtd(in);
}

// Every byte read through the POSIX output's pread path, so the input
// seam sees them all (copy_file_range would copy in the kernel).
WriteOptions ThroughReads() {
  WriteOptions o;
  o.output.copy_file_range = false;
  o.output.window_bytes = 64 << 10;
  return o;
}

TEST_CASE("a short read is read on, not taken for the end of the file") {
  TempDir dir;
  const Bytes data = PatternBytes(kData, 3);
  WriteFile(dir.File("data.bin"), data);
  InputFault fault;
  fault.kind = InputFaultKind::kShortRead;
  fault.at = 1000;
  auto fs = NewFaultInjectingInputFs(DefaultInputFs(), fault);
  Result<SourcePtr> file = FileSource(*fs, dir.File("data.bin"));
  REQUIRE(file.ok());
  Result<Bytes> all = ReadAll(**file);
  REQUIRE(all.ok());
  CHECK(*all == data);

  Result<PtdPlan> plan = PlanBlob(*file);
  REQUIRE(plan.ok());
  Result<PtdPlan> direct = PlanBlob(OwnedSource(data));
  REQUIRE(direct.ok());
  REQUIRE(WriteArtifactFile(dir.File("x.ptd"), plan->artifact, ThroughReads()).ok());
  Result<Bytes> expected = WriteArtifactToMemory(direct->artifact);
  REQUIRE(expected.ok());
  CHECK(ReadFile(dir.File("x.ptd")) == *expected);
}

TEST_CASE("an input that fails or ends early is an error naming it, and nothing is published") {
  TempDir dir;
  const std::string data = dir.File("data.bin");
  WriteFile(data, PatternBytes(kData, 4));
  const std::string out = dir.File("x.ptd");
  const bool replace = GENERATE(false, true);
  const Bytes old = PatternBytes(99, 9);
  if (replace) WriteFile(out, old);

  InputFault fault;
  fault.kind = GENERATE(InputFaultKind::kRead, InputFaultKind::kShrink);
  fault.at = 100000;
  CAPTURE(static_cast<int>(fault.kind), replace);
  auto fs = NewFaultInjectingInputFs(DefaultInputFs(), fault);
  Result<SourcePtr> file = FileSource(*fs, data);
  REQUIRE(file.ok());
  Result<PtdPlan> plan = PlanBlob(*file);
  REQUIRE(plan.ok());

  const Status s = WriteArtifactFile(out, plan->artifact, ThroughReads());
  CAPTURE(s.message());
  CHECK(s.code() == Code::kIoError);
  CHECK(Contains(s.message(), out));   // the output it was writing
  CHECK(Contains(s.message(), data));  // and the input that failed
  if (fault.kind == InputFaultKind::kRead) {
    CHECK(Contains(s.message(), std::strerror(EIO)));
    CHECK(Contains(s.message(), "at file offset 100000"));
  } else {
    CHECK(Contains(s.message(), "file ended at offset 100000"));
  }
  std::set<std::string> left = {"data.bin"};
  if (replace) left.insert("x.ptd");
  CHECK(dir.List() == left);
  if (replace) CHECK(ReadFile(out) == old);
}

TEST_CASE("an input that cannot be opened is an error naming it") {
  TempDir dir;
  WriteFile(dir.File("data.bin"), PatternBytes(10, 1));
  InputFault fault;
  fault.kind = InputFaultKind::kOpen;
  fault.err = EACCES;
  auto fs = NewFaultInjectingInputFs(DefaultInputFs(), fault);
  Result<SourcePtr> file = FileSource(*fs, dir.File("data.bin"), 2, 4);
  REQUIRE_FALSE(file.ok());
  CHECK(file.status().code() == Code::kIoError);
  CHECK(Contains(file.status().message(), dir.File("data.bin")));
  CHECK(Contains(file.status().message(), std::strerror(EACCES)));
}

// The real thing: the file is cut short on disk after the first read.
class TruncatingInputFs final : public InputFsWrapper {
 public:
  TruncatingInputFs(std::string path, uint64_t to)
      : InputFsWrapper(DefaultInputFs()), path_(std::move(path)), to_(to) {}

  Result<std::shared_ptr<const InputFile>> Open(const std::string& path) override {
    ETPACK_ASSIGN_OR_RETURN(std::shared_ptr<const InputFile> file, InputFsWrapper::Open(path));
    return std::shared_ptr<const InputFile>(std::make_shared<File>(std::move(file), this));
  }

 private:
  class File final : public InputFileWrapper {
   public:
    File(std::shared_ptr<const InputFile> file, TruncatingInputFs* fs)
        : InputFileWrapper(std::move(file)), fs_(fs) {}
    Result<size_t> Read(uint64_t offset, void* dst, size_t n) const override {
      Result<size_t> got = InputFileWrapper::Read(offset, dst, n);
      if (!fs_->cut_.exchange(true)) {
        REQUIRE(::truncate(fs_->path_.c_str(), static_cast<off_t>(fs_->to_)) == 0);
      }
      return got;
    }

   private:
    TruncatingInputFs* fs_;
  };

  const std::string path_;
  const uint64_t to_;
  std::atomic<bool> cut_{false};
};

TEST_CASE("a source file truncated while it is written from publishes nothing") {
  TempDir dir;
  const std::string data = dir.File("data.bin");
  WriteFile(data, PatternBytes(kData, 5));
  TruncatingInputFs fs(data, 70000);
  Result<SourcePtr> file = FileSource(fs, data);
  REQUIRE(file.ok());
  Result<PtdPlan> plan = PlanBlob(*file);
  REQUIRE(plan.ok());
  const Status s = WriteArtifactFile(dir.File("x.ptd"), plan->artifact, ThroughReads());
  CAPTURE(s.message());
  CHECK(s.code() == Code::kIoError);
  CHECK(Contains(s.message(), data));
  CHECK(Contains(s.message(), "file ended at offset"));
  CHECK(dir.List() == std::set<std::string>{"data.bin"});
}

// A .pte with a 4 KiB flatbuffer or more and two constant segments' worth
// of data, written to `path`.
void WriteProgram(const std::string& path) {
  std::vector<SourcePtr> constants;
  for (int i = 0; i < 200; ++i) constants.push_back(testing::Pattern(100, static_cast<uint8_t>(i)));
  Result<PtePlan> plan = PlanPte(SmallProgram(constants));
  REQUIRE(plan.ok());
  REQUIRE(WriteArtifactFile(path, plan->artifact).ok());
}

TEST_CASE("a reader whose file ends early while opening fails naming it") {
  TempDir dir;
  const std::string path = dir.File("x.pte");
  WriteProgram(path);
  InputFault fault;
  fault.kind = GENERATE(InputFaultKind::kShrink, InputFaultKind::kRead);
  fault.at = 2000;  // inside the head
  auto fs = NewFaultInjectingInputFs(DefaultInputFs(), fault);
  Result<SourcePtr> file = FileSource(*fs, path);
  REQUIRE(file.ok());
  Result<std::unique_ptr<PteFile>> pte = PteFile::Open(path, *file);
  REQUIRE_FALSE(pte.ok());
  CAPTURE(pte.status().message());
  CHECK(pte.status().code() == Code::kIoError);
  CHECK(pte.status().message().rfind(path + ": ", 0) == 0);
}

// Before the head was read into memory it was mapped, and touching it after
// the file was truncated killed the process with SIGBUS.
TEST_CASE("a reader whose file is truncated after opening fails its reads, never SIGBUS") {
  TempDir dir;
  const std::string path = dir.File("x.pte");
  WriteProgram(path);
  Result<std::unique_ptr<PteFile>> pte = PteFile::Open(path);
  REQUIRE(pte.ok());
  const PteFile& f = **pte;
  REQUIRE(f.head_size() > 4096);
  REQUIRE(::truncate(path.c_str(), 0) == 0);

  uint64_t sum = 0;  // every byte of the head is still there
  for (uint64_t i = 0; i < f.head_size(); ++i) sum += f.head()[i];
  CHECK(sum > 0);
  CHECK(f.Tensors().size() == 200);
  REQUIRE_FALSE(f.layout().segments.empty());
  Result<Bytes> segment = ReadAll(*f.SegmentSource(0));
  REQUIRE_FALSE(segment.ok());
  CHECK(segment.status().code() == Code::kIoError);
  CHECK(Contains(segment.status().message(), path));
  CHECK(Contains(segment.status().message(), "file ended at offset"));
}

}  // namespace
}  // namespace etpack
