// End-to-end tests of `etpack repack`: alignment options, the options a file
// keeps, --external-constants (sharded too) and --dedup.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>
#include "catch.h"

#include "cli_test_util.h"
#include "etpack/json.h"

namespace fs = std::filesystem;

using namespace etpack::testing::cli;

TEST_CASE("repack of a golden file verifies") {
  TempDir dir;
  const std::string out = dir / "repacked.pte";
  Run run = Etpack({"repack", Golden("pte_constants.pte"), "-o", out, "--segment-alignment", "4096",
                    "--constant-alignment", "64"});
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  Run verify = Etpack({"verify", out});
  INFO(verify.output);
  CHECK(verify.exit_code == 0);

  Run js = Etpack({"inspect", "--json", out});
  REQUIRE(js.exit_code == 0);
  auto doc = etpack::json::Parse(js.output, "inspect --json");
  REQUIRE(doc.ok());
  const auto& header = *doc->Find("extended_header");
  CHECK(header.Find("segment_base_offset")->as_uint() % 4096 == 0);
  for (const auto& seg : doc->Find("segments")->items()) {
    CHECK(seg.Find("alignment")->as_uint() >= 4096);
  }
}

TEST_CASE("repack --external-constants writes a program and its data") {
  TempDir dir;
  const std::string pte = dir / "model.pte";
  const std::string ptd = dir / "model.ptd";
  Run run = Etpack({"repack", Golden("pte_constants.pte"), "-o", pte, "--external-constants", ptd});
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(Contains(run.output, "wrote " + pte));
  CHECK(Contains(run.output, "wrote " + ptd));

  Run v1 = Etpack({"verify", pte});
  INFO(v1.output);
  CHECK(v1.exit_code == 0);
  Run v2 = Etpack({"verify", ptd});
  INFO(v2.output);
  CHECK(v2.exit_code == 0);
  CHECK(Contains(v2.output, "6 entries"));
  Run v3 = Etpack({"verify", pte, "--data", ptd});
  INFO(v3.output);
  CHECK(v3.exit_code == 0);
  CHECK(Contains(v3.output, "6 external tensors resolve"));

  const etpack::json::Value doc = InspectJson(pte);
  CHECK(doc.Find("constants")->Find("tensors")->as_uint() == 0);
  CHECK(doc.Find("external_tensors")->items().size() == 6);
  // The only files in the folder are the two outputs: no staging leftovers.
  auto names = Listing(dir.path());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"model.ptd", "model.pte"});

  SECTION("a failure leaves neither file behind") {
    TempDir out;
    Run bad = Etpack({"repack", Golden("pte_constants.pte"), "-o", out / "missing/model.pte",
                      "--external-constants", out / "model.ptd"});
    INFO(bad.output);
    CHECK(bad.exit_code == 1);
    CHECK(Contains(bad.output, "etpack: "));
    CHECK(Listing(out.path()).empty());
  }
}

TEST_CASE("repack without flags keeps the file's options and is a fixed point") {
  // Each golden was written by the reference serializer with the options in
  // its input's "effective_alignments": repack reports the same ones and
  // writes what pack writes from that input. pte_delegates_inline was
  // written with delegate_alignment 32, which the file does not record
  // (its payload's offset is a multiple of 32 but could be by chance), so
  // the default 16 holds.
  TempDir dir;
  for (const std::string& name : etpack::testing::GoldenPrograms()) {
    INFO(name);
    const std::string base = name;
    const std::string golden = Golden(base + ".pte");
    const std::string manifest = dir / (base + ".json");
    WriteEditedManifest(base + ".input.json", manifest, [](etpack::json::Value& d) {
      d.Find("serializer_options")->Set("delegate_alignment", etpack::json::Value());
    });
    auto input = etpack::json::Parse(ReadAll(manifest), manifest);
    REQUIRE(input.ok());
    const auto& effective = *input->Find("effective_alignments");
    const std::string packed = dir / (base + ".packed.pte");
    REQUIRE(Etpack({"pack", manifest, "-o", packed}).exit_code == 0);

    const std::string once = dir / (base + ".1.pte");
    const std::string twice = dir / (base + ".2.pte");
    Run first = Etpack({"repack", golden, "-o", once});
    INFO(first.output);
    REQUIRE(first.exit_code == 0);
    CHECK(Contains(first.output,
                   "segment alignment " +
                       std::to_string(effective.Find("segment_alignment")->as_uint()) +
                       ", constant alignment " +
                       std::to_string(effective.Find("constant_tensor_alignment")->as_uint())));
    CHECK(ReadAll(once) == ReadAll(packed));
    Run second = Etpack({"repack", once, "-o", twice});
    INFO(second.output);
    REQUIRE(second.exit_code == 0);
    CHECK(ReadAll(once) == ReadAll(twice));
  }
}

TEST_CASE("pack and repack --dedup store identical constants once; inspect reports it") {
  TempDir dir;
  // pte_constants with a seventh constant repeating the first (f32[2,3],
  // 24 bytes), read by a new tensor value.
  auto doc = etpack::json::ParseFile(Golden("pte_constants.input.json"));
  REQUIRE(doc.ok());
  etpack::json::Value& program = *doc->Find("program");
  auto& buffers = program.Find("constant_buffer")->items();
  buffers.push_back(buffers[1]);
  auto& values = program.Find("execution_plan")->items()[0].Find("values")->items();
  etpack::json::Value copy = values[1];
  copy.Find("val")->Set("data_buffer_idx", etpack::json::Value::UInt(buffers.size() - 1));
  values.push_back(copy);
  const std::string manifest = dir / "m.json";
  std::ofstream(manifest) << etpack::json::Print(*doc);

  const std::string plain = dir / "plain.pte", shared = dir / "shared.pte";
  Run a = Etpack({"pack", manifest, "-o", plain});
  INFO(a.output);
  REQUIRE(a.exit_code == 0);
  Run b = Etpack({"pack", manifest, "-o", shared, "--dedup"});
  INFO(b.output);
  REQUIRE(b.exit_code == 0);
  CHECK(Contains(b.output, "identical constants stored once"));
  CHECK(fs::file_size(plain) == fs::file_size(shared) + 32);  // 24 bytes padded to 16

  Run v = Etpack({"verify", shared});
  INFO(v.output);
  CHECK(v.exit_code == 0);
  Run text = Etpack({"inspect", shared});
  CHECK(Contains(text.output,
                 "dedup:               1 entry in bytes another entry holds, "
                 "24 bytes saved"));
  CHECK(Contains(Etpack({"inspect", plain}).output, "no entry shares another's bytes"));

  // repack keeps what the input does, and --dedup adds it.
  const std::string again = dir / "again.pte", deduped = dir / "deduped.pte";
  REQUIRE(Etpack({"repack", shared, "-o", again}).exit_code == 0);
  CHECK(fs::file_size(again) == fs::file_size(shared));
  REQUIRE(Etpack({"repack", plain, "-o", deduped, "--dedup"}).exit_code == 0);
  CHECK(fs::file_size(deduped) == fs::file_size(shared));
}

TEST_CASE("repack --external-constants --max-shard-bytes: program and shards as one unit") {
  TempDir dir;
  const std::string pte = dir / "model.pte";
  Run run = Etpack({"repack", Golden("pte_constants.pte"), "-o", pte, "--external-constants",
                    dir / "model.ptd", "--max-shard-bytes", "512"});
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const std::vector<std::string> shards = Shards(dir, "model");
  REQUIRE(shards.size() > 1);
  for (const std::string& s : shards) CHECK(fs::file_size(s) <= 512);

  std::vector<std::string> verify = {"verify", pte};
  verify.insert(verify.end(), shards.begin(), shards.end());
  Run v = Etpack(verify);
  INFO(v.output);
  CHECK(v.exit_code == 0);
  CHECK(Contains(v.output, "6 external tensors resolve"));
  // --data takes them too; without one shard a key resolves nowhere.
  Run missing = Etpack({"verify", pte, "--data", shards[0]});
  INFO(missing.output);
  CHECK(missing.exit_code == 1);
  CHECK(Contains(missing.output, "is not in"));

  SECTION("a failure leaves no file behind") {
    TempDir out;
    Run bad = Etpack({"repack", Golden("pte_constants.pte"), "-o", out / "missing/model.pte",
                      "--external-constants", out / "model.ptd", "--max-shard-bytes", "512"});
    CHECK(bad.exit_code == 1);
    CHECK(Listing(out.path()).empty());
  }
  SECTION("the cap without --external-constants is a usage error") {
    CHECK(Etpack({"repack", Golden("pte_constants.pte"), "-o", dir / "x.pte", "--max-shard-bytes",
                  "512"})
              .exit_code == 2);
  }
}

TEST_CASE("repack --data: the way back of --external-constants is repack's file") {
  // Every golden program: split, then brought back, is what repack writes
  // (byte for byte), and verifies. A thin program without bytes of its own
  // records no alignment (pte_constants_align64 used 64 and 4096): the way
  // back is told.
  TempDir dir;
  for (const char* name : {"pte_all_kinds", "pte_constants", "pte_constants_align64",
                           "pte_delegates", "pte_delegates_inline", "pte_fat", "pte_multi_method",
                           "pte_mutable", "pte_named_data", "pte_no_segments"}) {
    INFO(name);
    const std::string base = dir / name;
    const std::string golden = Golden(std::string(name) + ".pte");
    REQUIRE(Etpack({"repack", golden, "-o", base + ".re.pte"}).exit_code == 0);
    REQUIRE(
        Etpack({"repack", golden, "-o", base + ".thin.pte", "--external-constants", base + ".ptd"})
            .exit_code == 0);
    std::vector<std::string> back = {"repack", base + ".thin.pte", "--data", base + ".ptd",
                                     "-o",     base + ".back.pte"};
    if (std::string(name) == "pte_constants_align64") {
      back.insert(back.end(), {"--constant-alignment", "64", "--segment-alignment", "4096"});
    }
    Run run = Etpack(back);
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    CHECK(Contains(run.output, "wrote " + base + ".back.pte"));
    CHECK(ReadAll(base + ".back.pte") == ReadAll(base + ".re.pte"));
    Run verify = Etpack({"verify", base + ".back.pte"});
    INFO(verify.output);
    CHECK(verify.exit_code == 0);
    CHECK_FALSE(Contains(verify.output, "external tensors"));
  }
}

TEST_CASE("repack --data: a program's own .ptd, shards, and what is refused") {
  TempDir dir;
  SECTION("pte_external with ptd_basic: self-contained, names kept") {
    const std::string out = dir / "full.pte";
    Run run = Etpack(
        {"repack", Golden("pte_external.pte"), "--data", Golden("ptd_basic.ptd"), "-o", out});
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    const etpack::json::Value doc = InspectJson(out);
    CHECK(doc.Find("external_tensors")->items().empty());
    Run verify = Etpack({"verify", out});
    INFO(verify.output);
    CHECK(verify.exit_code == 0);
  }
  SECTION("the shards of --max-shard-bytes, given together") {
    const std::string thin = dir / "thin.pte";
    REQUIRE(Etpack({"repack", Golden("pte_constants.pte"), "-o", thin, "--external-constants",
                    dir / "w.ptd", "--max-shard-bytes", "400"})
                .exit_code == 0);
    const std::vector<std::string> shards = Shards(dir, "w");
    REQUIRE(shards.size() > 1);
    std::vector<std::string> args = {"repack", thin, "-o", dir / "back.pte"};
    for (const std::string& s : shards) args.insert(args.end(), {"--data", s});
    Run run = Etpack(args);
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    REQUIRE(Etpack({"repack", Golden("pte_constants.pte"), "-o", dir / "re.pte"}).exit_code == 0);
    CHECK(ReadAll(dir / "back.pte") == ReadAll(dir / "re.pte"));
    SECTION("one shard missing: the key, the program and the tensor are named") {
      args = {"repack", thin, "-o", dir / "x.pte", "--data", shards[0]};
      Run bad = Etpack(args);
      INFO(bad.output);
      CHECK(bad.exit_code == 1);
      CHECK(Contains(bad.output, "etpack: " + thin + ": execution_plan[0].values["));
      CHECK(Contains(bad.output, "EXTERNAL key 'constant.forward."));
      CHECK(Contains(bad.output, "' is not in " + shards[0]));
      CHECK_FALSE(fs::exists(dir / "x.pte"));
    }
  }
  SECTION("with --external-constants: a usage error saying why") {
    Run run = Etpack({"repack", Golden("pte_external.pte"), "--data", Golden("ptd_basic.ptd"),
                      "--external-constants", dir / "w.ptd", "-o", dir / "x.pte"});
    INFO(run.output);
    CHECK(run.exit_code == 2);
    CHECK(Contains(run.output,
                   "--data brings a program's data back inside and "
                   "--external-constants moves its constants out"));
    CHECK(Listing(dir.path()).empty());
  }
  SECTION("a program without EXTERNAL tensors: repacked, with a note") {
    Run run = Etpack({"repack", Golden("pte_constants.pte"), "--data", Golden("ptd_basic.ptd"),
                      "-o", dir / "x.pte"});
    INFO(run.output);
    CHECK(run.exit_code == 0);
    CHECK(Contains(run.output, "note: " + Golden("pte_constants.pte") +
                                   " has no EXTERNAL tensors and the data files hold no named "
                                   "data: nothing of them is used"));
    REQUIRE(Etpack({"repack", Golden("pte_constants.pte"), "-o", dir / "re.pte"}).exit_code == 0);
    CHECK(ReadAll(dir / "x.pte") == ReadAll(dir / "re.pte"));
  }
}

// The keys of `pte`'s named data, in order.
std::vector<std::string> NamedDataKeys(const std::string& pte) {
  std::vector<std::string> keys;
  const etpack::json::Value doc = InspectJson(pte);
  for (const auto& n : doc.Find("named_data")->items()) {
    keys.push_back(n.Find("key")->as_string());
  }
  return keys;
}

TEST_CASE("the way back of pack --external-named-data restores the order of named data") {
  TempDir dir;
  for (const char* name : {"z", "a", "m"}) {
    etpack::testing::WriteFile(dir / (std::string(name) + ".bin"),
                               etpack::testing::PatternBytes(5000, name[0]));
  }
  WriteFileText(dir / "m.json", R"({"format": "pte", "program": {"version": 0,
      "execution_plan": [{"name": "forward", "values": [], "inputs": [], "outputs": [],
        "delegates": [], "chains": [{"inputs": [], "outputs": [], "instructions": []}],
        "operators": [], "non_const_buffer_sizes": [0]}]},
      "named_data": {"buffers": [{"file": "z.bin"}, {"file": "a.bin"}, {"file": "m.bin"}],
        "entries": [{"key": "zeta", "buffer_index": 0}, {"key": "alpha", "buffer_index": 1},
                    {"key": "mid", "buffer_index": 2}]}})");
  const std::vector<std::string> order = {"zeta", "alpha", "mid"};
  // Shards named by hash: given in the order of their names, not their keys.
  Run pack = Etpack({"pack", dir / "m.json", "-o", dir / "s.pte", "--external-named-data",
                     dir / "s.ptd", "--max-shard-bytes", "6000"});
  INFO(pack.output);
  REQUIRE(pack.exit_code == 0);
  std::vector<std::string> back = {"repack", dir / "s.pte", "-o", dir / "back.pte"};
  std::vector<std::string> shards;
  for (const auto& e : fs::directory_iterator(dir.path())) {
    const std::string name = e.path().filename().string();
    if (name.rfind("s-", 0) == 0) shards.push_back(e.path().string());
  }
  REQUIRE(shards.size() == 3);
  std::sort(shards.begin(), shards.end());
  for (const std::string& s : shards) back.insert(back.end(), {"--data", s});
  Run run = Etpack(back);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(NamedDataKeys(dir / "back.pte") == order);
}
