#include "etpack/bundle_cases.h"

#include "catch.h"

#include "test_files.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "etpack/source.h"

namespace etpack {
namespace {

using testing::Npy;
using testing::TempDir;
using testing::WriteFile;

namespace fs = std::filesystem;
using catch_text::Contains;

std::vector<uint8_t> Iota(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 3);
  return v;
}

std::vector<uint8_t> Bytes(const SourcePtr& s) {
  REQUIRE(s != nullptr);
  auto r = ReadAll(*s);
  REQUIRE(r.ok());
  return *r;
}

TEST_CASE("bundle cases: every value kind, two methods in file order") {
  TempDir dir;
  fs::create_directory(dir.File("data"));
  const auto npy_data = Iota(24, 1);
  WriteFile(dir.File("x.npy"),
            Npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", npy_data));
  const auto raw = Iota(64, 100);
  WriteFile(dir.File("data/raw.bin"), raw);
  WriteFile(dir.File("whole.bin"), Iota(8, 50));
  WriteFile(dir.File("cases.json"), R"({
    "methods": {
      "zeta": [
        {"inputs": [{"tensor": {"npy": "x.npy"}},
                    {"tensor": {"dtype": "INT", "sizes": [2, 3], "dim_order": [1, 0],
                                "file": "data/raw.bin", "offset": 16, "length": 24}},
                    {"int": -7}, {"bool": true}, {"double": 0.5}],
         "expected_outputs": [{"tensor": {"dtype": 6, "sizes": [2], "base64": "AACAPwAAAEA="}},
                              {"double": "inf"}, {"double": "-inf"}, {"double": "nan"},
                              {"double": 3}, {"int": 9223372036854775807}]},
        {"inputs": [{"bool": false}]}
      ],
      "alpha": [
        {"inputs": [{"tensor": {"dtype": "BOOL", "sizes": [], "base64": "AQ=="}},
                    {"tensor": {"dtype": "LONG", "sizes": [1], "file": "whole.bin"}},
                    {"tensor": {"dtype": "BFLOAT16", "sizes": [0, 4], "base64": ""}}],
         "expected_outputs": []}
      ]
    }
  })");

  Result<std::vector<BundledTestSuite>> r = LoadBundleCases(dir.File("cases.json"));
  REQUIRE(r.ok());
  const auto& suites = *r;
  REQUIRE(suites.size() == 2);
  CHECK(suites[0].method_name == "zeta");
  CHECK(suites[1].method_name == "alpha");

  REQUIRE(suites[0].test_cases.size() == 2);
  const BundledTestCase& c0 = suites[0].test_cases[0];
  REQUIRE(c0.inputs.size() == 5);
  using K = BundledValue::Kind;

  CHECK(c0.inputs[0].kind == K::kTensor);
  CHECK(c0.inputs[0].layout.scalar_type == 6);
  CHECK(c0.inputs[0].layout.sizes == std::vector<int32_t>{2, 3});
  CHECK(c0.inputs[0].layout.dim_order == std::vector<uint8_t>{1, 0});  // Fortran order
  CHECK(Bytes(c0.inputs[0].data) == npy_data);

  CHECK(c0.inputs[1].kind == K::kTensor);
  CHECK(c0.inputs[1].layout.scalar_type == 3);
  CHECK(c0.inputs[1].layout.dim_order == std::vector<uint8_t>{1, 0});
  CHECK(Bytes(c0.inputs[1].data) == std::vector<uint8_t>(raw.begin() + 16, raw.begin() + 40));

  CHECK(c0.inputs[2].kind == K::kInt);
  CHECK(c0.inputs[2].int_val == -7);
  CHECK(c0.inputs[3].kind == K::kBool);
  CHECK(c0.inputs[3].bool_val);
  CHECK(c0.inputs[4].kind == K::kDouble);
  CHECK(c0.inputs[4].double_val == 0.5);

  REQUIRE(c0.expected_outputs.size() == 6);
  CHECK(c0.expected_outputs[0].kind == K::kTensor);
  CHECK(c0.expected_outputs[0].layout.scalar_type == 6);
  CHECK(c0.expected_outputs[0].layout.dim_order == std::vector<uint8_t>{0});
  CHECK(Bytes(c0.expected_outputs[0].data) ==
        std::vector<uint8_t>{0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x00, 0x40});
  CHECK(c0.expected_outputs[1].double_val == std::numeric_limits<double>::infinity());
  CHECK(c0.expected_outputs[2].double_val == -std::numeric_limits<double>::infinity());
  CHECK(std::isnan(c0.expected_outputs[3].double_val));
  CHECK(c0.expected_outputs[4].kind == K::kDouble);
  CHECK(c0.expected_outputs[4].double_val == 3.0);
  CHECK(c0.expected_outputs[5].int_val == INT64_MAX);

  const BundledTestCase& c1 = suites[0].test_cases[1];
  REQUIRE(c1.inputs.size() == 1);
  CHECK(c1.inputs[0].kind == K::kBool);
  CHECK_FALSE(c1.inputs[0].bool_val);
  CHECK(c1.expected_outputs.empty());

  REQUIRE(suites[1].test_cases.size() == 1);
  const BundledTestCase& a0 = suites[1].test_cases[0];
  REQUIRE(a0.inputs.size() == 3);
  CHECK(a0.inputs[0].layout.scalar_type == 11);
  CHECK(a0.inputs[0].layout.sizes.empty());
  CHECK(Bytes(a0.inputs[0].data) == std::vector<uint8_t>{1});
  CHECK(a0.inputs[1].layout.scalar_type == 4);
  CHECK(Bytes(a0.inputs[1].data) == Iota(8, 50));
  CHECK(a0.inputs[2].layout.scalar_type == 15);
  CHECK(a0.inputs[2].data->size() == 0);
  CHECK(a0.expected_outputs.empty());
}

// Loads `json` (with x.npy, short.npy and raw.bin, 64 bytes, beside it) and
// returns the error; every error must name the CASES.json file.
std::string ErrorOf(const std::string& json, Code code = Code::kInvalidArgument) {
  TempDir dir;
  WriteFile(dir.File("x.npy"),
            Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", Iota(24, 0)));
  WriteFile(dir.File("short.npy"),
            Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", Iota(20, 0)));
  WriteFile(dir.File("raw.bin"), Iota(64, 0));
  const std::string path = dir.File("cases.json");
  WriteFile(path, json);
  Result<std::vector<BundledTestSuite>> r = LoadBundleCases(path);
  REQUIRE_FALSE(r.ok());
  const std::string m = r.status().message();
  INFO(m);
  CHECK(r.status().code() == code);
  CHECK_THAT(m, Contains(path));
  return m;
}

// Test case 1 of "forward" holds the value under test, case 0 is fine.
std::string ForwardInput(const std::string& value) {
  return R"({"methods": {"forward": [{"inputs": [{"int": 1}]}, {"inputs": [)" + value + "]}]}}";
}

TEST_CASE("bundle cases: missing .npy names the JSON path and the file") {
  const std::string m =
      ErrorOf(ForwardInput(R"({"tensor": {"npy": "gone.npy"}})"), Code::kNotFound);
  CHECK_THAT(m, Contains("methods.forward[1].inputs[0].tensor.npy"));
  CHECK_THAT(m, Contains("gone.npy"));
}

TEST_CASE("bundle cases: .npy errors carry the JSON path") {
  const std::string m =
      ErrorOf(ForwardInput(R"({"tensor": {"npy": "short.npy"}})"), Code::kCorrupt);
  CHECK_THAT(m, Contains("methods.forward[1].inputs[0].tensor.npy"));
  CHECK_THAT(m, Contains("truncated"));
  const std::string extra =
      ErrorOf(ForwardInput(R"({"tensor": {"npy": "x.npy", "dtype": "FLOAT"}})"));
  CHECK_THAT(extra, Contains("methods.forward[1].inputs[0].tensor: unknown member \"dtype\""));
}

TEST_CASE("bundle cases: data size mismatches give both byte counts") {
  std::string m = ErrorOf(ForwardInput(
      R"({"tensor": {"dtype": "FLOAT", "sizes": [2, 3], "file": "raw.bin", "length": 20}})"));
  CHECK_THAT(m, Contains("methods.forward[1].inputs[0].tensor"));
  CHECK_THAT(m, Contains("FLOAT[2, 3] dim_order [0, 1] needs 24 bytes"));
  CHECK_THAT(m, Contains("\"raw.bin\" has 20 bytes from offset 0"));

  // Default length: the rest of the file (64 bytes), more than needed.
  m = ErrorOf(
      ForwardInput(R"({"tensor": {"dtype": "FLOAT", "sizes": [2, 3], "file": "raw.bin"}})"));
  CHECK_THAT(m, Contains("has 64 bytes"));
  CHECK_THAT(m, Contains("\"length\""));

  m = ErrorOf(
      ForwardInput(R"({"tensor": {"dtype": "FLOAT", "sizes": [3], "base64": "AACAPwAAAEA="}})"));
  CHECK_THAT(m, Contains("methods.forward[1].inputs[0].tensor"));
  CHECK_THAT(m, Contains("FLOAT[3] dim_order [0] needs 12 bytes, but base64 decodes to 8 bytes"));

  // A range past the end of the file is the file layer's error, with the path.
  m = ErrorOf(
      ForwardInput(
          R"({"tensor": {"dtype": "FLOAT", "sizes": [2, 3], "file": "raw.bin", "offset": 60, "length": 24}})"),
      Code::kOutOfRange);
  CHECK_THAT(m, Contains("methods.forward[1].inputs[0].tensor.file"));
  CHECK_THAT(m, Contains("past the end"));
}

TEST_CASE("bundle cases: a length of 2^64 - 1 is a length, not the rest of the file") {
  const std::string m = ErrorOf(
      ForwardInput(
          R"({"tensor": {"dtype": "FLOAT", "sizes": [2, 3], "file": "raw.bin", "length": 18446744073709551615}})"),
      Code::kOutOfRange);
  CHECK_THAT(m, Contains("methods.forward[1].inputs[0].tensor.file"));
  CHECK_THAT(m, Contains("length = 18446744073709551615"));
  const std::string nul = ErrorOf(ForwardInput(
      R"({"tensor": {"dtype": "FLOAT", "sizes": [2, 3], "file": "raw.bin\u0000x", "length": 24}})"));
  CHECK_THAT(nul, Contains("NUL"));
}

TEST_CASE("bundle cases: bad dtype, sizes and dim_order") {
  std::string m = ErrorOf(
      ForwardInput(R"({"tensor": {"dtype": "float", "sizes": [1], "base64": "AAAAAA=="}})"));
  CHECK_THAT(m, Contains("methods.forward[1].inputs[0].tensor.dtype = \"float\""));
  CHECK_THAT(m, Contains("case-sensitive"));
  m = ErrorOf(ForwardInput(R"({"tensor": {"dtype": 8, "sizes": [1], "base64": "AAAAAA=="}})"));
  CHECK_THAT(m, Contains("tensor.dtype = 8"));
  // Sizes and dim_order are held to the library's rule for every layout
  // (LayoutOfInts, LayoutNbytes), in its words and with its codes.
  m = ErrorOf(ForwardInput(R"({"tensor": {"dtype": "FLOAT", "sizes": [1, -2], "base64": ""}})"),
              Code::kOutOfRange);
  CHECK_THAT(m, Contains("tensor: sizes[1] = -2 is not a size the format holds"));
  m = ErrorOf(
      ForwardInput(R"({"tensor": {"dtype": "FLOAT", "sizes": [2147483648], "base64": ""}})"),
      Code::kOutOfRange);
  CHECK_THAT(m, Contains("methods.forward[1].inputs[0].tensor: sizes[0] = 2147483648 is not a "
                         "size the format holds (0 to 2147483647)"));
  m = ErrorOf(ForwardInput(
      R"({"tensor": {"dtype": "FLOAT", "sizes": [1, 1], "dim_order": [0, 0], "base64": "AAAAAA=="}})"));
  CHECK_THAT(m, Contains("tensor: dim_order [0, 0] is not a permutation of 0..1"));
  m = ErrorOf(ForwardInput(
      R"({"tensor": {"dtype": "FLOAT", "sizes": [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1], "base64": ""}})"));
  CHECK_THAT(m, Contains("tensor: rank 17 exceeds the runtime's limit of 16 dimensions"));
  m = ErrorOf(ForwardInput(R"({"tensor": {"sizes": [1], "base64": "AAAAAA=="}})"));
  CHECK_THAT(m, Contains("methods.forward[1].inputs[0].tensor: tensor has no \"dtype\""));
}

TEST_CASE("bundle cases: malformed values and structure") {
  std::string m = ErrorOf(R"({"methods": {"forward": [{"inputs": [{"int": 1}],
                                           "expected_outputs": [{"float": 1.5}]}]}})");
  CHECK_THAT(m, Contains("methods.forward[0].expected_outputs[0]: unknown value kind \"float\""));
  m = ErrorOf(ForwardInput(R"({"int": 1, "bool": true})"));
  CHECK_THAT(m, Contains("methods.forward[1].inputs[0] = "));
  CHECK_THAT(m, Contains("exactly one of"));
  m = ErrorOf(ForwardInput(R"({"int": 1.5})"));
  CHECK_THAT(m, Contains("methods.forward[1].inputs[0].int = 1.5"));
  m = ErrorOf(ForwardInput(R"({"int": 9223372036854775808})"));
  CHECK_THAT(m, Contains("methods.forward[1].inputs[0].int = 9223372036854775808"));
  m = ErrorOf(ForwardInput(R"({"bool": 1})"));
  CHECK_THAT(m, Contains("methods.forward[1].inputs[0].bool = 1"));
  m = ErrorOf(ForwardInput(R"({"double": "infinity"})"));
  CHECK_THAT(m, Contains("methods.forward[1].inputs[0].double = \"infinity\""));
  m = ErrorOf(ForwardInput(
      R"({"tensor": {"dtype": "FLOAT", "sizes": [0], "base64": "", "file": "raw.bin"}})"));
  CHECK_THAT(m, Contains("exactly one of"));
  m = ErrorOf(ForwardInput(R"({"tensor": {"dtype": "FLOAT", "sizes": [1], "base64": "AAA*"}})"));
  CHECK_THAT(m, Contains("tensor.base64 = \"AAA*\" is not base64"));
  m = ErrorOf(R"({"methods": {"forward": [{"input": []}]}})");
  CHECK_THAT(m, Contains("methods.forward[0]: unknown member \"input\""));
  m = ErrorOf(R"({"methods": {"forward": [{}]}})");
  CHECK_THAT(m, Contains("methods.forward[0]: test case has no \"inputs\""));
  m = ErrorOf(R"({"methods": {"forward": {"inputs": []}}})");
  CHECK_THAT(m, Contains("methods.forward = "));
  m = ErrorOf(R"({"methods": {}})");
  CHECK_THAT(m, Contains("no methods"));
  m = ErrorOf(R"({"method": {}})");
  CHECK_THAT(m, Contains("unknown member \"method\""));
  m = ErrorOf(R"([])");
  CHECK_THAT(m, Contains("not a JSON object"));
}

TEST_CASE("bundle cases: unreadable CASES.json names the file") {
  TempDir dir;
  Result<std::vector<BundledTestSuite>> r = LoadBundleCases(dir.File("none.json"));
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Contains("none.json"));
  WriteFile(dir.File("bad.json"), "{\"methods\": ");
  r = LoadBundleCases(dir.File("bad.json"));
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Contains("bad.json"));
}

}  // namespace
}  // namespace etpack
