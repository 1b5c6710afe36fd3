// The fault matrix: every command that writes (pack, repack, repack
// --external-constants, ptd, bundle, unbundle, update, compress,
// decompress), run in-process as the CLI
// runs it but through a fault-injecting OutputFs, with a failure injected at
// each step of writing and publishing. Whatever fails, each destination is
// either as it was (absent, or the old file byte for byte) or the new file,
// complete (the bytes of an undisturbed run, which `verify` accepts), and no
// temporary is left in the folder.

#include <unistd.h>
#include "catch.h"

#include <cerrno>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "commands.h"
#include "etpack/output.h"
#include "fault_output.h"
#include "io/posix_calls.h"
#include "io/posix_output.h"
#include "memory_input.h"
#include "test_files.h"
#include "write_job.h"

namespace etpack {
namespace {

using testing::Golden;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;
using Bytes = std::vector<uint8_t>;

// One write path: the command, its arguments (`in` holds inputs the test
// makes, `out` the folder written to), and its outputs in publish order.
struct WritePath {
  const char* name;
  int (*command)(const std::vector<std::string>&, const Env&);
  std::vector<std::string> (*args)(const std::string& in, const std::string& out);
  std::vector<std::string> outputs;
  // For a command that rewrites its output (update): the file in `in` whose
  // bytes the one output holds before the command runs. It then only runs
  // on an existing file.
  const char* before = nullptr;
  // Whether `verify` checks the outputs (not an archive).
  bool artifact = true;
};

// CASES.json for pte_constants.pte's method: f32[2,3], double, bool, int.
void WriteCases(const std::string& path) {
  WriteFile(path, std::string(R"({"methods": {"forward": [
    {"inputs": [{"tensor": {"dtype": "FLOAT", "sizes": [2, 3],
                            "base64": "AACAPwAAAEAAAEBAAACAQAAAoEAAAMBA"}},
                {"double": 0.5}, {"bool": true}, {"int": 3}],
     "expected_outputs": [{"tensor": {"dtype": "FLOAT", "sizes": [2, 3],
                                      "base64": "AACAPwAAAEAAAEBAAACAQAAAoEAAAMBA"}}]}]}})"));
}

const std::vector<WritePath>& WritePaths() {
  static const std::vector<WritePath> paths = {
      {"pack .pte",
       cli::Pack,
       [](const std::string&, const std::string& out) -> std::vector<std::string> {
         return {Golden("pte_constants.input.json"), "-o", out + "/x.pte"};
       },
       {"x.pte"}},
      {"pack --external-named-data",
       cli::Pack,
       [](const std::string&, const std::string& out) -> std::vector<std::string> {
         return {Golden("pte_fat.input.json"), "-o", out + "/x.pte", "--external-named-data",
                 out + "/x.ptd"};
       },
       {"x.ptd", "x.pte"}},
      {"pack .ptd",
       cli::Pack,
       [](const std::string&, const std::string& out) -> std::vector<std::string> {
         return {Golden("ptd_basic.input.json"), "-o", out + "/x.ptd"};
       },
       {"x.ptd"}},
      {"repack",
       cli::Repack,
       [](const std::string&, const std::string& out) -> std::vector<std::string> {
         return {Golden("pte_all_kinds.pte"), "-o", out + "/x.pte", "--segment-alignment", "4096"};
       },
       {"x.pte"}},
      {"repack --external-constants",
       cli::Repack,
       [](const std::string&, const std::string& out) -> std::vector<std::string> {
         return {Golden("pte_constants.pte"), "-o", out + "/x.pte", "--external-constants",
                 out + "/x.ptd"};
       },
       {"x.ptd", "x.pte"}},
      {"ptd",
       cli::Ptd,
       [](const std::string& in, const std::string& out) -> std::vector<std::string> {
         return {in + "/w.safetensors", "-o", out + "/x.ptd", "--align", "4096"};
       },
       {"x.ptd"}},
      {"bundle",
       cli::Bundle,
       [](const std::string& in, const std::string& out) -> std::vector<std::string> {
         return {Golden("pte_constants.pte"),
                 "--cases",
                 in + "/cases.json",
                 "-o",
                 out + "/x.bpte",
                 "--layout",
                 "segmented"};
       },
       {"x.bpte"}},
      {"unbundle",
       cli::Unbundle,
       [](const std::string&, const std::string& out) -> std::vector<std::string> {
         return {Golden("bpte_basic.bpte"), "-o", out + "/x.pte"};
       },
       {"x.pte"}},
      {"update",
       cli::Update,
       [](const std::string& in, const std::string& out) -> std::vector<std::string> {
         return {out + "/x.ptd", "--from", in + "/new.safetensors"};
       },
       {"x.ptd"},
       "base.ptd"},
      {"compress",
       cli::Compress,
       [](const std::string& in, const std::string& out) -> std::vector<std::string> {
         return {in + "/base.ptd", "-o", out + "/x.ptd.zst"};
       },
       {"x.ptd.zst"},
       nullptr,
       false},
      {"decompress",
       cli::Decompress,
       [](const std::string& in, const std::string& out) -> std::vector<std::string> {
         return {in + "/base.ptd.zst", "-o", out + "/x.ptd"};
       },
       {"x.ptd"}},
  };
  return paths;
}

// How a run is disturbed: at the OutputFile interface (any step but the
// mapping of a window, in either output of a unit, or after some bytes), or
// at the system call behind a step (every call of that kind fails; the
// mapping included), with or without O_TMPFILE.
struct Disturbance {
  enum Level { kInterface, kSystemCall } level;
  Fault fault;
  bool tmpfile = true;  // kSystemCall: O_TMPFILE works

  std::string Describe() const {
    std::string s = level == kInterface ? "interface: " : "system call: ";
    if (fault.step != FaultStep::kNone) {
      s += FaultStepName(fault.step);
      if (level == kInterface) s += " of output " + std::to_string(fault.output);
    } else {
      s += "a write crossing " + std::to_string(fault.after_bytes) + " bytes";
    }
    if (level == kSystemCall && !tmpfile) s += ", named temporaries";
    return s;
  }
};

// `total`: the size of the outputs together.
std::vector<Disturbance> Disturbances(int outputs, uint64_t total) {
  std::vector<Disturbance> all;
  for (FaultStep step : {FaultStep::kReserve, FaultStep::kWrite, FaultStep::kSync, FaultStep::kLink,
                         FaultStep::kRename, FaultStep::kDirectorySync}) {
    for (int i = 0; i < outputs; ++i) {
      Disturbance d{Disturbance::kInterface, {}};
      d.fault.step = step;
      d.fault.output = i;
      all.push_back(d);
    }
  }
  for (uint64_t after : {uint64_t{0}, uint64_t{1}, uint64_t{100}, total / 2, total - 1}) {
    Disturbance d{Disturbance::kInterface, {}};
    d.fault.after_bytes = after;
    all.push_back(d);
  }
  for (FaultStep step : {FaultStep::kReserve, FaultStep::kMap, FaultStep::kWrite, FaultStep::kSync,
                         FaultStep::kLink, FaultStep::kRename, FaultStep::kDirectorySync}) {
    for (bool tmpfile : {true, false}) {
      Disturbance d{Disturbance::kSystemCall, {}, tmpfile};
      d.fault.step = step;
      all.push_back(d);
    }
  }
  return all;
}

// The POSIX calls with O_TMPFILE optionally unavailable, as on file systems
// without it: outputs then have a hidden name from the start.
class Calls final : public FaultyPosixCalls {
 public:
  Calls(FaultStep step, bool tmpfile) : FaultyPosixCalls(step), tmpfile_(tmpfile) {}
  int OpenTmpfile(const char* dir, int flags, mode_t mode) override {
    if (tmpfile_) return FaultyPosixCalls::OpenTmpfile(dir, flags, mode);
    errno = EOPNOTSUPP;
    return -1;
  }

 private:
  const bool tmpfile_;
};

OutputOptions PageWindows() {
  OutputOptions options;
  options.window_bytes = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  return options;
}

// Runs `path` writing to `out` through `fs`; the exit code.
int RunThrough(OutputFs* fs, const WritePath& path, const std::string& in, const std::string& out) {
  return path.command(path.args(in, out), Env{nullptr, fs});
}

int Verify(const WritePath& path, const std::string& out) {
  if (!path.artifact) return 0;
  std::vector<std::string> args = {out + "/" + path.outputs.back()};
  if (path.outputs.size() == 2) args.insert(args.end(), {"--data", out + "/" + path.outputs[0]});
  return cli::Verify(args, Env());
}

TEST_CASE("a fault at any step of any command leaves each destination old or new, nothing else") {
  TempDir in;
  WriteFile(in.File("w.safetensors"), testing::F32Safetensors(6));
  WriteCases(in.File("cases.json"));
  // What update, compress and decompress start from: a .ptd of
  // w.safetensors, new weights for it, and its archive.
  REQUIRE(cli::Ptd({in.File("w.safetensors"), "-o", in.File("base.ptd")}, Env()) == 0);
  WriteFile(in.File("new.safetensors"), testing::F32Safetensors(6, 2));
  REQUIRE(cli::Compress({in.File("base.ptd"), "-o", in.File("base.ptd.zst")}, Env()) == 0);
  for (const WritePath& path : WritePaths()) {
    CAPTURE(path.name);
    // The new files: what an undisturbed run writes.
    TempDir reference;
    if (path.before != nullptr) {
      WriteFile(reference.File(path.outputs[0]), ReadFile(in.File(path.before)));
    }
    REQUIRE(RunThrough(nullptr, path, in.path(), reference.path()) == 0);
    REQUIRE(Verify(path, reference.path()) == 0);
    std::map<std::string, Bytes> fresh;
    uint64_t total = 0;
    for (const std::string& name : path.outputs) {
      fresh[name] = ReadFile(reference.File(name));
      total += fresh[name].size();
    }

    for (const Disturbance& d : Disturbances(static_cast<int>(path.outputs.size()), total)) {
      for (bool existing : {false, true}) {
        if (path.before != nullptr && !existing) continue;
        CAPTURE(d.Describe(), existing);
        TempDir out;
        std::map<std::string, Bytes> old;
        if (existing) {
          for (const std::string& name : path.outputs) {
            old[name] = path.before != nullptr
                            ? ReadFile(in.File(path.before))
                            : Bytes(name.begin(), name.end());  // not an artifact
            WriteFile(out.File(name), old[name]);
          }
        }
        Calls calls(d.level == Disturbance::kSystemCall ? d.fault.step : FaultStep::kNone,
                    d.tmpfile);
        std::unique_ptr<OutputFs> posix = NewPosixOutputFs(PageWindows(), &calls);
        std::unique_ptr<OutputFs> faulty;
        if (d.level == Disturbance::kInterface) {
          faulty = NewFaultInjectingOutputFs(posix.get(), d.fault);
        }
        const int exit_code =
            RunThrough(faulty ? faulty.get() : posix.get(), path, in.path(), out.path());
        CAPTURE(exit_code);

        // Nothing but the outputs, each old or new, and (a unit that
        // replaced files and failed after a rename or before its folders
        // were synced) a marker beside each (etpack/output.h, Publish).
        std::set<std::string> expected_names(path.outputs.begin(), path.outputs.end());
        std::set<std::string> markers;
        if (existing && path.outputs.size() > 1) {
          for (const std::string& name : path.outputs)
            markers.insert("." + name + ".etpack-publishing");
        }
        const std::set<std::string> names = out.List();
        int marked = 0;
        for (const std::string& name : names) {
          CAPTURE(name);
          marked += static_cast<int>(markers.count(name));
          CHECK(expected_names.count(name) + markers.count(name) == 1);
        }
        CHECK((marked == 0 || marked == static_cast<int>(markers.size())));
        int replaced = 0;
        for (const std::string& name : path.outputs) {
          CAPTURE(name);
          if (names.count(name) == 0) {
            CHECK(!existing);
            continue;
          }
          const Bytes now = ReadFile(out.File(name));
          const bool is_new = now == fresh[name];
          CHECK((is_new || (existing && now == old[name])));
          replaced += is_new ? 1 : 0;
        }
        const bool all_new = replaced == static_cast<int>(path.outputs.size());
        if (all_new && marked == 0) CHECK(Verify(path, out.path()) == 0);
        if (marked > 0) CHECK(Verify(path, out.path()) != 0);
        // A program never appears without its new data: outputs are placed
        // data first, and only a failed rename after an earlier output
        // replaced its file leaves the unit half old (Publish says which).
        if (path.outputs.size() == 2 && names.count("x.pte") &&
            ReadFile(out.File("x.pte")) == fresh["x.pte"]) {
          CHECK(ReadFile(out.File("x.ptd")) == fresh["x.ptd"]);
        }

        // Every fault is reported, except a rename that never happens (a
        // free destination is linked straight into place) and a byte limit
        // that padding, never written, may keep a run under.
        const bool no_rename_needed =
            !existing && d.fault.step == FaultStep::kRename && d.level == Disturbance::kSystemCall;
        const bool may_stay_under = d.fault.step == FaultStep::kNone && d.fault.after_bytes > 100;
        if (!no_rename_needed && !may_stay_under) CHECK(exit_code == 1);
        if (exit_code == 0) CHECK(all_new);
        // A failure before anything is put in place changes nothing.
        const FaultStep s = d.fault.step;
        if (s == FaultStep::kReserve || s == FaultStep::kMap || s == FaultStep::kWrite ||
            s == FaultStep::kSync || s == FaultStep::kLink ||
            (s == FaultStep::kNone && exit_code != 0)) {
          CHECK(replaced == 0);
        }
        // A directory that cannot be synced comes after every file is in
        // place, except where a unit replacing files syncs its markers'
        // folders first: that fails before anything is named.
        if (s == FaultStep::kDirectorySync) {
          const bool before_renames = d.level == Disturbance::kSystemCall && !markers.empty();
          CHECK((before_renames ? replaced == 0 && marked == 0 : all_new));
        }
      }
    }
  }
}

TEST_CASE("commands read and write through the Env they are given") {
  // main() hands every command one Env; one in memory shows that each file
  // a command touches goes through it (none of these paths exists on disk).
  const std::string dir = "/nonexistent-etpack-cli-env/";
  MemoryInputFs in;
  in.Add(dir + "m.pte", ReadFile(Golden("pte_all_kinds.pte")));
  MemoryOutputFs out;
  const Env env{&in, &out};
  CHECK(cli::Verify({dir + "m.pte"}, env) == 0);
  CHECK(cli::Inspect({dir + "m.pte", "--json"}, env) == 0);
  CHECK(cli::Verify({dir + "m.pte"}, Env()) == 1);  // not on the disk
  REQUIRE(cli::Repack({dir + "m.pte", "-o", dir + "r.pte", "--json"}, env) == 0);
  REQUIRE(out.files().count(dir + "r.pte") == 1);
  in.Add(dir + "r.pte", out.files().at(dir + "r.pte"));
  CHECK(cli::Verify({dir + "r.pte"}, env) == 0);
}

}  // namespace
}  // namespace etpack
