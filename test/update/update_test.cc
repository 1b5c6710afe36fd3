// In-place weight update (etpack/update.h): which keys match, refusal before
// any byte changes, equal bytes skipped, integrity tables kept true, .pte
// constants and named data as well as .ptd entries; and, on a scratch XFS
// (tag [xfs], run through scripts/with_xfs.sh), that the new file shares
// the old one's extents and only the changed bytes were written.
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>
#include "catch.h"

#include "etpack/external_data.h"
#include "etpack/integrity.h"
#include "etpack/ptd.h"
#include "etpack/ptd_file.h"
#include "etpack/pte.h"
#include "etpack/pte_file.h"
#include "etpack/update.h"
#include "fault_output.h"
#include "test_files.h"
#include "test_programs.h"

using namespace etpack;
using namespace etpack::testing;

namespace {

TensorLayout F32(std::vector<int32_t> sizes) {
  TensorLayout l;
  l.scalar_type = 6;  // FLOAT
  l.sizes = sizes;
  for (size_t d = 0; d < sizes.size(); ++d) l.dim_order.push_back(static_cast<uint8_t>(d));
  return l;
}

// One entry per (key, bytes), FLOAT[n / 4] each.
PtdInput Weights(const std::vector<std::pair<std::string, std::vector<uint8_t>>>& items,
                 uint64_t alignment = 1) {
  PtdInput in;
  for (const auto& [key, bytes] : items) {
    in.entries.push_back({key, static_cast<uint32_t>(in.buffers.size()), alignment,
                          F32({static_cast<int32_t>(bytes.size() / 4)})});
    in.buffers.push_back(OwnedSource(bytes));
  }
  return in;
}

void WritePtdFile(const std::string& path, const PtdInput& in, PtdOptions options = {}) {
  Status s = WritePtd(path, in, options).status();
  INFO(s.ToString());
  REQUIRE(s.ok());
}

std::vector<uint8_t> EntryBytes(const std::string& path, const std::string& key) {
  auto f = PtdFile::Open(path);
  REQUIRE(f.ok());
  const int64_t i = (*f)->Find(key);
  REQUIRE(i >= 0);
  auto bytes = ReadAll(*(*f)->EntrySource(static_cast<size_t>(i)));
  REQUIRE(bytes.ok());
  bytes->resize(static_cast<size_t>(LayoutNbytes(*(*f)->entries()[i].layout, key).value()));
  return *bytes;
}

ino_t Inode(const std::string& path) {
  struct stat st;
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_ino;
}

UpdateReport Updated(const std::string& path, const PtdInput& weights) {
  Result<UpdateReport> r = UpdateWeights(path, weights);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return *r;
}

const std::vector<uint8_t> kA = PatternBytes(64, 1), kB = PatternBytes(256, 2),
                           kC = PatternBytes(32, 3);

}  // namespace

TEST_CASE("update: matching keys are rewritten, the rest keeps its bytes", "[update]") {
  TempDir dir;
  const std::string path = dir.File("m.ptd");
  WritePtdFile(path, Weights({{"a", kA}, {"b", kB}, {"c", kC}}));
  const std::vector<uint8_t> before = ReadFile(path);

  const std::vector<uint8_t> b2 = PatternBytes(256, 9);
  UpdateReport r = Updated(path, Weights({{"a", kA}, {"b", b2}}));
  CHECK(r.written);
  CHECK(r.tensors_rewritten == 1);
  CHECK(r.bytes_rewritten == 256);
  CHECK(r.tensors_unchanged == 1);
  CHECK(r.bytes_unchanged == 64);
  CHECK(r.file_size == before.size());
  CHECK(EntryBytes(path, "a") == kA);
  CHECK(EntryBytes(path, "b") == b2);
  CHECK(EntryBytes(path, "c") == kC);
  // The same file as a fresh write of the new weights would be.
  WritePtdFile(dir.File("fresh.ptd"), Weights({{"a", kA}, {"b", b2}, {"c", kC}}));
  CHECK(ReadFile(path) == ReadFile(dir.File("fresh.ptd")));
  CHECK(dir.List() == std::set<std::string>{"m.ptd", "fresh.ptd"});
}

TEST_CASE("update: anything but a match is refused before a byte changes", "[update]") {
  TempDir dir;
  const std::string path = dir.File("m.ptd");
  WritePtdFile(path, Weights({{"a", kA}, {"b", kB}}));
  const std::vector<uint8_t> before = ReadFile(path);
  const ino_t inode = Inode(path);

  // Every case also gives "a" new bytes, which must not land either.
  PtdInput in = Weights({{"a", PatternBytes(64, 7)}});
  std::string want;
  SECTION("an unknown key") {
    in = Weights({{"a", PatternBytes(64, 7)}, {"zz", kC}});
    want = "key 'zz'";
  }
  SECTION("another dtype") {
    in.entries.push_back({"b", 1, 1, F32({64})});
    in.entries.back().layout->scalar_type = 3;  // INT: same size, other type
    in.buffers.push_back(OwnedSource(kB));
    want = "INT[64]";
  }
  SECTION("another shape") {
    in.entries.push_back({"b", 1, 1, F32({8, 8})});
    in.buffers.push_back(OwnedSource(kB));
    want = "FLOAT[8, 8]";
  }
  SECTION("a blob of another size") {
    in.entries.push_back({"b", 1, 1, std::nullopt});
    in.buffers.push_back(OwnedSource(PatternBytes(255)));
    want = "a blob (255 bytes)";
  }
  Result<UpdateReport> r = UpdateWeights(path, in);
  REQUIRE_FALSE(r.ok());
  INFO(r.status().ToString());
  CHECK(Contains(r.status().message(), path));
  CHECK(Contains(r.status().message(), want));
  if (want != "key 'zz'") {
    CHECK(Contains(r.status().message(), "key 'b'"));
    CHECK(Contains(r.status().message(), "FLOAT[64]"));  // the file's layout
  } else {
    CHECK(r.status().code() == Code::kNotFound);
  }
  CHECK(ReadFile(path) == before);
  CHECK(Inode(path) == inode);
  CHECK(dir.List() == std::set<std::string>{"m.ptd"});
}

namespace {

// Every step of writing and publishing failing in turn (and a write failing
// part way) leaves `dir`/m.ptd as it was and no other file in `dir`.
void FailuresLeaveTheOldFile(const std::string& dir) {
  const std::string path = dir + "/m.ptd";
  PtdOptions options;
  options.integrity_table = true;
  options.segment_alignment = 4096;
  WritePtdFile(path,
               Weights({{"a", PatternBytes(1 << 16, 1)}, {"b", PatternBytes(1 << 16, 2)}}, 4096),
               options);
  const std::vector<uint8_t> before = ReadFile(path);
  const PtdInput weights = Weights({{"b", PatternBytes(1 << 16, 3)}});
  std::vector<Fault> faults;
  for (FaultStep step : {FaultStep::kReserve, FaultStep::kWrite, FaultStep::kSync, FaultStep::kLink,
                         FaultStep::kRename}) {
    faults.push_back(Fault{step, 0});
  }
  faults.push_back(Fault{FaultStep::kNone, 0, 1000});  // mid-write
  for (const Fault& fault : faults) {
    INFO(FaultStepName(fault.step) << ", after " << fault.after_bytes << " bytes");
    std::unique_ptr<OutputFs> posix = NewPosixOutputFs();
    std::unique_ptr<OutputFs> fs = NewFaultInjectingOutputFs(posix.get(), fault);
    Result<UpdateReport> r = UpdateWeights(path, weights, {}, Env{nullptr, fs.get()});
    REQUIRE_FALSE(r.ok());
    CHECK(Contains(r.status().message(), "injected fault"));
    CHECK((ReadFile(path) == before));
    std::set<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      names.insert(e.path().filename().string());
    }
    CHECK(names == std::set<std::string>{"m.ptd"});
  }
  // And without a fault it goes through.
  CHECK(UpdateWeights(path, weights).ok());
  CHECK_FALSE((ReadFile(path) == before));
  ::unlink(path.c_str());
}

}  // namespace

TEST_CASE("update: a failure at any step leaves the old file and nothing else", "[update]") {
  TempDir dir;
  FailuresLeaveTheOldFile(dir.path());
}

namespace {

// The POSIX outputs, with `hook` run once, right after the first output is
// created: the update has then read the file and not yet written.
struct HookedFs : OutputFsWrapper {
  explicit HookedFs(OutputFs* target) : OutputFsWrapper(target) {}
  Result<std::unique_ptr<OutputFile>> Create(const std::string& destination) override {
    auto out = OutputFsWrapper::Create(destination);
    if (hook) {
      auto run = std::move(hook);
      hook = nullptr;
      run();
    }
    return out;
  }
  std::function<void()> hook;
};

}  // namespace

// Two updates of one file with different keys: the second starts while the
// first has read the file and not yet published (the hook), and the first
// goes on only once the second has finished or is waiting for the file (it
// asks `cancel` while it waits). Both changes must be in the file. Before
// the file was locked from read to publish, the second finished first and
// the first then published the file it had read, without the second's key.
TEST_CASE("update: two concurrent updates of different keys both land", "[update]") {
  TempDir dir;
  const std::string path = dir.File("m.ptd");
  WritePtdFile(path, Weights({{"a", kA}, {"b", kB}}));
  const std::vector<uint8_t> new_a = PatternBytes(64, 11), new_b = PatternBytes(256, 12);
  auto posix = NewPosixOutputFs();
  HookedFs first_fs(posix.get());
  std::mutex m;
  std::condition_variable cv;
  bool second_waits = false, second_done = false;
  Result<UpdateReport> second = UpdateReport{};
  std::thread other;
  first_fs.hook = [&] {
    other = std::thread([&] {
      WriteOptions options;
      options.cancel = [&] {
        std::lock_guard<std::mutex> lock(m);
        second_waits = true;
        cv.notify_all();
        return false;
      };
      second = UpdateWeights(path, Weights({{"b", new_b}}), options);
      std::lock_guard<std::mutex> lock(m);
      second_done = true;
      cv.notify_all();
    });
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return second_waits || second_done; });
  };
  Result<UpdateReport> first =
      UpdateWeights(path, Weights({{"a", new_a}}), {}, Env{nullptr, &first_fs});
  if (other.joinable()) other.join();
  INFO(first.status().ToString() << " / " << second.status().ToString());
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  CHECK(first->tensors_rewritten == 1);
  CHECK(second->tensors_rewritten == 1);
  CHECK(EntryBytes(path, "a") == new_a);
  CHECK(EntryBytes(path, "b") == new_b);
  CHECK(dir.List() == std::set<std::string>{"m.ptd"});
}

// A writer that is not an update (a repack -o of the same path) takes no
// update lock: when it replaces the file after the update read it, the
// update fails, writes nothing, and that writer's file stays. Before, the
// update published over it, silently discarding it.
TEST_CASE("update: a file replaced by another writer meanwhile is not overwritten", "[update]") {
  TempDir dir;
  const std::string path = dir.File("m.ptd");
  WritePtdFile(path, Weights({{"a", kA}, {"b", kB}}));
  const std::vector<uint8_t> theirs = PatternBytes(64, 21);
  auto posix = NewPosixOutputFs();
  HookedFs fs(posix.get());
  fs.hook = [&] { WritePtdFile(path, Weights({{"a", theirs}, {"b", kB}})); };
  Result<UpdateReport> r =
      UpdateWeights(path, Weights({{"a", PatternBytes(64, 22)}}), {}, Env{nullptr, &fs});
  INFO(r.status().ToString());
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kIoError);
  CHECK(Contains(r.status().message(),
                 path + ": another writer replaced or removed the file since it was read; "
                        "nothing was written"));
  CHECK(EntryBytes(path, "a") == theirs);
  CHECK(dir.List() == std::set<std::string>{"m.ptd"});
}

// Ctrl-C in Python or a C caller's flag: an update waiting for another
// update of its file stops when cancelled, writing nothing.
TEST_CASE("update: waiting for another update of the file can be cancelled", "[update]") {
  TempDir dir;
  const std::string path = dir.File("m.ptd");
  WritePtdFile(path, Weights({{"a", kA}, {"b", kB}}));
  const int held = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);  // another update's lock
  REQUIRE(held >= 0);
  REQUIRE(::flock(held, LOCK_EX) == 0);
  int asked = 0;
  WriteOptions options;
  options.cancel = [&] { return ++asked >= 2; };
  Result<UpdateReport> r = UpdateWeights(path, Weights({{"a", PatternBytes(64, 41)}}), options);
  ::close(held);
  INFO(r.status().ToString());
  REQUIRE_FALSE(r.ok());
  CHECK(asked == 2);
  CHECK(Contains(r.status().message(), path + ": update cancelled by the caller while waiting for "
                                              "another update of the file to finish"));
  CHECK(EntryBytes(path, "a") == kA);
}

// An update is written by the writer like any other write: it reports
// progress, and a cancel while it writes (Ctrl-C in Python, a C caller's
// flag) leaves the file as it was, and nothing beside it.
TEST_CASE("update: progress is reported, and a cancelled write changes nothing", "[update]") {
  TempDir dir;
  const std::string path = dir.File("m.ptd");
  WritePtdFile(path, Weights({{"a", kA}, {"b", kB}}));
  const std::vector<uint8_t> before = ReadFile(path);
  int asked = 0;
  WriteOptions options;
  options.cancel = [&] { return ++asked >= 1; };
  Result<UpdateReport> r = UpdateWeights(path, Weights({{"a", PatternBytes(64, 51)}}), options);
  INFO(r.status().ToString());
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kIoError);
  CHECK(Contains(r.status().message(), "write cancelled by the caller after "));
  CHECK(ReadFile(path) == before);
  CHECK(dir.List() == std::set<std::string>{"m.ptd"});

  std::vector<std::pair<uint64_t, uint64_t>> reports;
  WriteStats stats;
  options = {};
  options.progress = [&](uint64_t done, uint64_t total) { reports.emplace_back(done, total); };
  options.stats = &stats;
  r = UpdateWeights(path, Weights({{"a", PatternBytes(64, 51)}}), options);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  REQUIRE_FALSE(reports.empty());
  CHECK(reports.back().first == reports.back().second);
  // Cloned, only the change is written; copied, the whole file.
  CHECK(reports.back().second == (r->cloned ? 64 : r->file_size));
  CHECK(stats.bytes == r->file_size);
  CHECK(stats.bytes - stats.bytes_cloned == r->bytes_written);
  CHECK(EntryBytes(path, "a") == PatternBytes(64, 51));
}

// The update replaces the file at the path given; another hard link keeps
// the old contents, and the report counts it (the CLI says so).
TEST_CASE("update: other hard links keep the old contents and are counted", "[update]") {
  TempDir dir;
  const std::string path = dir.File("m.ptd"), other = dir.File("other.ptd");
  WritePtdFile(path, Weights({{"a", kA}, {"b", kB}}));
  REQUIRE(::link(path.c_str(), other.c_str()) == 0);
  const std::vector<uint8_t> new_a = PatternBytes(64, 31);
  UpdateReport r = Updated(path, Weights({{"a", new_a}}));
  CHECK(r.other_links == 1);
  CHECK(EntryBytes(path, "a") == new_a);
  CHECK(EntryBytes(other, "a") == kA);
}

TEST_CASE("update: equal bytes are skipped; nothing changed writes nothing", "[update]") {
  TempDir dir;
  const std::string path = dir.File("m.ptd");
  WritePtdFile(path, Weights({{"a", kA}, {"b", kB}}));
  const ino_t inode = Inode(path);
  UpdateReport r = Updated(path, Weights({{"a", kA}, {"b", kB}}));
  CHECK_FALSE(r.written);
  CHECK(r.tensors_rewritten == 0);
  CHECK(r.tensors_unchanged == 2);
  CHECK(r.bytes_unchanged == 64 + 256);
  CHECK(r.bytes_written == 0);
  CHECK(Inode(path) == inode);  // not even replaced
}

TEST_CASE("update: keys sharing their bytes change together or not at all", "[update]") {
  TempDir dir;
  const std::string path = dir.File("m.ptd");
  WritePtdFile(path, Weights({{"a", kA}, {"a_alias", kA}, {"b", kB}}));  // stored once
  const std::vector<uint8_t> before = ReadFile(path);
  const std::vector<uint8_t> a2 = PatternBytes(64, 5);

  Result<UpdateReport> r = UpdateWeights(path, Weights({{"a", a2}}));
  REQUIRE_FALSE(r.ok());
  CHECK(Contains(r.status().message(), "'a_alias'"));
  r = UpdateWeights(path, Weights({{"a", a2}, {"a_alias", PatternBytes(64, 6)}}));
  REQUIRE_FALSE(r.ok());
  CHECK(Contains(r.status().message(), "same new bytes"));
  CHECK(ReadFile(path) == before);

  UpdateReport ok = Updated(path, Weights({{"a", a2}, {"a_alias", a2}}));
  CHECK(ok.tensors_rewritten == 2);
  CHECK(ok.bytes_rewritten == 64);  // one range
  CHECK(EntryBytes(path, "a") == a2);
  CHECK(EntryBytes(path, "a_alias") == a2);
}

TEST_CASE("update: the integrity table is brought up to date", "[update]") {
  TempDir dir;
  const std::string path = dir.File("m.ptd");
  PtdOptions options;
  options.integrity_table = true;
  WritePtdFile(path, Weights({{"a", kA}, {"b", kB}, {"c", kC}}), options);
  const std::vector<uint8_t> b2 = PatternBytes(256, 9);
  Updated(path, Weights({{"b", b2}}));

  auto f = PtdFile::Open(path);
  REQUIRE(f.ok());
  Result<IntegrityCheck> check = CheckIntegrity(**f, /*deep=*/false);
  INFO(check.status().ToString());
  REQUIRE(check.ok());
  CHECK(check->has_table);
  // Byte for byte what a fresh write with a table gives.
  WritePtdFile(dir.File("fresh.ptd"), Weights({{"a", kA}, {"b", b2}, {"c", kC}}), options);
  CHECK(ReadFile(path) == ReadFile(dir.File("fresh.ptd")));
}

TEST_CASE("update: .pte constants (by their repack keys) and named data", "[update]") {
  TempDir dir;
  const bool integrity = GENERATE(false, true);
  INFO("integrity table: " << integrity);
  const std::string path = dir.File("m.pte");
  for (const char* golden : {"pte_constants.pte", "pte_named_data.pte"}) {
    INFO(golden);
    auto src = PteFile::Open(Golden(golden));
    REQUIRE(src.ok());
    auto input = (*src)->ToInput();
    REQUIRE(input.ok());
    PteOptions options = (*src)->InferredOptions();
    options.integrity_table = integrity;
    auto plan = PlanPte(std::move(*input), options);
    REQUIRE(plan.ok());
    REQUIRE(WriteArtifactFile(path, plan->artifact).ok());

    auto before = PteFile::Open(path);
    REQUIRE(before.ok());
    auto split = ExternalizeConstants(**before);
    REQUIRE(split.ok());
    PtdInput weights;
    std::map<std::string, std::vector<uint8_t>> want;
    for (const PtdEntry& e : split->second.entries) {  // every constant, new bytes
      const uint64_t n = LayoutNbytes(*e.layout, e.key).value();
      want[e.key] = PatternBytes(static_cast<size_t>(n), static_cast<uint32_t>(want.size() + 40));
      weights.entries.push_back(
          {e.key, static_cast<uint32_t>(weights.buffers.size()), 1, e.layout});
      weights.buffers.push_back(OwnedSource(want[e.key]));
    }
    std::set<uint32_t> seen;
    for (const PteNamedData& d : (*before)->named_data()) {    // one key per segment
      if (d.key.rfind("etpack.integrity.", 0) == 0) continue;  // the table's own key
      if (!seen.insert(d.segment_index).second) continue;
      const uint64_t n = (*before)->layout().segments[d.segment_index].size;
      want[d.key] = PatternBytes(static_cast<size_t>(n), 77);
      weights.entries.push_back({d.key, static_cast<uint32_t>(weights.buffers.size()), 1, {}});
      weights.buffers.push_back(OwnedSource(want[d.key]));
    }
    REQUIRE_FALSE(want.empty());
    Result<UpdateReport> r = UpdateWeights(path, weights);
    if (std::string(golden) == "pte_named_data.pte") {
      // blob.b_alias shares blob.b's segment and was not given.
      REQUIRE_FALSE(r.ok());
      CHECK(Contains(r.status().message(), "'blob.b_alias'"));
      weights.entries.push_back({"blob.b_alias", weights.entries.back().buffer_index, 1, {}});
      for (const PtdEntry& e : weights.entries) {
        if (e.key == "blob.b") weights.entries.back().buffer_index = e.buffer_index;
      }
      want["blob.b_alias"] = want["blob.b"];
      r = UpdateWeights(path, weights);
    }
    INFO(r.status().ToString());
    REQUIRE(r.ok());
    CHECK(r->tensors_rewritten == want.size());

    auto after = PteFile::Open(path);
    REQUIRE(after.ok());
    auto split2 = ExternalizeConstants(**after);
    REQUIRE(split2.ok());
    for (const PtdEntry& e : split2->second.entries) {
      auto bytes = ReadAll(*split2->second.buffers[e.buffer_index]);
      REQUIRE(bytes.ok());
      bytes->resize(want[e.key].size());
      CHECK(*bytes == want[e.key]);
    }
    for (const PteNamedData& d : (*after)->named_data()) {
      if (d.key.rfind("etpack.integrity.", 0) == 0) continue;
      CHECK(ReadAll(*(*after)->SegmentSource(d.segment_index)).value() == want[d.key]);
    }
    auto check = CheckIntegrity(**after, false);
    INFO(check.status().ToString());
    REQUIRE(check.ok());
    CHECK(check->has_table == integrity);
  }
}

TEST_CASE("update: a .pte constant key on two ranges is refused, not half updated", "[update]") {
  // Two constants named alike, with equal bytes, stored twice (no dedup):
  // updating the key by one range would leave the other tensor stale.
  TempDir dir;
  const std::string path = dir.File("m.pte");
  PteInput in = SmallProgram({OwnedSource(kA), OwnedSource(kA)});
  for (Value& v : Values(in)) {
    v.Find("val")->Set("extra_tensor_info",
                       json::Parse(R"({"fully_qualified_name": "w"})").value());
  }
  auto plan = PlanPte(std::move(in));
  REQUIRE(plan.ok());
  REQUIRE(WriteArtifactFile(path, plan->artifact).ok());
  auto f = PteFile::Open(path);
  REQUIRE(f.ok());
  PtdInput weights;
  weights.entries = {{"w", 0, 1, (*f)->Tensors()[0].layout}};
  weights.buffers = {OwnedSource(PatternBytes(kA.size(), 9))};
  Result<UpdateReport> r = UpdateWeights(path, weights);
  REQUIRE_FALSE(r.ok());
  CHECK(Contains(r.status().message(), "key 'w' names two items of the file"));
}

TEST_CASE("ReadWeights: safetensors and .ptd files, a key in two is refused", "[update]") {
  TempDir dir;
  WriteFile(dir.File("w.safetensors"), F32Safetensors(16));  // key "w"
  WritePtdFile(dir.File("x.ptd"), Weights({{"x", kA}}));
  auto in = ReadWeights({dir.File("w.safetensors"), dir.File("x.ptd")});
  INFO(in.status().ToString());
  REQUIRE(in.ok());
  REQUIRE(in->entries.size() == 2);
  CHECK(in->entries[0].key == "x");
  CHECK(in->entries[1].key == "w");
  CHECK(*in->entries[1].layout == F32({16}));

  WritePtdFile(dir.File("w.ptd"), Weights({{"w", kA}}));
  auto twice = ReadWeights({dir.File("w.safetensors"), dir.File("w.ptd")});
  REQUIRE_FALSE(twice.ok());
  CHECK(Contains(twice.status().message(), "w.safetensors"));
  CHECK(Contains(twice.status().message(), "w.ptd"));
}

namespace {

// `etpack ARGS` (ETPACK_BIN) with stdout and stderr together.
std::pair<int, std::string> Etpack(const std::string& args) {
  const char* bin = std::getenv("ETPACK_BIN");
  REQUIRE(bin != nullptr);
  FILE* pipe = ::popen((std::string(bin) + " " + args + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  const int status = ::pclose(pipe);
  REQUIRE(WIFEXITED(status));
  return {WEXITSTATUS(status), out};
}

}  // namespace

TEST_CASE("etpack update: text and --json reports, refusals, verify after", "[update]") {
  TempDir dir;
  const std::string d = dir.path() + "/";
  WriteFile(d + "old.safetensors", F32Safetensors(64, 1));
  WriteFile(d + "new.safetensors", F32Safetensors(64, 2));
  WriteFile(d + "short.safetensors", F32Safetensors(32, 2));
  REQUIRE(Etpack("ptd " + d + "old.safetensors -o " + d + "m.ptd --integrity").first == 0);

  auto [code, out] = Etpack("update " + d + "m.ptd --from " + d + "new.safetensors");
  INFO(out);
  CHECK(code == 0);
  CHECK(Contains(out, "rewritten: 1 tensor, 256 bytes"));
  CHECK(Contains(out, "unchanged: 0 tensors"));
  CHECK(Etpack("verify " + d + "m.ptd").first == 0);

  auto [code2, json] = Etpack("update " + d + "m.ptd --from " + d + "new.safetensors --json");
  INFO(json);
  CHECK(code2 == 0);
  CHECK(Contains(json, "\"tensors_rewritten\": 0"));
  CHECK(Contains(json, "\"tensors_unchanged\": 1"));
  CHECK(Contains(json, "\"written\": false"));

  const std::vector<uint8_t> before = ReadFile(d + "m.ptd");
  auto [code3, err] = Etpack("update " + d + "m.ptd --from " + d + "short.safetensors");
  INFO(err);
  CHECK(code3 == 1);
  CHECK(Contains(err, "key 'w'"));
  CHECK(Contains(err, "FLOAT[64]"));
  CHECK(Contains(err, "FLOAT[32]"));
  CHECK((ReadFile(d + "m.ptd") == before));
  CHECK(Etpack("update " + d + "m.ptd").first == 2);  // no --from
}

namespace {

// Bytes of `path` that FIEMAP reports in extents shared with another file.
uint64_t SharedBytes(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  constexpr unsigned kMax = 512;
  std::vector<uint8_t> buf(sizeof(fiemap) + kMax * sizeof(fiemap_extent));
  uint64_t shared = 0, start = 0;
  for (;;) {
    std::memset(buf.data(), 0, buf.size());
    auto* fm = reinterpret_cast<fiemap*>(buf.data());
    fm->fm_start = start;
    fm->fm_length = FIEMAP_MAX_OFFSET - start;
    fm->fm_flags = FIEMAP_FLAG_SYNC;
    fm->fm_extent_count = kMax;
    REQUIRE(::ioctl(fd, FS_IOC_FIEMAP, fm) == 0);
    if (fm->fm_mapped_extents == 0) break;
    bool last = false;
    for (unsigned i = 0; i < fm->fm_mapped_extents; ++i) {
      const fiemap_extent& e = fm->fm_extents[i];
      if (e.fe_flags & FIEMAP_EXTENT_SHARED) shared += e.fe_length;
      start = e.fe_logical + e.fe_length;
      last = last || (e.fe_flags & FIEMAP_EXTENT_LAST);
    }
    if (last) break;
  }
  ::close(fd);
  return shared;
}

}  // namespace

TEST_CASE("update on XFS: the new file is a clone with only the changes written", "[xfs]") {
  const char* xfs = std::getenv("ETPACK_XFS_DIR");
  if (xfs == nullptr || *xfs == '\0') {
    const char* why = std::getenv("ETPACK_XFS_SKIP");
    WARN("skipped: no scratch XFS (" << (why ? why : "run through scripts/with_xfs.sh") << ")");
    return;
  }
  const std::string path = std::string(xfs) + "/update_test.ptd";
  // Eight 1 MiB tensors, each on its own 4 KiB blocks.
  std::vector<std::pair<std::string, std::vector<uint8_t>>> items;
  for (int i = 0; i < 8; ++i) {
    items.push_back({"t" + std::to_string(i), PatternBytes(1 << 20, static_cast<uint32_t>(i))});
  }
  PtdOptions options;
  options.segment_alignment = 4096;
  options.integrity_table = true;
  WritePtdFile(path, Weights(items, 4096), options);
  const uint64_t size = ReadFile(path).size();
  // A copy that keeps the old file's extents referenced by another file, so
  // that FIEMAP shows which of the new file's extents are still shared.
  const std::string keep = std::string(xfs) + "/update_test_old.ptd";
  {
    auto out = NewPosixOutputFs()->Create(keep);
    REQUIRE(out.ok());
    auto old = FileSource(path);
    REQUIRE(old.ok());
    auto cloned = (*out)->ReserveClone(**old);
    REQUIRE(cloned.ok());
    REQUIRE(*cloned);
    std::vector<std::unique_ptr<OutputFile>> unit;
    unit.push_back(std::move(*out));
    REQUIRE(Publish(std::move(unit)).ok());
  }

  const std::vector<uint8_t> t3 = PatternBytes(1 << 20, 99);
  UpdateReport r = Updated(path, Weights({{"t3", t3}, {"t5", items[5].second}}));
  CHECK(r.cloned);
  CHECK(r.tensors_rewritten == 1);
  CHECK(r.tensors_unchanged == 1);
  CHECK(r.bytes_rewritten == (1u << 20));
  // The tensor and the integrity table, nothing else.
  CHECK(r.bytes_written < (1u << 20) + 4096);
  CHECK((EntryBytes(path, "t3") == t3));
  CHECK((EntryBytes(path, "t4") == items[4].second));
  auto f = PtdFile::Open(path);
  REQUIRE(f.ok());
  CHECK(CheckIntegrity(**f, false).ok());
  const uint64_t shared = SharedBytes(path);
  INFO("shared " << shared << " of " << size);
  // All but the changed tensor and the table's block are still shared.
  CHECK(shared >= size - (1u << 20) - 2 * 4096);
  CHECK(shared <= size - (1u << 20));
  ::unlink(path.c_str());
  ::unlink(keep.c_str());

  const std::string sub = std::string(xfs) + "/faults";
  REQUIRE(::mkdir(sub.c_str(), 0755) == 0);
  FailuresLeaveTheOldFile(sub);
  ::rmdir(sub.c_str());
}
