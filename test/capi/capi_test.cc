// The C API, driven from C (capi_cases.c): every golden case written through
// it, its data items given as memory, file ranges and callbacks, gives the
// same bytes as the C++ API and decodes like the golden; then the C side's
// own checks of error paths, callbacks and progress.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>
#include "catch.h"

#include "capi_cases.h"
#include "etpack/bpte_file.h"
#include "etpack/etpack_c.h"
#include "etpack/external_data.h"
#include "etpack/manifest.h"
#include "etpack/ptd_file.h"
#include "etpack/pte_file.h"
#include "flatbuffer/tree_builder.h"
#include "test_files.h"
#include "test_programs.h"

using namespace etpack;
using namespace etpack::testing;

namespace {

// A golden case's flatc rendering.
std::string FlatcText(const std::string& name) {
  const std::vector<uint8_t> bytes = ReadFile(Golden(name + ".flatc.json"));
  return std::string(bytes.begin(), bytes.end());
}

// Owns the bytes of every item handed to C, each both in memory and at an
// odd offset of one data file (for CAPI_FILE).
class Items {
 public:
  explicit Items(std::string file) : file_(std::move(file)), out_(file_, std::ios::binary) {}

  capi_bytes Add(const Source& source) {
    Result<std::vector<uint8_t>> bytes = ReadAll(source);
    REQUIRE(bytes.ok());
    return Add(std::move(bytes).value());
  }
  capi_bytes Add(std::vector<uint8_t> bytes) {
    out_.write("pad", 3);  // items never start at offset 0 or aligned
    const uint64_t offset = static_cast<uint64_t>(out_.tellp());
    out_.write(reinterpret_cast<const char*>(bytes.data()), static_cast<long>(bytes.size()));
    out_.flush();
    REQUIRE(out_.good());
    const std::vector<uint8_t>& kept = held_.emplace_back(std::move(bytes));
    return capi_bytes{kept.data(), kept.size(), file_.c_str(), offset};
  }
  std::vector<capi_bytes> AddAll(const std::vector<SourcePtr>& sources, size_t first) {
    std::vector<capi_bytes> out;
    for (size_t i = first; i < sources.size(); ++i) out.push_back(Add(*sources[i]));
    return out;
  }

 private:
  std::string file_;
  std::ofstream out_;
  std::deque<std::vector<uint8_t>> held_;  // stable addresses
};

capi_layout LayoutFor(const TensorLayout& layout) {
  return capi_layout{layout.scalar_type, layout.sizes.size(), layout.sizes.data(),
                     layout.dim_order.data()};
}

const capi_kind kKinds[] = {CAPI_MEMORY, CAPI_FILE, CAPI_CALLBACK};
const char* KindName(capi_kind k) {
  return k == CAPI_MEMORY ? "memory" : k == CAPI_FILE ? "file ranges" : "callbacks";
}

const char* kPteCases[] = {
    "pte_constants",        "pte_constants_align64", "pte_mutable",     "pte_delegates",
    "pte_delegates_inline", "pte_named_data",        "pte_no_segments", "pte_multi_method",
    "pte_all_kinds",        "pte_external",          "pte_fat"};

void RequireWritten(int status) {
  INFO("status " << status << ": " << etpack_last_error());
  REQUIRE(status == ETPACK_OK);
}

}  // namespace

TEST_CASE("every golden .pte written through the C API") {
  for (const char* name : kPteCases) {
    SECTION(name) {
      TempDir dir;
      auto manifest = LoadPteManifest(Golden(std::string(name) + ".input.json"));
      REQUIRE(manifest.ok());
      const PteInput& in = manifest->input;
      auto expected_plan = PlanPte(in, manifest->options);
      REQUIRE(expected_plan.ok());
      const std::vector<uint8_t> expected = Materialize(expected_plan->artifact);

      Items items(dir.File("items.bin"));
      // Entry 0 of constants and mutable data is the placeholder the C API
      // puts in place itself.
      for (size_t list : {0, 1}) {
        const auto& sources = list == 0 ? in.constants : in.mutable_data;
        if (!sources.empty()) REQUIRE(sources[0]->size() == 0);
      }
      const std::vector<capi_bytes> constants = items.AddAll(in.constants, 1);
      const std::vector<capi_bytes> mutable_data = items.AddAll(in.mutable_data, 1);
      const std::vector<capi_bytes> delegates = items.AddAll(in.delegates, 0);
      std::vector<capi_bytes> buffers;
      std::map<const Source*, size_t> buffer_of;
      std::vector<capi_named> named;
      for (const NamedData& nd : in.named_data) {
        auto [it, added] = buffer_of.emplace(nd.source.get(), buffers.size());
        if (added) buffers.push_back(items.Add(*nd.source));
        named.push_back({nd.key.c_str(), it->second, nd.alignment});
      }
      const std::string json = json::Print(in.program.tree());
      auto flatbuffer = BuildFlatbuffer(SchemaId::kProgram, in.program.tree());
      REQUIRE(flatbuffer.ok());

      capi_pte_case c{};
      c.constants = constants.data();
      c.constant_count = constants.size();
      c.mutable_data = mutable_data.data();
      c.mutable_count = mutable_data.size();
      c.delegates = delegates.data();
      c.delegate_count = delegates.size();
      c.named_buffers = buffers.data();
      c.named_buffer_count = buffers.size();
      c.named = named.data();
      c.named_count = named.size();
      c.segment_alignment = manifest->options.segment_alignment;
      c.constant_alignment = manifest->options.constant_tensor_alignment;
      c.delegate_alignment = manifest->options.delegate_alignment;
      c.extract_delegates = manifest->options.extract_delegate_segments;

      for (int as_flatbuffer : {0, 1}) {
        c.program_is_flatbuffer = as_flatbuffer;
        c.program = as_flatbuffer ? reinterpret_cast<const char*>(flatbuffer->data()) : json.data();
        c.program_size = as_flatbuffer ? flatbuffer->size() : json.size();
        for (capi_kind kind : kKinds) {
          INFO((as_flatbuffer ? "flatbuffer" : "JSON")
               << " structure, data from " << KindName(kind));
          const std::string path = dir.File("out.pte");
          RequireWritten(capi_write_pte(&c, kind, path.c_str()));
          CHECK(ReadFile(path) == expected);
          auto written = PteFile::Open(path);
          REQUIRE(written.ok());
          auto text = (*written)->ToFlatcJson();
          REQUIRE(text.ok());
          CHECK(*text == FlatcText(name));
        }
      }
    }
  }
}

TEST_CASE("every golden .ptd written through the C API") {
  for (const char* name : {"ptd_basic", "ptd_shared_blob"}) {
    SECTION(name) {
      TempDir dir;
      auto manifest = LoadPtdManifest(Golden(std::string(name) + ".input.json"));
      REQUIRE(manifest.ok());
      const PtdInput& in = manifest->input;
      auto expected_plan = PlanPtd(in, manifest->options);
      REQUIRE(expected_plan.ok());
      const std::vector<uint8_t> expected = Materialize(expected_plan->artifact);

      Items items(dir.File("items.bin"));
      const std::vector<capi_bytes> buffers = items.AddAll(in.buffers, 0);
      std::vector<capi_ptd_entry> entries;
      for (const PtdEntry& e : in.entries) {
        entries.push_back({e.key.c_str(), e.buffer_index, e.alignment, e.layout.has_value(),
                           e.layout ? LayoutFor(*e.layout) : capi_layout{}});
      }
      const capi_ptd_case c{buffers.data(), buffers.size(), entries.data(), entries.size(),
                            manifest->options.segment_alignment};
      for (capi_kind kind : kKinds) {
        INFO("data from " << KindName(kind));
        const std::string path = dir.File("out.ptd");
        RequireWritten(capi_write_ptd(&c, kind, path.c_str()));
        CHECK(ReadFile(path) == expected);
        auto written = PtdFile::Open(path);
        REQUIRE(written.ok());
        auto text = (*written)->ToFlatcJson();
        REQUIRE(text.ok());
        CHECK(*text == FlatcText(name));
      }
    }
  }
}

TEST_CASE("every golden .bpte written through the C API") {
  const std::map<std::string, std::string> program_of = {
      {"bpte_basic", "pte_constants.pte"}, {"bpte_multi_method", "pte_multi_method.pte"}};
  for (const auto& [name, program] : program_of) {
    SECTION(name) {
      TempDir dir;
      auto golden = BpteFile::Open(Golden(name + ".bpte"));
      REQUIRE(golden.ok());
      auto suites = (*golden)->Suites();
      REQUIRE(suites.ok());

      Items items(dir.File("items.bin"));
      std::deque<std::vector<capi_value>> values;  // stable addresses
      std::vector<capi_test_case> cases;
      auto to_c = [&](const std::vector<BundledValue>& in) {
        std::vector<capi_value>& out = values.emplace_back();
        for (const BundledValue& v : in) {
          capi_value c{};
          switch (v.kind) {
            case BundledValue::Kind::kTensor:
              c.kind = CAPI_TENSOR;
              c.layout = LayoutFor(v.layout);
              c.data = items.Add(*v.data);
              break;
            case BundledValue::Kind::kInt:
              c.kind = CAPI_INT;
              c.int_val = v.int_val;
              break;
            case BundledValue::Kind::kBool:
              c.kind = CAPI_BOOL;
              c.bool_val = v.bool_val;
              break;
            case BundledValue::Kind::kDouble:
              c.kind = CAPI_DOUBLE;
              c.double_val = v.double_val;
              break;
          }
          out.push_back(c);
        }
        return &out;
      };
      for (const BundledTestSuite& suite : *suites) {
        for (const BundledTestCase& tc : suite.test_cases) {
          const auto* inputs = to_c(tc.inputs);
          const auto* outputs = to_c(tc.expected_outputs);
          cases.push_back({suite.method_name.c_str(), inputs->data(), inputs->size(),
                           outputs->data(), outputs->size()});
        }
      }
      auto golden_text = (*golden)->ToFlatcJson();
      REQUIRE(golden_text.ok());
      for (capi_kind kind : kKinds) {
        INFO("data from " << KindName(kind));
        const std::string path = dir.File("out.bpte");
        RequireWritten(capi_write_bpte(Golden(program).c_str(), cases.data(), cases.size(), kind,
                                       path.c_str()));
        auto written = BpteFile::Open(path);
        REQUIRE(written.ok());
        auto text = (*written)->ToFlatcJson();
        REQUIRE(text.ok());
        CHECK(*text == *golden_text);
      }
    }
  }
}

TEST_CASE("the C API's error paths, callbacks and progress, checked in C") {
  TempDir dir;
  std::vector<char> log(1 << 16);
  const int failures = capi_checks(dir.path().c_str(), log.data(), log.size());
  INFO(log.data());
  CHECK(failures == 0);
  // Nothing is left behind by the failed writes.
  CHECK(dir.List().empty());
}

TEST_CASE("etpack_pte_write_with_data writes a program and its data as one unit") {
  // A program whose constant is EXTERNAL, and the .ptd entry it names.
  auto split = ExternalizeConstants(SmallProgram({Pattern(64, 1)}));
  REQUIRE(split.ok());
  // The program in its tree form, as a C caller would hand it over.
  auto tree = ProgramStructure(split->first.program).TakeTree();
  REQUIRE(tree.ok());
  const std::string json = json::Print(*tree);
  const PtdEntry& entry = split->second.entries.at(0);
  auto bytes = ReadAll(*split->second.buffers.at(entry.buffer_index));
  REQUIRE(bytes.ok());

  etpack_pte* pte = nullptr;
  etpack_ptd* ptd = nullptr;
  etpack_source* data = nullptr;
  REQUIRE(etpack_pte_create(&pte) == ETPACK_OK);
  REQUIRE(etpack_pte_set_program_json(pte, json.data(), json.size()) == ETPACK_OK);
  REQUIRE(etpack_pte_set_option(pte, ETPACK_PTE_SEGMENT_ALIGNMENT, 4096) == ETPACK_OK);
  REQUIRE(etpack_ptd_create(&ptd) == ETPACK_OK);
  REQUIRE(etpack_source_memory(bytes->data(), bytes->size(), &data) == ETPACK_OK);
  const TensorLayout& layout = *entry.layout;
  REQUIRE(etpack_ptd_add_tensor(ptd, entry.key.c_str(), data, layout.scalar_type,
                                layout.sizes.size(), layout.sizes.data(), layout.dim_order.data(),
                                entry.alignment) == ETPACK_OK);

  TempDir dir;
  const std::string pte_path = dir.File("m.pte"), ptd_path = dir.File("m.ptd");
  const char* data_paths[] = {ptd_path.c_str()};
  const etpack_ptd* datas[] = {ptd};
  SECTION("written, the .ptd laid out as the program asks") {
    RequireWritten(etpack_pte_write_with_data(pte, pte_path.c_str(), 1, data_paths, datas, nullptr,
                                              nullptr, nullptr));
    auto program = PteFile::Open(pte_path);
    auto written = PtdFile::Open(ptd_path);
    REQUIRE(program.ok());
    REQUIRE(written.ok());
    CHECK(CheckExternalReferences(**program, {written->get()}).ok());
    // The program's segment alignment, not the .ptd builder's 128.
    CHECK((*written)->layout().segment_base_offset % 4096 == 0);
  }
  SECTION("a planning error names the file and writes nothing") {
    etpack_ptd* bad = nullptr;
    REQUIRE(etpack_ptd_create(&bad) == ETPACK_OK);
    REQUIRE(etpack_ptd_add_blob(bad, "b", data, 0) == ETPACK_OK);  // not a positive alignment
    const etpack_ptd* bads[] = {bad};
    CHECK(etpack_pte_write_with_data(pte, pte_path.c_str(), 1, data_paths, bads, nullptr, nullptr,
                                     nullptr) == ETPACK_INVALID_ARGUMENT);
    CHECK(std::string(etpack_last_error()).rfind(ptd_path + ": ", 0) == 0);
    const char* same[] = {pte_path.c_str()};
    CHECK(etpack_pte_write_with_data(pte, pte_path.c_str(), 1, same, datas, nullptr, nullptr,
                                     nullptr) == ETPACK_INVALID_ARGUMENT);
    CHECK(etpack_pte_write_with_data(pte, pte_path.c_str(), 1, nullptr, datas, nullptr, nullptr,
                                     nullptr) == ETPACK_INVALID_ARGUMENT);
    CHECK(std::string(etpack_last_error()) == "etpack_pte_write_with_data: data_paths is NULL");
    CHECK(dir.List().empty());
    etpack_ptd_free(bad);
  }
  SECTION("a key in two of the .ptd files is refused: verify would refuse the set") {
    // The same entry in a second file: the runtime merges the keys of all
    // of a program's .ptd files, and which one would win is not defined.
    const std::string other_path = dir.File("other.ptd");
    const char* two_paths[] = {ptd_path.c_str(), other_path.c_str()};
    const etpack_ptd* two[] = {ptd, ptd};
    CHECK(etpack_pte_write_with_data(pte, pte_path.c_str(), 2, two_paths, two, nullptr, nullptr,
                                     nullptr) == ETPACK_INVALID_ARGUMENT);
    CHECK(std::string(etpack_last_error()) ==
          "key '" + entry.key + "' is in both " + ptd_path + " and " + other_path);
    CHECK(dir.List().empty());
    // What verify says of such a set, written anyway (each file alone).
    REQUIRE(etpack_pte_write_with_data(pte, pte_path.c_str(), 1, data_paths, datas, nullptr,
                                       nullptr, nullptr) == ETPACK_OK);
    const char* other_alone[] = {other_path.c_str()};
    REQUIRE(etpack_pte_write_with_data(pte, pte_path.c_str(), 1, other_alone, datas, nullptr,
                                       nullptr, nullptr) == ETPACK_OK);
    const char* set[] = {pte_path.c_str(), ptd_path.c_str(), other_path.c_str()};
    CHECK(etpack_verify(3, set) == ETPACK_INVALID_ARGUMENT);
    CHECK(std::string(etpack_last_error()) ==
          "key '" + entry.key + "' is in both " + ptd_path + " and " + other_path);
    CHECK(etpack_verify(2, set) == ETPACK_OK);
    CHECK(etpack_verify(2, set + 1) == ETPACK_INVALID_ARGUMENT);
    CHECK(etpack_verify(0, nullptr) == ETPACK_INVALID_ARGUMENT);
  }
  etpack_source_free(data);
  etpack_ptd_free(ptd);
  etpack_pte_free(pte);
}

// etpack_plan_write_files with two paths to one folder (mount --bind):
// written, the folder locked once (it used to wait forever for its own
// lock: a child with a 20 s alarm fails instead of hanging), and one name
// reached both ways refused as the same file.
TEST_CASE("etpack_plan_write_files through two paths to one folder (bind mount)") {
  TempDir dir;
  const std::string src = dir.File("src"), bind = dir.File("bind");
  REQUIRE(::mkdir(src.c_str(), 0755) == 0);
  REQUIRE(::mkdir(bind.c_str(), 0755) == 0);
  BindMount mount(src, bind);
  if (!mount.mounted()) {
    WARN("skipped: " << mount.why());
    return;
  }
  const std::vector<uint8_t> bytes = PatternBytes(64, 1);
  etpack_source* data = nullptr;
  etpack_plan* plan = nullptr;
  REQUIRE(etpack_source_memory(bytes.data(), bytes.size(), &data) == ETPACK_OK);
  REQUIRE(etpack_plan_of_source(data, &plan) == ETPACK_OK);
  const etpack_plan* plans[] = {plan, plan};
  const std::string a = bind + "/a", b = src + "/b";
  const char* two[] = {a.c_str(), b.c_str()};
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::signal(SIGALRM, SIG_DFL);
    ::alarm(20);
    ::_exit(etpack_plan_write_files(2, two, plans, nullptr, nullptr, nullptr) == ETPACK_OK ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(ReadFile(src + "/a") == bytes);
  CHECK(ReadFile(src + "/b") == bytes);
  const std::string x1 = bind + "/x", x2 = src + "/x";
  const char* same[] = {x1.c_str(), x2.c_str()};
  CHECK(etpack_plan_write_files(2, same, plans, nullptr, nullptr, nullptr) ==
        ETPACK_INVALID_ARGUMENT);
  CHECK(std::string(etpack_last_error()).find("are the same file") != std::string::npos);
  CHECK(!std::filesystem::exists(x2));
  etpack_plan_free(plan);
  etpack_source_free(data);
}

TEST_CASE("etpack_share: thin programs and a shared file, or a dry run") {
  TempDir dir;
  std::vector<std::string> in;
  for (int v = 0; v < 2; ++v) {
    in.push_back(dir.File("v" + std::to_string(v) + ".pte"));
    REQUIRE(WritePte(in.back(), SmallProgram({Pattern(8192, 1), Pattern(4096 + v, 9)})).ok());
  }
  const char* inputs[] = {in[0].c_str(), in[1].c_str()};
  const std::string out = dir.File("out");
  char* report = nullptr;
  REQUIRE(etpack_share(2, inputs, out.c_str(), nullptr, 0, 0, 4096, ETPACK_SHARE_DRY_RUN, nullptr,
                       nullptr, nullptr, &report) == ETPACK_OK);
  REQUIRE(report != nullptr);
  Result<json::Value> dry = json::Parse(report);
  etpack_string_free(report);
  REQUIRE(dry.ok());
  CHECK(dry->Find("dry_run")->as_bool());
  CHECK(dry->Find("entries")->items().size() == 1);
  CHECK_FALSE(std::filesystem::exists(out));

  uint64_t last = 0;
  auto progress = [](void* user, uint64_t done, uint64_t) { *static_cast<uint64_t*>(user) = done; };
  REQUIRE(etpack_share(2, inputs, out.c_str(), "w.ptd", 0, 0, 4096, 0, progress, nullptr, &last,
                       &report) == ETPACK_OK);
  Result<json::Value> wet = json::Parse(report);
  etpack_string_free(report);
  REQUIRE(wet.ok());
  CHECK_FALSE(wet->Find("dry_run")->as_bool());
  CHECK(last == wet->Find("bytes_written")->as_uint());
  const std::string thin = out + "/v1.pte", shared = out + "/w.ptd";
  const char* set[] = {thin.c_str(), shared.c_str()};
  CHECK(etpack_verify(2, set) == ETPACK_OK);

  // Refusals: nothing written, no report.
  report = nullptr;
  CHECK(etpack_share(1, inputs, out.c_str(), nullptr, 0, 0, 4096, 0, nullptr, nullptr, nullptr,
                     &report) == ETPACK_INVALID_ARGUMENT);
  CHECK(report == nullptr);
  CHECK(etpack_share(2, inputs, nullptr, nullptr, 0, 0, 4096, 0, nullptr, nullptr, nullptr,
                     nullptr) == ETPACK_INVALID_ARGUMENT);
  CHECK(std::string(etpack_last_error()) == "etpack_share: out_dir is NULL");
  CHECK(etpack_share(2, inputs, out.c_str(), nullptr, 0, 0, 4096, 8, nullptr, nullptr, nullptr,
                     nullptr) == ETPACK_INVALID_ARGUMENT);
  etpack_string_free(nullptr);
}

namespace {

// Another process (a child) holds the lock of `dir`, the flock(2) every
// publisher into `dir` takes, until the object goes (or 20 s pass: then the
// child exits and frees it, so a wait that ignored cancel ends, the test
// failing instead of hanging).
class ChildHoldsLock {
 public:
  explicit ChildHoldsLock(const std::string& dir) {
    int ready[2], done[2];
    REQUIRE(::pipe(ready) == 0);
    REQUIRE(::pipe(done) == 0);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::alarm(20);
      const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
      const char ok = fd >= 0 && ::flock(fd, LOCK_EX) == 0 ? 'y' : 'n';
      ::close(done[1]);
      if (::write(ready[1], &ok, 1) != 1) ::_exit(1);
      char c;
      (void)::read(done[0], &c, 1);  // returns when the parent closes its end
      ::_exit(0);
    }
    ::close(ready[1]);
    ::close(done[0]);
    done_ = done[1];
    char ok = 0;
    held_ = ::read(ready[0], &ok, 1) == 1 && ok == 'y';
    ::close(ready[0]);
  }
  ~ChildHoldsLock() {
    ::close(done_);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  bool held() const { return held_; }

 private:
  pid_t pid_ = -1;
  int done_ = -1;
  bool held_ = false;
};

// Progress and cancel of one C write: cancel answers yes once the last byte
// is reported written and cancel was asked again after that, which only the
// wait for another writer's lock does (the writer asks once after its last
// byte, before publishing).
struct WaitThenCancel {
  bool finished = false;
  int asked_after = 0;
  int asked = 0;
  static void Progress(void* user, uint64_t done, uint64_t total) {
    static_cast<WaitThenCancel*>(user)->finished = done == total;
  }
  static int Cancel(void* user) {
    auto* w = static_cast<WaitThenCancel*>(user);
    ++w->asked;
    return w->finished && ++w->asked_after > 1;
  }
  // For share, which waits for its folder's parent before writing a byte.
  static int CancelThird(void* user) { return ++static_cast<WaitThenCancel*>(user)->asked >= 3; }
};

}  // namespace

TEST_CASE("etpack_plan_write_files: the cancel callback ends a wait for another process's lock") {
  TempDir dir;
  const std::vector<uint8_t> bytes = PatternBytes(1 << 16, 3);
  etpack_source* data = nullptr;
  etpack_plan* plan = nullptr;
  REQUIRE(etpack_source_memory(bytes.data(), bytes.size(), &data) == ETPACK_OK);
  REQUIRE(etpack_plan_of_source(data, &plan) == ETPACK_OK);
  const std::string out = dir.File("m.ptd");
  const char* paths[] = {out.c_str()};
  const etpack_plan* plans[] = {plan};
  {
    ChildHoldsLock lock(dir.path());
    REQUIRE(lock.held());
    WaitThenCancel w;
    const auto start = std::chrono::steady_clock::now();
    CHECK(etpack_plan_write_files(1, paths, plans, WaitThenCancel::Progress, WaitThenCancel::Cancel,
                                  &w) == ETPACK_IO_ERROR);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(15));
    const std::string message = etpack_last_error();
    CAPTURE(message);
    CHECK(message.find(out + ": write cancelled by the caller while waiting for another writer "
                             "to finish publishing into ") != std::string::npos);
    CHECK(dir.List().empty());  // nothing published, nothing left behind
    // etpack_plan_write waits and stops the same way.
    WaitThenCancel again;
    CHECK(etpack_plan_write(plan, out.c_str(), WaitThenCancel::Progress, WaitThenCancel::Cancel,
                            &again) == ETPACK_IO_ERROR);
    CHECK(again.asked_after > 1);
    CHECK(dir.List().empty());
  }
  // The lock freed: the same call publishes, its cancel never saying yes.
  WaitThenCancel free;
  CHECK(etpack_plan_write_files(1, paths, plans, WaitThenCancel::Progress, WaitThenCancel::Cancel,
                                &free) == ETPACK_OK);
  CHECK(ReadFile(out) == bytes);
  etpack_plan_free(plan);
  etpack_source_free(data);
}

TEST_CASE("etpack_share: the cancel callback ends a wait for another process's lock") {
  TempDir dir;
  std::vector<std::string> in;
  for (int v = 0; v < 2; ++v) {
    in.push_back(dir.File("v" + std::to_string(v) + ".pte"));
    REQUIRE(WritePte(in.back(), SmallProgram({Pattern(8192, 1), Pattern(4096 + v, 9)})).ok());
  }
  const char* inputs[] = {in[0].c_str(), in[1].c_str()};
  const std::string out = dir.File("out");
  const std::set<std::string> before = dir.List();
  ChildHoldsLock lock(dir.path());  // out's parent: where share publishes its folder
  REQUIRE(lock.held());
  WaitThenCancel w;
  char* report = nullptr;
  CHECK(etpack_share(2, inputs, out.c_str(), nullptr, 0, 0, 4096, 0, nullptr,
                     WaitThenCancel::CancelThird, &w, &report) == ETPACK_IO_ERROR);
  const std::string message = etpack_last_error();
  CAPTURE(message);
  CHECK(message.find("cancelled by the caller while waiting for another writer") !=
        std::string::npos);
  CHECK(w.asked == 3);
  CHECK(report == nullptr);
  CHECK(dir.List() == before);  // no out, no hidden staging folder
}
