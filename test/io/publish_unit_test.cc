// A unit of several files (a program with its .ptd, a program with a shard
// set) replacing an older unit, killed at each of its publishing steps in
// turn: every kill leaves all old files, all new files, or a state Verify
// refuses, naming the marker Publish() left (io/publish_marker.h). A later
// write of the unit clears it; a failed write keeps a marker it found.

#include <unistd.h>

#include <map>
#include <string>
#include <vector>
#include "catch.h"

#include "etpack/external_data.h"
#include "etpack/ptd.h"
#include "etpack/pte.h"
#include "etpack/verify.h"
#include "etpack/writer.h"
#include "fault_output.h"
#include "io/posix_calls.h"
#include "io/posix_output.h"
#include "kill_at.h"
#include "test_files.h"
#include "test_programs.h"

namespace etpack {
namespace {

using catch_text::Contains;
using testing::Pattern;
using testing::SmallProgram;
using testing::TempDir;

constexpr const char* kMarkerSuffix = ".etpack-publishing";

// A program m.pte whose constants live in m.ptd (or in shards of at most
// `shard_bytes`); `seed` makes another run's bytes.
struct Unit {
  PtePlan program;
  std::vector<PtdFilePlan> data;
  std::string pte;

  ArtifactFiles Files() const {
    ArtifactFiles files = PtdFiles(data);
    files.push_back({pte, &program.artifact});
    return files;
  }
  std::vector<std::string> Paths() const {
    std::vector<std::string> paths;
    for (const auto& f : Files()) paths.push_back(f.first);
    return paths;
  }
};

Unit MakeUnit(const TempDir& dir, uint8_t seed, uint64_t shard_bytes) {
  // The delegate stands for the graph: another run's program, with data of
  // the same keys and layouts, so only the marker can tell a mixed unit.
  PteInput in = SmallProgram({Pattern(8192, seed), Pattern(16384, seed + 1)},
                             {Pattern(100, static_cast<uint8_t>(seed + 2))});
  auto split = ExternalizeConstants(std::move(in));
  INFO(split.status().ToString());
  REQUIRE(split.ok());
  Unit unit;
  unit.pte = dir.File("m.pte");
  auto program = PlanPte(std::move(split->first));
  INFO(program.status().ToString());
  REQUIRE(program.ok());
  unit.program = std::move(program).value();
  PtdOptions options;
  options.max_shard_bytes = shard_bytes;
  auto data = PlanPtdFiles(dir.File("m.ptd"), split->second, options);
  INFO(data.status().ToString());
  REQUIRE(data.ok());
  unit.data = std::move(data).value();
  return unit;
}

using Bytes = std::vector<uint8_t>;
std::map<std::string, Bytes> Take(const std::vector<std::string>& paths) {
  std::map<std::string, Bytes> bytes;
  for (const std::string& p : paths) bytes[p] = testing::ReadFile(p);
  return bytes;
}

std::vector<std::string> Markers(const TempDir& dir) {
  std::vector<std::string> markers;
  for (const std::string& n : dir.List()) {
    if (n.size() > 18 && n.compare(n.size() - 18, 18, kMarkerSuffix) == 0) markers.push_back(n);
  }
  return markers;
}

void Write(const Unit& unit, PosixCalls* calls = DefaultPosixCalls()) {
  auto fs = NewPosixOutputFs(OutputOptions(), calls);
  Status s = WriteArtifactFiles(*fs, unit.Files());
  INFO(s.ToString());
  REQUIRE(s.ok());
}

// Writes `unit` in a child killed at step `kill_at` (testing::KilledAt).
bool KilledAt(const Unit& unit, int kill_at) {
  return testing::KilledAt(kill_at, [&](PosixCalls* calls) {
    return WriteArtifactFiles(*NewPosixOutputFs(OutputOptions(), calls), unit.Files());
  });
}

Result<VerifyReport> VerifyUnit(const Unit& unit) {
  std::vector<std::string> files = {unit.pte};
  for (const PtdFilePlan& f : unit.data) files.push_back(f.path);
  return Verify(files);
}

// Kills a write of the new unit over the old at every step; returns how
// many kills left the files mixed (Verify refused each of them).
int CheckKills(uint64_t shard_bytes, size_t outputs) {
  TempDir dir, ref_old, ref_new;
  const Unit old_unit = MakeUnit(dir, 1, shard_bytes), new_unit = MakeUnit(dir, 50, shard_bytes);
  REQUIRE(old_unit.Paths() == new_unit.Paths());
  REQUIRE(old_unit.Paths().size() == outputs);
  Write(old_unit);
  const auto old_bytes = Take(old_unit.Paths());
  Write(new_unit);
  const auto new_bytes = Take(new_unit.Paths());
  REQUIRE(old_bytes != new_bytes);

  int mixed = 0, kills = 0;
  for (int step = 1;; ++step) {
    INFO("killed before publishing step " << step);
    Write(old_unit);
    REQUIRE(Take(old_unit.Paths()) == old_bytes);
    REQUIRE(Markers(dir).empty());
    if (!KilledAt(new_unit, step)) break;
    ++kills;
    const auto now = Take(new_unit.Paths());
    Result<VerifyReport> v = VerifyUnit(new_unit);
    REQUIRE(v.ok());
    const std::string verdict = v->verdict.ToString();
    INFO(verdict);
    if (now != old_bytes && now != new_bytes) {
      ++mixed;
      CHECK(!v->ok());
      CHECK_THAT(verdict, Contains(kMarkerSuffix));
      CHECK_THAT(verdict, Contains("write the unit again"));
      CHECK(Markers(dir).size() == outputs);
      // Nothing but the markers tells: without them the mixed unit passes
      // (as it did before Publish() left markers).
      for (const std::string& m : Markers(dir)) REQUIRE(::unlink(dir.File(m).c_str()) == 0);
      Result<VerifyReport> unmarked = VerifyUnit(new_unit);
      REQUIRE(unmarked.ok());
      CHECK(unmarked->ok());
    } else if (v->ok()) {
      CHECK(Markers(dir).empty());
    } else {
      // Whole, but the markers were not gone yet.
      CHECK_THAT(verdict, Contains(kMarkerSuffix));
    }
    // Writing the unit again clears the state.
    Write(new_unit);
    CHECK(Take(new_unit.Paths()) == new_bytes);
    CHECK(Markers(dir).empty());
    Result<VerifyReport> again = VerifyUnit(new_unit);
    REQUIRE(again.ok());
    CHECK(again->ok());
  }
  // Every sync, link, rename and removal of the unit was a kill point.
  CHECK(kills >= static_cast<int>(4 * outputs));
  return mixed;
}

TEST_CASE("a program and its .ptd killed at each publishing step: old, new or refused") {
  CHECK(CheckKills(0, 2) > 0);
}

TEST_CASE("a program and two shards killed at each publishing step: old, new or refused") {
  CHECK(CheckKills(20000, 3) > 0);
}

// Counts the folder syncs of a write: each output's after its rename, and
// each marker's before any rename.
struct CountSyncs : PosixCalls {
  int syncs = 0;
  int FsyncDirectory(int fd) override { return ++syncs, PosixCalls::FsyncDirectory(fd); }
};

TEST_CASE("only a unit of several files that replaces a file is marked") {
  TempDir dir;
  const Unit unit = MakeUnit(dir, 1, 0);
  CountSyncs fresh, replacing, single;
  Write(unit, &fresh);  // nothing to mix with
  CHECK(fresh.syncs == 2);
  Write(unit, &replacing);
  CHECK(replacing.syncs == 4);  // and the two markers'
  auto fs = NewPosixOutputFs(OutputOptions(), &single);
  REQUIRE(WriteArtifactFiles(*fs, {{unit.pte, &unit.program.artifact}}).ok());
  CHECK(single.syncs == 1);  // one rename decides it
  CHECK(Markers(dir).empty());
}

TEST_CASE("a failed write keeps the marker a killed one left, and removes its own") {
  TempDir dir;
  const Unit unit = MakeUnit(dir, 1, 0);
  Write(unit);
  REQUIRE(VerifyUnit(unit)->ok());
  // A failed write of a whole unit takes back its own markers.
  FaultyPosixCalls no_link(FaultStep::kLink);
  auto fs = NewPosixOutputFs(OutputOptions(), &no_link);
  CHECK(!WriteArtifactFiles(*fs, unit.Files()).ok());
  CHECK(Markers(dir).empty());
  CHECK(VerifyUnit(unit)->ok());

  // A marker a killed write left stays through a failed one.
  const std::string marker = dir.File(".m.pte" + std::string(kMarkerSuffix));
  testing::WriteFile(
      marker, std::string("etpack-publishing 1\n") + unit.data[0].path + "\n" + unit.pte + "\n");
  Result<VerifyReport> v = VerifyUnit(unit);
  REQUIRE(v.ok());
  CHECK(!v->ok());
  CHECK_THAT(v->verdict.ToString(), Contains(marker));
  CHECK_THAT(v->verdict.ToString(), Contains(unit.data[0].path + ", " + unit.pte));
  CHECK(!WriteArtifactFiles(*fs, unit.Files()).ok());
  CHECK(Markers(dir) == std::vector<std::string>{".m.pte" + std::string(kMarkerSuffix)});
  CHECK(!VerifyUnit(unit)->ok());
  // A single file written over it clears its marker.
  auto plain = NewPosixOutputFs();
  REQUIRE(WriteArtifactFiles(*plain, {{unit.pte, &unit.program.artifact}}).ok());
  CHECK(Markers(dir).empty());
  CHECK(VerifyUnit(unit)->ok());
}

}  // namespace
}  // namespace etpack
