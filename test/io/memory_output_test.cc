// The in-memory outputs, the call-order rules every output shares, and the
// fault-injecting wrapper's own behaviour.

#include "catch.h"

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "etpack/output.h"
#include "etpack/source.h"
#include "etpack/writer.h"
#include "fault_output.h"
#include "output_test_util.h"
#include "test_files.h"

namespace etpack {
namespace {

using testing::Contains;
using testing::Open;
using testing::PublishOne;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

using Bytes = std::vector<uint8_t>;

TEST_CASE("Truncate cuts a reserved upper bound down to the bytes written") {
  MemoryOutputFs fs;
  auto out = Open(fs, "a.zst");
  REQUIRE(out->Reserve(10).ok());
  REQUIRE(out->Write(2, "ab", 2).ok());
  REQUIRE(out->Truncate(6).ok());
  CHECK(out->Write(6, "c", 1).code() == Code::kOutOfRange);  // past the new size

  auto ok = Open(fs, "b.zst");
  REQUIRE(ok->Reserve(10).ok());
  REQUIRE(ok->Write(2, "ab", 2).ok());
  REQUIRE(ok->Truncate(5).ok());
  REQUIRE(PublishOne(std::move(ok)).ok());
  CHECK(fs.files().at("b.zst") == Bytes{0, 0, 'a', 'b', 0});

  for (uint64_t bad : {uint64_t{3}, uint64_t{11}}) {
    auto o = Open(fs, "c.zst");
    REQUIRE(o->Reserve(10).ok());
    REQUIRE(o->Write(2, "ab", 2).ok());
    Status s = o->Truncate(bad);
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK(Contains(s.message(), "cannot truncate to " + std::to_string(bad)));
  }
  auto early = Open(fs, "d.zst");
  CHECK(early->Truncate(0).code() == Code::kInvalidArgument);  // before Reserve
}

TEST_CASE("memory output holds nothing until published") {
  MemoryOutputFs fs;
  auto out = Open(fs, "a.pte");
  REQUIRE(out->Reserve(10).ok());
  REQUIRE(out->Write(2, "ab", 2).ok());
  REQUIRE(out->Write(7, "xyz", 3).ok());
  CHECK(out->bytes_written() == 5);
  CHECK(out->destination() == "a.pte");
  CHECK(fs.files().empty());
  REQUIRE(PublishOne(std::move(out)).ok());
  REQUIRE(fs.files().count("a.pte") == 1);
  CHECK(fs.files().at("a.pte") == Bytes{0, 0, 'a', 'b', 0, 0, 0, 'x', 'y', 'z'});
}

TEST_CASE("an output synced by its writer is published as usual") {
  MemoryOutputFs fs;
  auto out = Open(fs, "a.pte");
  REQUIRE(out->Reserve(1).ok());
  REQUIRE(out->Write(0, "x", 1).ok());
  REQUIRE(out->Sync().ok());
  REQUIRE(out->Sync().ok());
  CHECK(out->Write(1, "", 0).code() == Code::kInvalidArgument);  // no writes after Sync
  CHECK(PublishOne(std::move(out)).code() == Code::kInvalidArgument);
  auto again = Open(fs, "a.pte");
  REQUIRE(again->Reserve(1).ok());
  REQUIRE(again->Write(0, "y", 1).ok());
  REQUIRE(again->Sync().ok());
  REQUIRE(PublishOne(std::move(again)).ok());
  CHECK(fs.files().at("a.pte") == Bytes{'y'});
}

TEST_CASE("memory output dropped unpublished leaves the old bytes") {
  MemoryOutputFs fs;
  auto first = Open(fs, "a.pte");
  REQUIRE(first->Reserve(1).ok());
  REQUIRE(first->Write(0, "1", 1).ok());
  REQUIRE(PublishOne(std::move(first)).ok());
  {
    auto second = Open(fs, "a.pte");
    REQUIRE(second->Reserve(1).ok());
    REQUIRE(second->Write(0, "2", 1).ok());
  }
  CHECK(fs.files().at("a.pte") == Bytes{'1'});
}

TEST_CASE("memory output rejects out-of-order writes, stickily") {
  MemoryOutputFs fs;
  auto out = Open(fs, "a.pte");
  REQUIRE(out->Reserve(10).ok());
  REQUIRE(out->Write(4, "ab", 2).ok());
  Status s = out->Write(5, "c", 1);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(out->Write(8, "d", 1).code() == Code::kInvalidArgument);
  CHECK(PublishOne(std::move(out)).message() == s.message());
  CHECK(fs.files().empty());
}

// Reaches a protected publishing step the way any out-of-tree wrapper does.
class StepCaller final : public OutputFileWrapper {
 public:
  using OutputFileWrapper::OutputFileWrapper;
  Status CallRename() { return Rename(); }
};

TEST_CASE("publishing steps out of order are refused") {
  MemoryOutputFs fs;
  auto early = Open(fs, "a.pte");
  CHECK(early->Sync().code() == Code::kInvalidArgument);  // before Reserve
  CHECK(PublishOne(std::move(early)).code() == Code::kInvalidArgument);
  auto out = std::make_unique<StepCaller>(Open(fs, "a.pte"));
  REQUIRE(out->Reserve(1).ok());
  CHECK(out->CallRename().code() == Code::kInvalidArgument);  // before Sync, Link
  CHECK(PublishOne(std::move(out)).code() == Code::kInvalidArgument);
  CHECK(Publish({}).ok());  // nothing to publish
  std::vector<std::unique_ptr<OutputFile>> none(1);
  CHECK(Publish(std::move(none)).code() == Code::kInvalidArgument);
  CHECK(fs.files().empty());
}

// Every implementation, for the tests of the shared rules. `keep` holds the
// file systems the output needs.
std::unique_ptr<OutputFile> Make(const std::string& which, const std::string& path,
                                 MemoryOutputFs& memory,
                                 std::vector<std::unique_ptr<OutputFs>>& keep) {
  if (which == "memory") return Open(memory, path);
  keep.push_back(NewPosixOutputFs());
  if (which == "fault") keep.push_back(NewFaultInjectingOutputFs(keep.back().get(), Fault{}));
  return Open(*keep.back(), path);
}

TEST_CASE("outputs report a write past the reserved size instead of aborting") {
  const std::string which = GENERATE(as<std::string>{}, "memory", "posix", "fault");
  CAPTURE(which);
  TempDir dir;
  MemoryOutputFs memory;
  std::vector<std::unique_ptr<OutputFs>> keep;
  auto out = Make(which, dir.File("out.pte"), memory, keep);
  REQUIRE(out->Reserve(10).ok());
  Status s = out->Write(8, "abc", 3);
  CHECK(s.code() == Code::kOutOfRange);
  CHECK(Contains(s.message(), "runs past the reserved size (10 bytes)"));
  CHECK(out->Write(~uint64_t{0}, "a", 1).message() == s.message());  // sticky
  CHECK(PublishOne(std::move(out)).message() == s.message());
  CHECK(dir.List().empty());
  CHECK(memory.files().empty());
}

TEST_CASE("outputs refuse to be published without Reserve") {
  const std::string which = GENERATE(as<std::string>{}, "memory", "posix", "fault");
  CAPTURE(which);
  TempDir dir;
  const std::string path = dir.File("out.pte");
  WriteFile(path, std::string("old"));
  MemoryOutputFs memory;
  std::vector<std::unique_ptr<OutputFs>> keep;
  auto out = Make(which, path, memory, keep);
  Status s = PublishOne(std::move(out));
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(Contains(s.message(), "before Reserve"));
  CHECK(ReadFile(path) == Bytes{'o', 'l', 'd'});
  CHECK(dir.List() == std::set<std::string>{"out.pte"});
  CHECK(memory.files().empty());
}

TEST_CASE("fault-injecting output fails the write that crosses the limit") {
  MemoryOutputFs memory;
  Fault fault;
  fault.after_bytes = 25;
  auto fs = NewFaultInjectingOutputFs(&memory, fault);
  auto out = Open(*fs, "a.pte");
  REQUIRE(out->Reserve(100).ok());
  REQUIRE(out->Write(0, "0123456789", 10).ok());
  REQUIRE(out->Write(10, "0123456789", 10).ok());
  Status s = out->Write(30, "0123456789", 10);
  CHECK(s.code() == Code::kIoError);
  CHECK(Contains(s.message(), "injected fault"));
  CHECK(Contains(s.message(), "a.pte"));
  CHECK(out->Write(50, "x", 1).message() == s.message());
  CHECK(out->bytes_written() == 25);  // only the part below the limit got through
  CHECK(PublishOne(std::move(out)).message() == s.message());
  CHECK(memory.files().empty());
}

TEST_CASE("fault-injecting output lets a write that ends exactly at the limit through") {
  MemoryOutputFs memory;
  Fault fault;
  fault.after_bytes = 10;
  auto fs = NewFaultInjectingOutputFs(&memory, fault);
  auto out = Open(*fs, "a.pte");
  REQUIRE(out->Reserve(100).ok());
  REQUIRE(out->Write(0, "0123456789", 10).ok());
  REQUIRE(out->Write(10, "", 0).ok());
  CHECK(out->Write(20, "a", 1).code() == Code::kIoError);
  CHECK(out->bytes_written() == 10);
}

TEST_CASE("fault-injecting output counts the bytes of all its outputs") {
  MemoryOutputFs memory;
  Fault fault;
  fault.after_bytes = 15;
  auto fs = NewFaultInjectingOutputFs(&memory, fault);
  auto a = Open(*fs, "a");
  auto b = Open(*fs, "b");
  REQUIRE(a->Reserve(10).ok());
  REQUIRE(a->Write(0, "0123456789", 10).ok());
  REQUIRE(b->Reserve(10).ok());
  CHECK(b->Write(0, "0123456789", 10).code() == Code::kIoError);
}

TEST_CASE("fault-injecting output forwards everything when nothing fails") {
  MemoryOutputFs memory;
  auto fs = NewFaultInjectingOutputFs(&memory, Fault{});
  auto out = Open(*fs, "a.pte");
  REQUIRE(out->Reserve(3).ok());
  REQUIRE(out->Write(0, "abc", 3).ok());
  REQUIRE(PublishOne(std::move(out)).ok());
  CHECK(memory.files().at("a.pte") == Bytes{'a', 'b', 'c'});
}

TEST_CASE("a mapping fault is injected only inside the POSIX output") {
  MemoryOutputFs memory;
  Fault fault;
  fault.step = FaultStep::kMap;
  auto fs = NewFaultInjectingOutputFs(&memory, fault);
  CHECK(fs->Create("a").status().code() == Code::kInvalidArgument);
}

TEST_CASE("WriteArtifactToMemory returns the artifact's bytes") {
  ArtifactPlan plan;
  plan.head = {1, 2, 3};
  plan.file_size = 8;
  plan.placements.push_back({4, 4, OwnedSource({9, 9})});
  auto bytes = WriteArtifactToMemory(plan);
  REQUIRE(bytes.ok());
  CHECK(*bytes == Bytes{1, 2, 3, 0, 9, 9, 0, 0});
  plan.placements[0].offset = 2;
  CHECK(WriteArtifactToMemory(plan).status().code() == Code::kInvalidArgument);
}

}  // namespace
}  // namespace etpack
