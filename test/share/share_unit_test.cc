// WriteShare (etpack/share.h) publishes OUTDIR as one unit: a share killed at
// any of its publishing steps leaves OUTDIR all old or all new; a re-share
// leaves exactly the new unit; a failed share leaves nothing it made; a
// folder that is not share's is never replaced.

#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>
#include "catch.h"

#include "etpack/pte.h"
#include "etpack/share.h"
#include "etpack/verify.h"
#include "fault_output.h"
#include "io/posix_calls.h"
#include "kill_at.h"
#include "share/share_write.h"
#include "share_test_util.h"
#include "test_files.h"
#include "test_programs.h"

namespace etpack {
namespace {

using testing::Pattern;
using testing::SmallProgram;
using testing::TempDir;

// A family of `n` programs sharing two weights; `seed` makes another
// family's bytes.
std::vector<std::string> Family(const TempDir& dir, int n, uint8_t seed) {
  std::vector<std::string> paths;
  for (int v = 0; v < n; ++v) {
    paths.push_back(dir.File("v" + std::to_string(v) + ".pte"));
    const PteInput in = SmallProgram({Pattern(8192, seed), Pattern(16384, seed + 1),
                                      Pattern(4096, static_cast<uint8_t>(seed + 10 + v))},
                                     {});
    REQUIRE(WritePte(paths.back(), in).ok());
  }
  return paths;
}

SharePlan Plan(const std::vector<std::string>& in, const std::string& out,
               uint64_t max_shard_bytes = 0) {
  ShareOptions options;
  options.out_dir = out;
  options.max_shard_bytes = max_shard_bytes;
  Result<SharePlan> plan = PlanShare(in, options);
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  return std::move(plan).value();
}

void Write(const SharePlan& plan) {
  Status s = WriteShare(plan);
  INFO(s.ToString());
  REQUIRE(s.ok());
}

// Every file of a folder and its bytes; `exists` false when there is none.
struct Snapshot {
  bool exists = false;
  std::map<std::string, std::vector<uint8_t>> files;
  bool operator==(const Snapshot& o) const { return exists == o.exists && files == o.files; }
};

std::string Describe(const Snapshot& s) {
  std::string text = s.exists ? "" : "(none)";
  for (const auto& [name, bytes] : s.files) text += name + ":" + std::to_string(bytes.size()) + " ";
  return text;
}

Snapshot Take(const std::string& dir) {
  Snapshot s;
  s.exists = std::filesystem::exists(dir);
  if (!s.exists) return s;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    s.files[e.path().filename().string()] = testing::ReadFile(e.path().string());
  }
  return s;
}

std::set<std::string> Names(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.insert(e.path().filename().string());
  }
  return names;
}

// Every program of a written share verifies with its data files.
void CheckVerifies(const SharePlan& plan) {
  for (const ShareFileReport& f : plan.report.files) testing::CheckVerifies(f);
}

// Runs WriteShareWith(plan) in a child killed at step `kill_at`
// (testing::KilledAt).
bool KilledAt(const SharePlan& plan, int kill_at, bool exchange) {
  return testing::KilledAt(
      kill_at,
      [&](PosixCalls* calls) { return WriteShareWith(plan, WriteOptions(), nullptr, calls); },
      exchange);
}

// The hidden folders a unit leaves beside OUTDIR when it is killed.
std::vector<std::string> Hidden(const std::string& parent) {
  std::vector<std::string> hidden;
  for (const std::string& n : Names(parent)) {
    if (n.rfind(".out.etpack-", 0) == 0) hidden.push_back(n);
  }
  return hidden;
}

// Kills a re-share of OUTDIR at each of its publishing steps in turn: each
// kill leaves OUTDIR the old unit or the new one (or, without
// RENAME_EXCHANGE, between its two renames, no OUTDIR and the old unit
// whole under a hidden name), and the next share cleans up after it.
void CheckKills(bool exchange) {
  TempDir a, b, work, ref;
  const std::vector<std::string> old_in = Family(a, 3, 1);
  std::vector<std::string> new_in = Family(b, 2, 100);
  const std::string out = work.File("out");
  // The old unit: three programs, one shared file. The new one: two
  // programs (v2 dropped), the shared data as shards.
  const SharePlan old_plan = Plan(old_in, out);
  const SharePlan new_plan = Plan(new_in, out, 20000);
  REQUIRE(new_plan.report.shared_files.size() >= 2);
  Write(Plan(old_in, ref.File("out")));
  const Snapshot old_unit = Take(ref.File("out"));
  Write(Plan(new_in, ref.File("new"), 20000));
  Snapshot new_unit = Take(ref.File("new"));
  REQUIRE(old_unit.files.count("v2.pte") == 1);
  REQUIRE(new_unit.files.count("v2.pte") == 0);

  int kills = 0;
  for (int step = 1;; ++step) {
    INFO("killed before publishing step " << step);
    Write(old_plan);
    REQUIRE(Take(out) == old_unit);
    REQUIRE(Hidden(work.path()).empty());
    if (!KilledAt(new_plan, step, exchange)) break;
    ++kills;
    const Snapshot now = Take(out);
    const bool old_whole = now == old_unit, new_whole = now == new_unit;
    if (!old_whole && !new_whole) {
      // Only the fallback's window between its two renames: no OUTDIR, the
      // old unit whole beside it.
      REQUIRE_FALSE(exchange);
      REQUIRE_FALSE(now.exists);
      bool found = false;
      for (const std::string& h : Hidden(work.path())) {
        found = found || Take(work.File(h)) == old_unit;
      }
      CHECK(found);
    }
    if (new_whole) CheckVerifies(new_plan);
    // The next share succeeds, leaves exactly its unit and removes what the
    // killed one left.
    Write(new_plan);
    INFO(Describe(Take(out)) << " vs " << Describe(new_unit));
    CHECK(Take(out) == new_unit);
    CHECK(Hidden(work.path()).empty());
  }
  // Building, syncing, naming, exchanging, removing: many steps, each killed.
  CHECK(kills >= 8);
}

TEST_CASE("share unit: killed at any publishing step, OUTDIR is all old or all new") {
  CheckKills(true);
}

TEST_CASE("share unit: without RENAME_EXCHANGE a kill never mixes two units either") {
  CheckKills(false);
}

TEST_CASE("share unit: a re-share leaves exactly the new unit") {
  TempDir a, work;
  const std::vector<std::string> in = Family(a, 3, 1);
  const std::string out = work.File("out");
  Write(Plan(in, out, 20000));
  REQUIRE(Names(out).size() > 5);  // three programs, several shards, the marker
  // Another shard size, one program dropped: the old shards and v2.pte go.
  const SharePlan again = Plan({in[0], in[1]}, out);
  Write(again);
  CHECK(Names(out) == std::set<std::string>{".etpack-unit", "shared.ptd", "v0.pte", "v1.pte"});
  CHECK(Names(work.path()) == std::set<std::string>{"out"});
  CheckVerifies(again);
}

TEST_CASE("share unit: a folder that is not share's is never replaced") {
  TempDir a, work;
  const std::vector<std::string> in = Family(a, 2, 1);
  const std::string out = work.File("out");
  std::filesystem::create_directories(out);
  testing::WriteFile(out + "/notes.txt", "mine");
  const Status s = WriteShare(Plan(in, out));
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(s.message().find("notes.txt") != std::string::npos);
  CHECK(Names(out) == std::set<std::string>{"notes.txt"});
  CHECK(Names(work.path()) == std::set<std::string>{"out"});

  // A share's folder to which the user added a file: refused too.
  std::filesystem::remove(out + "/notes.txt");
  Write(Plan(in, out));  // an empty folder is taken
  testing::WriteFile(out + "/notes.txt", "mine");
  const Snapshot before = Take(out);
  CHECK(WriteShare(Plan(in, out)).code() == Code::kInvalidArgument);
  CHECK(Take(out) == before);
  // An input inside OUTDIR would go with the old folder.
  std::filesystem::remove(out + "/notes.txt");
  // (The thin program with the data it loads with: share takes no program
  // whose EXTERNAL keys no input holds.) The planner or the writer refuses.
  const Snapshot unit = Take(out);
  ShareOptions options;
  options.out_dir = out;
  Result<SharePlan> plan = PlanShare({out + "/v0.pte", out + "/shared.ptd", in[1]}, options);
  const Status inside = plan.ok() ? WriteShare(*plan) : plan.status();
  INFO(inside.ToString());
  CHECK(inside.code() == Code::kInvalidArgument);
  CHECK(Take(out) == unit);
}

TEST_CASE("share unit: a failed share leaves nothing it made") {
  TempDir a, work;
  const std::vector<std::string> in = Family(a, 2, 1);
  const std::string out = work.File("p/q/out");
  for (FaultStep step : {FaultStep::kReserve, FaultStep::kWrite, FaultStep::kSync, FaultStep::kLink,
                         FaultStep::kDirectorySync}) {
    INFO(FaultStepName(step));
    std::unique_ptr<OutputFs> posix = NewPosixOutputFs();
    Fault fault;
    fault.step = step;
    fault.output = 1;
    std::unique_ptr<OutputFs> faulty = NewFaultInjectingOutputFs(posix.get(), fault);
    const Status s = WriteShare(Plan(in, out), WriteOptions(), Env{nullptr, faulty.get()});
    REQUIRE_FALSE(s.ok());
    CHECK(s.message().find(".etpack-unit-") == std::string::npos);  // named in OUTDIR
    CHECK(Names(work.path()).empty());  // no OUTDIR, no parents, nothing hidden
  }
  // A full disk, at the folder's own steps.
  FaultyPosixCalls full(FaultStep::kDirectorySync, ENOSPC);
  CHECK_FALSE(WriteShareWith(Plan(in, out), WriteOptions(), nullptr, &full).ok());
  CHECK(Names(work.path()).empty());
  // Cancelled by the caller (a progress callback that raises, in Python).
  WriteOptions cancelled;
  cancelled.cancel = [] { return true; };
  CHECK_FALSE(WriteShare(Plan(in, out), cancelled).ok());
  CHECK(Names(work.path()).empty());
  // Over an existing unit: it stays as it was.
  Write(Plan(in, out));
  const Snapshot before = Take(out);
  CHECK_FALSE(WriteShare(Plan(in, out), cancelled).ok());
  CHECK(Take(out) == before);
  CHECK(Names(work.File("p/q")) == std::set<std::string>{"out"});
}

TEST_CASE("share unit: an input changed in place while share runs: nothing is published") {
  TempDir a, work;
  const std::vector<std::string> in = Family(a, 3, 1);
  const std::string out = work.File("out");
  Write(Plan(in, out));
  const Snapshot before = Take(out);
  // Planned from the old bytes; then v0's constants change, size kept.
  const SharePlan plan = Plan(in, out);
  ::usleep(20000);
  std::vector<uint8_t> bytes = testing::ReadFile(in[0]);
  for (size_t i = bytes.size() / 2; i < bytes.size(); ++i) bytes[i] ^= 0x5a;
  {
    std::FILE* f = std::fopen(in[0].c_str(), "r+b");
    REQUIRE(f != nullptr);
    REQUIRE(std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size());
    std::fclose(f);
  }
  const Status s = WriteShare(plan);
  INFO(s.ToString());
  CHECK(s.code() == Code::kIoError);
  CHECK(s.message().find(in[0] + ": it was written to while it was read") != std::string::npos);
  CHECK(Take(out) == before);
  CHECK(Names(work.path()) == std::set<std::string>{"out"});
}

}  // namespace
}  // namespace etpack
