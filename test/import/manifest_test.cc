#include "catch.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <variant>
#include <vector>

#include "etpack/json.h"
#include "etpack/manifest.h"
#include "etpack/source.h"
#include "test_files.h"

namespace etpack {
namespace {

using etpack::testing::GoldenDir;

std::vector<uint8_t> Bytes(const SourcePtr& src) {
  REQUIRE(src != nullptr);
  Result<std::vector<uint8_t>> r = ReadAll(*src);
  REQUIRE(r.ok());
  return *r;
}

std::vector<uint8_t> Bytes(std::string_view s) { return {s.begin(), s.end()}; }

// A fresh directory, removed with its files at the end of the test.
class TempDir {
 public:
  TempDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/manifest_test.XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    REQUIRE(mkdtemp(buf.data()) != nullptr);
    path_ = buf.data();
  }
  ~TempDir() {
    for (const std::string& f : files_) std::remove(f.c_str());
    rmdir(path_.c_str());
  }
  std::string Write(const std::string& name, const std::string& content) {
    const std::string p = path_ + "/" + name;
    FILE* f = std::fopen(p.c_str(), "wb");
    REQUIRE(f != nullptr);
    REQUIRE(std::fwrite(content.data(), 1, content.size(), f) == content.size());
    std::fclose(f);
    files_.push_back(p);
    return p;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::vector<std::string> files_;
};

json::Value MustParse(const std::string& text) {
  Result<json::Value> r = json::Parse(text);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return std::move(r).value();
}

// Counts objects that still look like unresolved blobs.
int CountBlobObjects(const json::Value& v) {
  int n = 0;
  if (v.kind() == json::Kind::kObject) {
    if (v.Find("base64") != nullptr || v.Find("file") != nullptr) ++n;
    for (const auto& m : v.members()) n += CountBlobObjects(m.second);
  } else if (v.kind() == json::Kind::kArray) {
    for (const auto& i : v.items()) n += CountBlobObjects(i);
  }
  return n;
}

std::string LoadError(const std::string& manifest, const std::string& base_dir = "") {
  json::Value doc = MustParse(manifest);
  Result<PteManifest> m = PteManifestFromJson(doc, base_dir, "m.json");
  INFO(manifest);
  REQUIRE_FALSE(m.ok());
  const std::string msg = m.status().message();
  CHECK(msg.rfind("m.json: ", 0) == 0);
  return msg;
}

// A minimal valid manifest with `extra` spliced into the top level.
std::string Manifest(const std::string& program_body, const std::string& extra = "") {
  return R"({"format": "pte", "program": {"version": 0)" + program_body + "}" + extra + "}";
}

TEST_CASE("every golden .pte input loads", "[manifest]") {
  const std::string dir = GoldenDir();
  DIR* d = opendir(dir.c_str());
  REQUIRE(d != nullptr);
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n.rfind("pte_", 0) == 0 && n.size() > 11 &&
        n.compare(n.size() - 11, 11, ".input.json") == 0) {
      names.push_back(n);
    }
  }
  closedir(d);
  CHECK(names.size() >= 10);
  for (const std::string& n : names) {
    INFO(n);
    Result<PteManifest> m = LoadPteManifest(dir + "/" + n);
    INFO(m.status().ToString());
    REQUIRE(m.ok());
    const json::Value& program = m->input.program.tree();
    REQUIRE(program.kind() == json::Kind::kObject);
    CHECK(CountBlobObjects(program) == 0);
    // The bytes are beside the tree: constants hold at least the placeholder.
    CHECK(m->input.constants.size() >= 1);
    REQUIRE(program.Find("constant_buffer") != nullptr);
    for (const json::Value& b : program.Find("constant_buffer")->items()) {
      CHECK(b.Find("storage")->is_null());
    }
    // The planner fills these; the null-vs-[] distinction must survive.
    REQUIRE(program.Find("segments") != nullptr);
    CHECK(program.Find("segments")->kind() == json::Kind::kArray);
    REQUIRE(program.Find("mutable_data_segments") != nullptr);
    CHECK(program.Find("mutable_data_segments")->is_null());
  }
}

TEST_CASE("pte_named_data: buffers and entries", "[manifest]") {
  Result<PteManifest> m = LoadPteManifest(GoldenDir() + "/pte_named_data.input.json");
  REQUIRE(m.ok());
  const PteInput& in = m->input;
  CHECK(in.mutable_data.empty());
  REQUIRE(in.named_data.size() == 4);
  CHECK(in.named_data[0].source->size() == 10);
  CHECK(in.named_data[1].source->size() == 200);
  CHECK(in.named_data[3].source->size() == 5);
  // Keys of one buffer share its source.
  CHECK(in.named_data[2].source == in.named_data[1].source);
  CHECK(Bytes(in.named_data[0].source) == Bytes("named-A-10"));
  CHECK(Bytes(in.named_data[3].source) == Bytes("CCCCC"));
  std::vector<uint8_t> b = Bytes(in.named_data[1].source);
  for (size_t i = 0; i < b.size(); ++i) {
    INFO(i);
    REQUIRE(b[i] == static_cast<uint8_t>(i * 13));
  }
  const char* keys[] = {"blob.a", "blob.b", "blob.b_alias", "blob.c"};
  const uint64_t align[] = {1, 64, 1024, 512};
  for (size_t i = 0; i < 4; ++i) {
    CHECK(in.named_data[i].key == keys[i]);
    CHECK(in.named_data[i].alignment == align[i]);
  }
  CHECK(m->options.segment_alignment == 128);
  CHECK(m->options.constant_tensor_alignment == 16);
  CHECK(m->options.delegate_alignment == 16);
  CHECK(m->options.extract_delegate_segments);

  REQUIRE(m->input.constants.size() >= 2);
  CHECK(m->input.constants[1]->size() == 24);
}

TEST_CASE("pte_mutable: mutable data sources", "[manifest]") {
  Result<PteManifest> m = LoadPteManifest(GoldenDir() + "/pte_mutable.input.json");
  REQUIRE(m.ok());
  const auto& md = m->input.mutable_data;
  REQUIRE(md.size() == 4);
  CHECK(md[0]->size() == 0);
  CHECK(md[1]->size() == 12);
  CHECK(md[2]->size() == 8);
  CHECK(md[3]->size() == 5);
  CHECK(Bytes(md[1]) == std::vector<uint8_t>{0, 0, 0x80, 0x3e, 0, 0, 0, 0x3f, 0, 0, 0x40, 0x3f});
  CHECK(Bytes(md[2]) == std::vector<uint8_t>{0xf9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff});
  CHECK(Bytes(md[3]) == std::vector<uint8_t>{1, 2, 3, 4, 5});
  CHECK(m->input.named_data.empty());
}

TEST_CASE("serializer options from golden inputs", "[manifest]") {
  Result<PteManifest> inl = LoadPteManifest(GoldenDir() + "/pte_delegates_inline.input.json");
  REQUIRE(inl.ok());
  CHECK_FALSE(inl->options.extract_delegate_segments);
  CHECK(inl->options.delegate_alignment == 32);
  CHECK(inl->options.constant_tensor_alignment == 16);  // null -> 16

  Result<PteManifest> a64 = LoadPteManifest(GoldenDir() + "/pte_constants_align64.input.json");
  REQUIRE(a64.ok());
  CHECK(a64->options.segment_alignment == 4096);
  CHECK(a64->options.constant_tensor_alignment == 64);
  CHECK(a64->options.delegate_alignment == 16);
}

TEST_CASE("defaults when options are absent", "[manifest]") {
  json::Value doc = MustParse(R"({"program": {"version": 0}})");
  Result<PteManifest> m = PteManifestFromJson(doc, "", "m.json");
  REQUIRE(m.ok());
  CHECK(m->options.segment_alignment == 128);
  CHECK(m->options.constant_tensor_alignment == 16);
  CHECK(m->options.delegate_alignment == 16);
  CHECK(m->options.extract_delegate_segments);
  CHECK(m->input.program.tree() == MustParse(R"({"version": 0})"));
}

TEST_CASE("file-referenced blobs resolve against the manifest folder", "[manifest]") {
  TempDir dir;
  dir.Write("w.bin", "0123456789");
  const std::string path = dir.Write("model.json", R"({
    "format": "pte",
    "program": {"constant_buffer": [
      {"storage": {"base64": "", "size": 0}},
      {"storage": {"file": "w.bin"}},
      {"storage": {"file": "w.bin", "offset": 4}},
      {"storage": {"file": "w.bin", "offset": 2, "length": 3}},
      {"storage": {"file": "w.bin", "offset": 10, "length": 0}},
      {"storage": [1, 2, 3]}]},
    "mutable_data": [{"storage": {"file": "w.bin", "length": 2}}],
    "named_data": {"buffers": [{"file": "w.bin", "offset": 8, "length": null}],
                   "entries": [{"key": "k", "buffer_index": 0, "alignment": 64}]}
  })");
  Result<PteManifest> m = LoadPteManifest(path);
  INFO(m.status().ToString());
  REQUIRE(m.ok());
  const auto& cb = m->input.constants;
  REQUIRE(cb.size() == 6);
  CHECK(Bytes(cb[0]).empty());
  CHECK(Bytes(cb[1]) == Bytes("0123456789"));
  CHECK(Bytes(cb[2]) == Bytes("456789"));
  CHECK(Bytes(cb[3]) == Bytes("234"));
  CHECK(cb[4]->size() == 0);
  // A byte array is taken as the bytes themselves.
  CHECK(Bytes(cb[5]) == std::vector<uint8_t>{1, 2, 3});
  // None stay in the tree.
  for (const json::Value& b : m->input.program.tree().Find("constant_buffer")->items()) {
    CHECK(b.Find("storage")->is_null());
  }
  REQUIRE(m->input.mutable_data.size() == 1);
  CHECK(Bytes(m->input.mutable_data[0]) == Bytes("01"));
  REQUIRE(m->input.named_data.size() == 1);
  CHECK(Bytes(m->input.named_data[0].source) == Bytes("89"));
  CHECK(m->input.named_data[0].alignment == 64);

  // An absolute path is taken as is, whatever base_dir says.
  json::Value blob = MustParse(R"({"file": ")" + dir.path() + R"(/w.bin", "length": 1})");
  Result<SourcePtr> src = BlobSource(blob, "/nonexistent", "t.json");
  REQUIRE(src.ok());
  CHECK(Bytes(*src) == Bytes("0"));
}

TEST_CASE("PteManifestFromJson leaves the document untouched", "[manifest]") {
  json::Value doc =
      MustParse(Manifest(R"(, "constant_buffer": [{"storage": {"base64": "QUJD", "size": 3}}])"));
  const json::Value before = doc;
  Result<PteManifest> m = PteManifestFromJson(doc, "", "m.json");
  REQUIRE(m.ok());
  CHECK(doc == before);
  REQUIRE(m->input.constants.size() == 1);
  CHECK(Bytes(m->input.constants[0]) == Bytes("ABC"));
}

TEST_CASE("the program becomes a plain tree; its bulk bytes go to typed lists", "[manifest]") {
  json::Value doc = MustParse(Manifest(R"(,
      "constant_buffer": [{"storage": []}, {"storage": {"base64": "QUJD", "size": 3}}],
      "backend_delegate_data": [{"data": {"base64": "AAEC", "size": 3}}, {"data": [9]}],
      "execution_plan": [{"delegates": [{"id": "B", "processed": {"location": 0, "index": 1},
          "compile_specs": [{"key": "k", "value": {"base64": "BAAAAA==", "size": 4}}]}]}])"));
  Result<PteManifest> m = PteManifestFromJson(doc, "", "m.json");
  INFO(m.status().ToString());
  REQUIRE(m.ok());
  REQUIRE(m->input.constants.size() == 2);
  CHECK(Bytes(m->input.constants[0]).empty());
  CHECK(Bytes(m->input.constants[1]) == Bytes("ABC"));
  REQUIRE(m->input.delegates.size() == 2);
  CHECK(Bytes(m->input.delegates[0]) == std::vector<uint8_t>{0, 1, 2});
  CHECK(Bytes(m->input.delegates[1]) == std::vector<uint8_t>{9});
  const json::Value& tree = m->input.program.tree();
  CHECK(CountBlobObjects(tree) == 0);
  CHECK(tree.Find("backend_delegate_data")->items()[0].Find("data")->is_null());
  // A small [ubyte] field keeps its bytes in the tree, spelled out.
  const json::Value& spec = tree.Find("execution_plan")
                                ->items()[0]
                                .Find("delegates")
                                ->items()[0]
                                .Find("compile_specs")
                                ->items()[0];
  CHECK(*spec.Find("value") == MustParse("[4, 0, 0, 0]"));

  CHECK(LoadError(Manifest(R"(, "constant_buffer": [{"storage": [1, 256]}])")) ==
        "m.json: program.constant_buffer[0].storage[1] = 256 is not a byte value 0..255");
  CHECK(LoadError(Manifest(R"(, "backend_delegate_data": [{"data": "AAEC"}])")) ==
        "m.json: program.backend_delegate_data[0].data = \"AAEC\" is not a blob or an array "
        "of bytes");
}

TEST_CASE("base64 is strict RFC 4648 with padding", "[manifest]") {
  auto decode = [](const std::string& b64, uint64_t size) -> Result<std::vector<uint8_t>> {
    json::Value blob =
        MustParse(R"({"base64": ")" + b64 + R"(", "size": )" + std::to_string(size) + "}");
    Result<SourcePtr> src = BlobSource(blob, "", "t.json", "b");
    if (!src.ok()) return src.status();
    return ReadAll(**src);
  };
  CHECK(*decode("", 0) == Bytes(""));
  CHECK(*decode("Zg==", 1) == Bytes("f"));
  CHECK(*decode("Zm8=", 2) == Bytes("fo"));
  CHECK(*decode("Zm9v", 3) == Bytes("foo"));
  CHECK(*decode("Zm9vYmFy", 6) == Bytes("foobar"));
  CHECK(*decode("+/+/", 3) == std::vector<uint8_t>{0xfb, 0xff, 0xbf});
  for (const char* bad : {"Zg", "Zg=", "Zm9", "Zg==Zg==", "Z===", "====", "Zm=v", "Zm9v\\n", "Zm 9",
                          "Zm-_", "Zh==", "Zm9=", "Zm8"}) {
    INFO(bad);
    Result<std::vector<uint8_t>> r = decode(bad, 1);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("b.base64") != std::string::npos);
  }
}

TEST_CASE("no in-band values: a huge length, a NUL in a path or a key", "[manifest]") {
  TempDir dir;
  dir.Write("w.bin", "0123456789");
  SECTION("length 2^64 - 1 is a length, not 'to the end'") {
    std::string e = LoadError(
        Manifest(
            "",
            R"(, "mutable_data": [{"storage": {"file": "w.bin", "length": 18446744073709551615}}])"),
        dir.path());
    CHECK(e.find("mutable_data[0].storage") != std::string::npos);
    CHECK(e.find("length = 18446744073709551615") != std::string::npos);
  }
  SECTION("a NUL byte in a file name") {
    std::string e = LoadError(
        Manifest("", R"(, "mutable_data": [{"storage": {"file": "w.bin\u0000x"}}])"), dir.path());
    CHECK(e.find("mutable_data[0].storage.file = \"w.bin\\u0000x\"") != std::string::npos);
    CHECK(e.find("NUL") != std::string::npos);
  }
  SECTION("a NUL byte in a key") {
    std::string e = LoadError(Manifest("", R"(, "named_data": {"buffers": [{"file": "w.bin"}],
                        "entries": [{"key": "a\u0000b", "buffer_index": 0}]})"),
                              dir.path());
    CHECK(e.find("named_data.entries[0]") != std::string::npos);
    CHECK(e.find("\"a\\u0000b\"") != std::string::npos);
    CHECK(e.find("NUL") != std::string::npos);
  }
}

TEST_CASE("blob errors name the JSON path and the value", "[manifest]") {
  TempDir dir;
  dir.Write("w.bin", "0123456789");

  SECTION("bad base64") {
    std::string e = LoadError(Manifest(
        R"(, "constant_buffer": [{"storage": null}, {"storage": {"base64": "QU!D", "size": 3}}])"));
    CHECK(e.find("program.constant_buffer[1].storage.base64") != std::string::npos);
    CHECK(e.find("\"QU!D\"") != std::string::npos);
    CHECK(e.find("'!' at offset 2") != std::string::npos);
  }
  SECTION("size mismatch") {
    std::string e = LoadError(Manifest(
        R"(, "execution_plan": [{"delegates": []}], "backend_delegate_data": [{"data": {"base64": "QUJD", "size": 4}}])"));
    CHECK(e.find("program.backend_delegate_data[0].data.size = 4") != std::string::npos);
    CHECK(e.find("\"QUJD\"") != std::string::npos);
    CHECK(e.find("3 bytes") != std::string::npos);
  }
  SECTION("size missing") {
    std::string e = LoadError(Manifest(R"(, "x": {"base64": "QUJD"})"));
    CHECK(e.find("program.x") != std::string::npos);
    CHECK(e.find("size") != std::string::npos);
  }
  SECTION("negative size") {
    std::string e = LoadError(Manifest(R"(, "x": {"base64": "QUJD", "size": -3})"));
    CHECK(e.find("program.x.size = -3") != std::string::npos);
  }
  SECTION("long values are cut short") {
    std::string e = LoadError(
        Manifest(R"(, "x": {"base64": ")" + std::string(4000, 'A') + R"(!===", "size": 3})"));
    CHECK(e.find("...") != std::string::npos);
    CHECK(e.size() < 300);
  }
  SECTION("missing file") {
    std::string e = LoadError(
        Manifest(R"(, "constant_buffer": [{"storage": {"file": "nope.bin"}}])"), dir.path());
    CHECK(e.find("program.constant_buffer[0].storage") != std::string::npos);
    CHECK(e.find("\"nope.bin\"") != std::string::npos);
    CHECK(e.find(dir.path() + "/nope.bin") != std::string::npos);
  }
  SECTION("range past the end of the file") {
    std::string e = LoadError(
        Manifest("",
                 R"(, "mutable_data": [{"storage": {"file": "w.bin", "offset": 8, "length": 3}}])"),
        dir.path());
    CHECK(e.find("mutable_data[0].storage") != std::string::npos);
    CHECK(e.find("\"w.bin\"") != std::string::npos);
    CHECK(e.find("offset = 8") != std::string::npos);
    CHECK(e.find("length = 3") != std::string::npos);
    CHECK(e.find("10 bytes") != std::string::npos);
  }
  SECTION("unknown member in a blob") {
    std::string e = LoadError(Manifest(R"(, "x": {"file": "w.bin", "lenght": 3})"), dir.path());
    CHECK(e.find("program.x") != std::string::npos);
    CHECK(e.find("\"lenght\"") != std::string::npos);
  }
  SECTION("both base64 and file") {
    std::string e = LoadError(Manifest(R"(, "x": {"file": "w.bin", "base64": ""})"), dir.path());
    CHECK(e.find("program.x") != std::string::npos);
  }
}

TEST_CASE("manifest-level errors name the field and value", "[manifest]") {
  const std::string blob = R"({"base64": "QUJD", "size": 3})";
  SECTION("alignment not a power of two") {
    std::string e =
        LoadError(Manifest("", R"(, "serializer_options": {"constant_tensor_alignment": 48})"));
    CHECK(e.find("serializer_options.constant_tensor_alignment = 48") != std::string::npos);
    CHECK(e.find("power of two") != std::string::npos);
    e = LoadError(Manifest("", R"(, "serializer_options": {"segment_alignment": 2147483648})"));
    CHECK(e.find("serializer_options.segment_alignment = 2147483648 exceeds the maximum of "
                 "1073741824 (1 GiB)") != std::string::npos);
    e = LoadError(Manifest("", R"(, "serializer_options": {"constant_tensor_alignment": 131072})"));
    CHECK(e.find("serializer_options.constant_tensor_alignment = 131072 exceeds the maximum of "
                 "65536 (64 KiB)") != std::string::npos);
    e = LoadError(Manifest("", R"(, "serializer_options": {"segment_alignment": 0})"));
    CHECK(e.find("serializer_options.segment_alignment = 0") != std::string::npos);
    e = LoadError(Manifest("", R"(, "serializer_options": {"delegate_alignment": "16"})"));
    CHECK(e.find("serializer_options.delegate_alignment = \"16\"") != std::string::npos);
    e = LoadError(Manifest("", R"(, "serializer_options": {"extract_delegate_segments": 1})"));
    CHECK(e.find("serializer_options.extract_delegate_segments = 1") != std::string::npos);
  }
  SECTION("named data alignment") {
    std::string e = LoadError(
        Manifest("", R"(, "named_data": {"buffers": [)" + blob +
                         R"(], "entries": [{"key": "a", "buffer_index": 0, "alignment": 48}]})"));
    CHECK(e.find("named_data.entries[0].alignment = 48") != std::string::npos);
    e = LoadError(Manifest("", R"(, "named_data": {"buffers": [)" + blob +
                                   R"(], "entries": [{"key": "a", "buffer_index": 0, )"
                                   R"("alignment": 2147483648}]})"));
    CHECK(e.find("named_data.entries[0].alignment = 2147483648 exceeds the maximum") !=
          std::string::npos);
  }
  SECTION("bad buffer_index") {
    std::string e = LoadError(
        Manifest("", R"(, "named_data": {"buffers": [)" + blob + "," + blob +
                         R"(], "entries": [{"key": "a", "buffer_index": 1, "alignment": 1},
                                  {"key": "b", "buffer_index": 2, "alignment": 1}]})"));
    CHECK(e.find("named_data.entries[1].buffer_index = 2") != std::string::npos);
    CHECK(e.find("2 buffers") != std::string::npos);
    e = LoadError(Manifest(
        "", R"(, "named_data": {"buffers": [], "entries": [{"key": "a", "buffer_index": -1}]})"));
    CHECK(e.find("named_data.entries[0].buffer_index = -1") != std::string::npos);
  }
  SECTION("duplicate named data key") {
    std::string e = LoadError(Manifest(
        "",
        R"(, "named_data": {"buffers": [)" + blob +
            R"(], "entries": [{"key": "a", "buffer_index": 0}, {"key": "a", "buffer_index": 0}]})"));
    CHECK(e.find("named_data.entries[1].key = \"a\"") != std::string::npos);
  }
  SECTION("named data buffer that is not a blob") {
    std::string e =
        LoadError(Manifest("", R"(, "named_data": {"buffers": [[1, 2]], "entries": []})"));
    CHECK(e.find("named_data.buffers[0] = [1,2]") != std::string::npos);
  }
  SECTION("mutable data storage that is not a blob") {
    std::string e = LoadError(Manifest("", R"(, "mutable_data": [{"storage": 5}])"));
    CHECK(e.find("mutable_data[0].storage = 5") != std::string::npos);
  }
  SECTION("format") {
    std::string e = LoadError(R"({"format": "ptd", "program": {}})");
    CHECK(e.find("format = \"ptd\"") != std::string::npos);
  }
  SECTION("unknown top-level member") {
    std::string e = LoadError(Manifest("", R"(, "mutable_dta": null)"));
    CHECK(e.find("\"mutable_dta\"") != std::string::npos);
    e = LoadError(Manifest("", R"(, "serializer_options": {"segment_alignmnt": 64})"));
    CHECK(e.find("serializer_options") != std::string::npos);
    CHECK(e.find("\"segment_alignmnt\"") != std::string::npos);
  }
  SECTION("program missing or not an object") {
    CHECK(LoadError(R"({"format": "pte"})").find("program") != std::string::npos);
    CHECK(LoadError(R"({"program": []})").find("program = []") != std::string::npos);
    CHECK(LoadError("[1]").find("[1]") != std::string::npos);
  }
}

TEST_CASE("ignored members and null sections", "[manifest]") {
  json::Value doc = MustParse(R"({"format": "pte", "case": "x", "description": "d",
      "effective_alignments": {"anything": 1},
      "serializer_options": {"segment_alignment": null, "constant_tensor_alignment": null,
                             "delegate_alignment": null, "extract_delegate_segments": null},
      "program": {"named_data": null, "segments": []},
      "mutable_data": null, "named_data": null})");
  Result<PteManifest> m = PteManifestFromJson(doc, "", "m.json");
  INFO(m.status().ToString());
  REQUIRE(m.ok());
  CHECK(m->options.segment_alignment == 128);
  CHECK(m->input.mutable_data.empty());
  CHECK(m->input.named_data.empty());
  CHECK(m->input.program.tree().Find("named_data")->is_null());
  CHECK(m->input.program.tree().Find("segments")->items().empty());
}

TEST_CASE("LoadPteManifest reports parse and read errors with the path", "[manifest]") {
  TempDir dir;
  const std::string bad = dir.Write("bad.json", "{\"program\": {},}");
  Result<PteManifest> m = LoadPteManifest(bad);
  REQUIRE_FALSE(m.ok());
  CHECK(m.status().message().rfind(bad + ":1:", 0) == 0);
  m = LoadPteManifest(dir.path() + "/absent.json");
  REQUIRE_FALSE(m.ok());
  CHECK(m.status().message().find(dir.path() + "/absent.json") != std::string::npos);
}

// ------------------------------------------------------------ .ptd manifests

std::string PtdLoadError(const std::string& manifest, const std::string& base_dir = "") {
  json::Value doc = MustParse(manifest);
  Result<PtdManifest> m = PtdManifestFromJson(doc, base_dir, "w.json");
  INFO(manifest);
  REQUIRE_FALSE(m.ok());
  const std::string msg = m.status().message();
  CHECK(msg.rfind("w.json: ", 0) == 0);
  return msg;
}

// A .ptd manifest with one 12-byte buffer and the given entries.
std::string PtdDoc(const std::string& entries, const std::string& extra = "") {
  return R"({"format": "ptd", "buffers": [{"base64": "AAECAwQFBgcICQoL", "size": 12}], "entries": [)" +
         entries + "]" + extra + "}";
}

TEST_CASE("golden .ptd inputs load", "[manifest]") {
  Result<PtdManifest> basic = LoadPtdManifest(GoldenDir() + "/ptd_basic.input.json");
  INFO(basic.status().ToString());
  REQUIRE(basic.ok());
  CHECK(basic->options.segment_alignment == 128);
  const PtdInput& in = basic->input;
  REQUIRE(in.buffers.size() == 3);
  CHECK(in.buffers[0]->size() == 48);
  CHECK(in.buffers[1]->size() == 6);
  CHECK(in.buffers[2]->size() == 48);
  CHECK(Bytes(in.buffers[1]) == std::vector<uint8_t>{0x00, 0x30, 0x00, 0xbc, 0x00, 0x48});
  REQUIRE(in.entries.size() == 3);
  CHECK(in.entries[0].key == "linear.weight");
  CHECK(in.entries[0].alignment == 1);
  REQUIRE(in.entries[0].layout.has_value());
  CHECK(*in.entries[0].layout == TensorLayout{6, {4, 3}, {0, 1}});
  CHECK(in.entries[1].key == "linear.bias");
  CHECK(in.entries[1].alignment == 64);
  CHECK(*in.entries[1].layout == TensorLayout{5, {3}, {0}});
  CHECK(in.entries[2].buffer_index == 2);
  CHECK(in.entries[2].alignment == 256);
  CHECK(*in.entries[2].layout == TensorLayout{15, {2, 3, 2, 2}, {0, 2, 3, 1}});

  Result<PtdManifest> shared = LoadPtdManifest(GoldenDir() + "/ptd_shared_blob.input.json");
  INFO(shared.status().ToString());
  REQUIRE(shared.ok());
  const auto& e = shared->input.entries;
  REQUIRE(e.size() == 4);
  CHECK(e[0].buffer_index == 0);
  CHECK(e[1].buffer_index == 0);
  CHECK(e[1].alignment == 512);
  CHECK(*e[1].layout == TensorLayout{6, {4}, {0}});
  CHECK_FALSE(e[2].layout.has_value());
  CHECK(*e[3].layout == TensorLayout{1, {5}, {0}});
}

TEST_CASE("LoadManifest dispatches on format", "[manifest]") {
  Result<AnyManifest> ptd = LoadManifest(GoldenDir() + "/ptd_basic.input.json");
  INFO(ptd.status().ToString());
  REQUIRE(ptd.ok());
  CHECK(std::holds_alternative<PtdManifest>(*ptd));
  Result<AnyManifest> pte = LoadManifest(GoldenDir() + "/pte_constants.input.json");
  REQUIRE(pte.ok());
  CHECK(std::holds_alternative<PteManifest>(*pte));

  TempDir dir;
  Result<AnyManifest> plain =
      LoadManifest(dir.Write("plain.json", R"({"program": {"version": 0}})"));
  REQUIRE(plain.ok());
  CHECK(std::holds_alternative<PteManifest>(*plain));
  const std::string odd = dir.Write("odd.json", R"({"format": "bpte"})");
  Result<AnyManifest> bad = LoadManifest(odd);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find(odd + ": format = \"bpte\"") == 0);

  // A .ptd manifest that forgot "format": name the missing member, not the
  // .ptd members a .pte manifest does not know.
  const std::string unmarked = dir.Write("w.json", R"({"buffers": [], "entries": []})");
  Result<AnyManifest> ptd_like = LoadManifest(unmarked);
  REQUIRE_FALSE(ptd_like.ok());
  CHECK(ptd_like.status().code() == Code::kInvalidArgument);
  CHECK(ptd_like.status().message() ==
        unmarked +
            ": has no \"format\" member; a .ptd manifest (top-level \"buffers\" and "
            "\"entries\") needs \"format\": \"ptd\"");

  // A document that is not an object at all (found by the manifest fuzzer).
  for (const char* text : {"2", "[]", "\"pte\"", "null"}) {
    const std::string path = dir.Write("scalar.json", text);
    Result<AnyManifest> r = LoadManifest(path);
    INFO(text << ": " << r.status().ToString());
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Code::kInvalidArgument);
    CHECK(r.status().message().find(path) == 0);
  }
}

TEST_CASE(".ptd manifest: options, defaults and file blobs", "[manifest]") {
  TempDir dir;
  dir.Write("w.bin", std::string(16, 'w'));
  const std::string path = dir.Write("w.json", R"({"format": "ptd",
      "serializer_options": {"segment_alignment": 4096},
      "buffers": [{"file": "w.bin", "offset": 4}],
      "entries": [{"key": "a", "buffer_index": 0,
                   "tensor_layout": {"scalar_type": "FLOAT", "sizes": [3], "dim_order": [0]}},
                  {"key": "b", "buffer_index": 0, "alignment": 64, "tensor_layout": null}]})");
  Result<PtdManifest> m = LoadPtdManifest(path);
  INFO(m.status().ToString());
  REQUIRE(m.ok());
  CHECK(m->options.segment_alignment == 4096);
  REQUIRE(m->input.buffers.size() == 1);
  CHECK(Bytes(m->input.buffers[0]) == Bytes(std::string(12, 'w')));
  CHECK(m->input.entries[0].alignment == 1);
  CHECK(*m->input.entries[0].layout == TensorLayout{6, {3}, {0}});
  CHECK(m->input.entries[1].alignment == 64);
  CHECK_FALSE(m->input.entries[1].layout.has_value());

  json::Value bare = MustParse(R"({"buffers": [], "entries": [], "serializer_options": null})");
  Result<PtdManifest> d = PtdManifestFromJson(bare, "", "m.json");
  REQUIRE(d.ok());
  CHECK(d->options.segment_alignment == 128);
  CHECK(d->input.entries.empty());
}

TEST_CASE(".ptd manifest errors name the field and value", "[manifest]") {
  const std::string layout_f32_3 =
      R"("tensor_layout": {"scalar_type": 6, "sizes": [3], "dim_order": [0]})";
  SECTION("format") {
    CHECK(PtdLoadError(R"({"format": "pte", "buffers": [], "entries": []})")
              .find("format = \"pte\"") != std::string::npos);
  }
  SECTION("unknown members") {
    CHECK(PtdLoadError(PtdDoc("", R"(, "program": {})")).find("\"program\"") != std::string::npos);
    CHECK(PtdLoadError(PtdDoc(R"({"key": "a", "buffer_index": 0, "layout": null})"))
              .find("entries[0]: unknown member \"layout\"") != std::string::npos);
    CHECK(PtdLoadError(PtdDoc("", R"(, "serializer_options": {"constant_tensor_alignment": 16})"))
              .find("\"constant_tensor_alignment\"") != std::string::npos);
  }
  SECTION("missing sections") {
    CHECK(PtdLoadError(R"({"format": "ptd", "entries": []})").find("\"buffers\"") !=
          std::string::npos);
    CHECK(PtdLoadError(R"({"format": "ptd", "buffers": []})").find("\"entries\"") !=
          std::string::npos);
  }
  SECTION("segment alignment") {
    CHECK(PtdLoadError(PtdDoc("", R"(, "serializer_options": {"segment_alignment": 96})"))
              .find("serializer_options.segment_alignment = 96") != std::string::npos);
  }
  SECTION("keys") {
    CHECK(PtdLoadError(PtdDoc(R"({"key": "", "buffer_index": 0})")).find("entries[0]: empty key") !=
          std::string::npos);
    CHECK(
        PtdLoadError(PtdDoc(R"({"key": "a", "buffer_index": 0}, {"key": "a", "buffer_index": 0})"))
            .find("entries[1].key = \"a\" repeats entries[0].key") != std::string::npos);
  }
  SECTION("buffer index and alignment") {
    CHECK(PtdLoadError(PtdDoc(R"({"key": "a", "buffer_index": 1})"))
              .find("entries[0].buffer_index = 1 is out of range (1 buffers in buffers)") !=
          std::string::npos);
    CHECK(PtdLoadError(PtdDoc(R"({"key": "a", "buffer_index": 0, "alignment": 24})"))
              .find("entries[0].alignment = 24") != std::string::npos);
  }
  SECTION("scalar type") {
    CHECK(
        PtdLoadError(
            PtdDoc(
                R"({"key": "a", "buffer_index": 0, "tensor_layout": {"scalar_type": 99, "sizes": [1], "dim_order": [0]}})"))
            .find("entries[0].tensor_layout.scalar_type = 99 is not a scalar type with a known "
                  "element size") != std::string::npos);
    CHECK(
        PtdLoadError(
            PtdDoc(
                R"({"key": "a", "buffer_index": 0, "tensor_layout": {"scalar_type": "FLOAT32", "sizes": [1], "dim_order": [0]}})"))
            .find("scalar_type = \"FLOAT32\" is not a scalar type name (names are "
                  "case-sensitive") != std::string::npos);
  }
  SECTION("sizes and dim_order") {
    CHECK(
        PtdLoadError(
            PtdDoc(
                R"({"key": "a", "buffer_index": 0, "tensor_layout": {"scalar_type": 0, "sizes": [-1], "dim_order": [0]}})"))
            .find("entries[0].tensor_layout: sizes[0] = -1 is not a size") != std::string::npos);
    // The library's rule and words for every layout (LayoutOfInts), as the
    // other importers say it: kOutOfRange.
    const std::string big =
        R"({"key": "a", "buffer_index": 0, "tensor_layout": {"scalar_type": 0, "sizes": [2147483648], "dim_order": [0]}})";
    CHECK(PtdLoadError(PtdDoc(big)) ==
          "w.json: entries[0].tensor_layout: sizes[0] = 2147483648 is not a size the format holds "
          "(0 to 2147483647)");
    CHECK(PtdManifestFromJson(MustParse(PtdDoc(big)), "", "w.json").status().code() ==
          Code::kOutOfRange);
    CHECK(
        PtdLoadError(
            PtdDoc(
                R"({"key": "a", "buffer_index": 0, "tensor_layout": {"scalar_type": 0, "sizes": [2, 2], "dim_order": [0, 0]}})"))
            .find("entries[0].tensor_layout: dim_order [0, 0] is not a permutation") !=
        std::string::npos);
    CHECK(
        PtdLoadError(
            PtdDoc(
                R"({"key": "a", "buffer_index": 0, "tensor_layout": {"scalar_type": 0, "sizes": [2, 2], "dim_order": [0]}})"))
            .find("dim_order has 1 entries for 2 dimensions") != std::string::npos);
    CHECK(
        PtdLoadError(
            PtdDoc(
                R"({"key": "a", "buffer_index": 0, "tensor_layout": {"scalar_type": 0, "sizes": [2]}})"))
            .find("entries[0].tensor_layout: has no \"dim_order\"") != std::string::npos);
  }
  SECTION("buffer smaller than the tensor") {
    // f32[4] is 16 bytes; the buffer holds 12.
    std::string e = PtdLoadError(PtdDoc(
        R"({"key": "a", "buffer_index": 0, "tensor_layout": {"scalar_type": 6, "sizes": [4], "dim_order": [0]}})"));
    CHECK(e.find("entries[0]: tensor_layout FLOAT[4] dim_order [0] needs 16 bytes but buffers[0] "
                 "holds 12") != std::string::npos);
    // Exactly enough is fine.
    json::Value ok = MustParse(PtdDoc(R"({"key": "a", "buffer_index": 0, )" + layout_f32_3 + "}"));
    CHECK(PtdManifestFromJson(ok, "", "w.json").ok());
  }
}

}  // namespace
}  // namespace etpack
