// End-to-end tests of what the `etpack` binary ($ETPACK_BIN) accepts as an
// input: only regular files, refused at once otherwise (a FIFO must not
// hang a reader), and never the file a job writes (an output that is one of
// its inputs is refused before anything is written, as `cp` refuses it).

#include "catch.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "test_files.h"

namespace {

using etpack::testing::Contains;
using etpack::testing::Golden;
using etpack::testing::TempDir;

struct Run {
  int exit_code = -1;  // 124: killed by the timeout
  std::string output;  // stdout and stderr together
};

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs the binary under timeout(1), so a command that blocks fails the test
// (exit 124) instead of hanging the suite.
Run Etpack(const std::vector<std::string>& args) {
  const char* bin = std::getenv("ETPACK_BIN");
  REQUIRE(bin != nullptr);
  std::string cmd = "timeout 20 " + Quote(bin);
  for (const std::string& a : args) cmd += " " + Quote(a);
  cmd += " 2>&1 </dev/null";
  Run run;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) run.output.append(buf, n);
  const int status = ::pclose(pipe);
  REQUIRE(WIFEXITED(status));
  run.exit_code = WEXITSTATUS(status);
  return run;
}

// Each job fails (exit 1) with `message` and leaves no `out` behind.
void ExpectEachRefused(const std::vector<std::vector<std::string>>& jobs,
                       const std::string& message, const std::string& out) {
  for (const auto& job : jobs) {
    std::string line;
    for (const auto& a : job) line += a + " ";
    INFO(line);
    const Run r = Etpack(job);
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(Contains(r.output, message));
    CHECK(::access(out.c_str(), F_OK) != 0);
  }
}

}  // namespace

TEST_CASE("every reader refuses a FIFO at once, naming it") {
  TempDir dir;
  const std::string fifo = dir.File("f.pte");
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  const std::string out = dir.File("out.bin");
  const std::vector<std::vector<std::string>> jobs = {
      {"inspect", fifo},
      {"inspect", "--json", fifo},
      {"inspect", "--digest", "sha256", fifo},
      {"verify", fifo},
      {"verify", "--deep", fifo},
      {"verify", Golden("pte_external.pte"), "--data", fifo},
      {"extract", fifo, "--delegate", "0", "-o", out},
      {"repack", fifo, "-o", out},
      {"unbundle", fifo, "-o", out},
      {"pack", fifo, "-o", out},
      {"ptd", fifo, "-o", out},
      {"bundle", Golden("pte_constants.pte"), "--cases", fifo, "-o", out},
      {"compress", fifo, "-o", out},
      {"decompress", fifo, "-o", out},
  };
  ExpectEachRefused(jobs, fifo + ": is a FIFO, not a regular file", out);
}

TEST_CASE("every input that says 0 bytes but has content is refused, never read as empty") {
  // /proc/self/status: a regular file of size 0 that reads as text.
  const std::string proc = "/proc/self/status";
  struct stat st;
  if (::stat(proc.c_str(), &st) != 0 || st.st_size != 0) {
    WARN("skipped: no " + proc + " of size 0 here");
    return;
  }
  TempDir dir;
  const std::string out = dir.File("out.bin");
  const std::vector<std::vector<std::string>> jobs = {
      {"inspect", proc},
      {"verify", proc},
      {"verify", Golden("pte_external.pte"), "--data", proc},
      {"repack", proc, "-o", out},
      {"pack", proc, "-o", out},
      {"ptd", proc, "-o", out},
      {"bundle", Golden("pte_constants.pte"), "--cases", proc, "-o", out},
      {"compress", proc, "-o", out},
      {"decompress", proc, "-o", out},
  };
  ExpectEachRefused(jobs, proc + ": its size is given as 0 bytes but it has content", out);
}

namespace {

// Every file in `dir` with its bytes.
std::map<std::string, std::vector<uint8_t>> Snapshot(const TempDir& dir) {
  std::map<std::string, std::vector<uint8_t>> files;
  for (const std::string& name : dir.List()) {
    struct stat st;
    REQUIRE(::lstat(dir.File(name).c_str(), &st) == 0);
    if (S_ISREG(st.st_mode)) files[name] = etpack::testing::ReadFile(dir.File(name));
  }
  return files;
}

void Copy(const std::string& from, const std::string& to) {
  etpack::testing::WriteFile(to, etpack::testing::ReadFile(from));
}

}  // namespace

// cp refuses "are the same file"; so does every command, for each kind of
// input it reads (data, manifests, indexes, cases, programs, archives),
// through the same name, a symbolic link or a hard link, before writing.
TEST_CASE("no command writes over one of its inputs") {
  TempDir dir;
  auto f = [&](const std::string& name) { return dir.File(name); };
  etpack::testing::WriteFile(f("w.safetensors"), etpack::testing::F32Safetensors(4096));
  etpack::testing::WriteFile(f("empty.safetensors"), std::string("\x02\0\0\0\0\0\0\0{}", 10));
  etpack::testing::WriteFile(f("index.json"),
                             std::string(R"({"weight_map": {"w": "w.safetensors"}})"));
  etpack::testing::WriteFile(f("weights.bin"), std::string(64, 'x'));
  etpack::testing::WriteFile(
      f("m.json"),
      std::string(
          R"({"format": "ptd", "buffers": [{"file": "weights.bin", "offset": 0, "length": 64}],)"
          R"( "entries": [{"key": "a", "buffer_index": 0}]})"));
  Copy(Golden("pte_delegates.pte"), f("d.pte"));
  Copy(Golden("pte_constants.pte"), f("c.pte"));
  etpack::testing::WriteFile(
      f("cases.json"),
      std::string(
          R"({"methods": {"forward": [{"inputs": [{"tensor": {"dtype": "FLOAT", "sizes": [2, 3], )"
          R"("base64": "AACAPwAAAEAAAEBAAACAQAAAoEAAAMBA"}}, {"double": 0.5}, {"bool": true}, )"
          R"({"int": 3}]}]}})"));
  REQUIRE(Etpack({"ptd", f("w.safetensors"), "-o", f("w.ptd")}).exit_code == 0);
  REQUIRE(Etpack({"compress", f("w.ptd"), "-o", f("w.zst")}).exit_code == 0);
  REQUIRE(Etpack({"repack", f("c.pte"), "-o", f("thin.pte"), "--external-constants", f("thin.ptd")})
              .exit_code == 0);
  REQUIRE(Etpack({"bundle", f("c.pte"), "--cases", f("cases.json"), "-o", f("b.bpte")}).exit_code ==
          0);
  REQUIRE(::symlink("w.safetensors", f("link.safetensors").c_str()) == 0);
  REQUIRE(::link(f("d.pte").c_str(), f("hard.pte").c_str()) == 0);

  struct Job {
    std::vector<std::string> args;
    std::string input;   // the input named in the refusal
    std::string output;  // the destination named in it
  };
  const std::vector<Job> jobs = {
      {{"ptd", f("w.safetensors"), "-o", f("w.safetensors")},
       f("w.safetensors"),
       f("w.safetensors")},
      {{"ptd", f("w.safetensors"), "-o", f("link.safetensors")},
       f("w.safetensors"),
       f("link.safetensors")},
      {{"ptd", f("empty.safetensors"), "-o", f("empty.safetensors")},
       f("empty.safetensors"),
       f("empty.safetensors")},
      {{"ptd", f("index.json"), "-o", f("index.json")}, f("index.json"), f("index.json")},
      {{"ptd", f("index.json"), "-o", f("w.safetensors")}, "w.safetensors", f("w.safetensors")},
      {{"pack", f("m.json"), "-o", f("weights.bin")}, "weights.bin", f("weights.bin")},
      {{"pack", f("m.json"), "-o", f("m.json")}, f("m.json"), f("m.json")},
      {{"repack", f("d.pte"), "-o", f("d.pte")}, f("d.pte"), f("d.pte")},
      {{"repack", f("d.pte"), "-o", f("hard.pte")}, f("d.pte"), f("hard.pte")},
      {{"repack", f("c.pte"), "-o", f("out.pte"), "--external-constants", f("c.pte")},
       f("c.pte"),
       f("c.pte")},
      {{"repack", f("thin.pte"), "--data", f("thin.ptd"), "-o", f("thin.ptd")},
       f("thin.ptd"),
       f("thin.ptd")},
      {{"repack", f("thin.pte"), "--data", f("thin.ptd"), "-o", f("thin.pte")},
       f("thin.pte"),
       f("thin.pte")},
      // A data file none of whose bytes the program takes is an input too.
      {{"repack", f("c.pte"), "--data", f("w.ptd"), "-o", f("w.ptd")}, f("w.ptd"), f("w.ptd")},
      {{"extract", f("d.pte"), "--delegate", "0", "-o", f("hard.pte")}, f("d.pte"), f("hard.pte")},
      {{"bundle", f("c.pte"), "--cases", f("cases.json"), "-o", f("cases.json")},
       f("cases.json"),
       f("cases.json")},
      {{"bundle", f("c.pte"), "--cases", f("cases.json"), "-o", f("c.pte")},
       f("c.pte"),
       f("c.pte")},
      {{"unbundle", f("b.bpte"), "-o", f("b.bpte")}, f("b.bpte"), f("b.bpte")},
      {{"compress", f("w.ptd"), "-o", f("w.ptd")}, f("w.ptd"), f("w.ptd")},
      {{"decompress", f("w.zst"), "-o", f("w.zst")}, f("w.zst"), f("w.zst")},
      {{"decompress", f("w.zst"), "--tensor", "w", "-o", f("w.zst")}, f("w.zst"), f("w.zst")},
  };
  const auto before = Snapshot(dir);
  for (const Job& job : jobs) {
    std::string line;
    for (const auto& a : job.args) line += a + " ";
    INFO(line);
    const Run r = Etpack(job.args);
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(Contains(r.output, job.input + ": is the same file as the output " + job.output +
                                 "; refusing to overwrite an input"));
    CHECK(Snapshot(dir) == before);
  }
}

// Two paths to one folder (mount --bind), which realpath cannot tell from
// two folders: `repack -o src/m.pte --external-constants bind/m.ptd` writes
// both (it used to wait forever for its own folder lock: `timeout` ends it,
// exit 124), and one name reached both ways is refused as the same file
// (it passed the check that compared path strings).
TEST_CASE("repack into one folder reached by two paths (bind mount)") {
  TempDir dir;
  const std::string src = dir.File("src"), bind = dir.File("bind");
  REQUIRE(::mkdir(src.c_str(), 0755) == 0);
  REQUIRE(::mkdir(bind.c_str(), 0755) == 0);
  Copy(Golden("pte_constants.pte"), dir.File("c.pte"));
  etpack::testing::BindMount mount(src, bind);
  if (!mount.mounted()) {
    WARN("skipped: " << mount.why());
    return;
  }
  Run r = Etpack(
      {"repack", dir.File("c.pte"), "-o", src + "/m.pte", "--external-constants", bind + "/m.ptd"});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(Etpack({"verify", src + "/m.pte", "--data", src + "/m.ptd"}).exit_code == 0);
  Run same =
      Etpack({"repack", dir.File("c.pte"), "-o", src + "/x", "--external-constants", bind + "/x"});
  INFO(same.output);
  CHECK(same.exit_code == 1);
  CHECK(Contains(same.output, "are the same file"));
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(src)) {
    names.insert(e.path().filename().string());
  }
  CHECK(names == std::set<std::string>{"m.pte", "m.ptd"});
}
