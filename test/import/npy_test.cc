#include "etpack/npy.h"

#include "catch.h"

#include "test_files.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "etpack/source.h"

namespace etpack {
namespace {

using testing::TempDir;
using testing::WriteFile;

namespace fs = std::filesystem;

// A .npy file as numpy.save lays it out: the header padded with spaces and
// a newline so the data starts at a multiple of 64.
std::vector<uint8_t> NpyBytes(int major, const std::string& dict,
                              const std::vector<uint8_t>& data) {
  const size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), 0};
  const uint32_t n = static_cast<uint32_t>(header.size());
  out.push_back(static_cast<uint8_t>(n));
  out.push_back(static_cast<uint8_t>(n >> 8));
  if (major != 1) {
    out.push_back(static_cast<uint8_t>(n >> 16));
    out.push_back(static_cast<uint8_t>(n >> 24));
  }
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::string Dict(const std::string& descr, bool fortran, const std::string& shape) {
  return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
         ", 'shape': " + shape + ", }";
}

std::vector<uint8_t> Iota(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 7 + 1);
  return v;
}

std::vector<uint8_t> Bytes(const Source& s) {
  auto r = ReadAll(s);
  REQUIRE(r.ok());
  return *r;
}

// Writes and reads a file expected to fail; returns the message.
std::string ErrorOf(const TempDir& dir, const std::string& name,
                    const std::vector<uint8_t>& bytes) {
  const std::string path = dir.File(name);
  WriteFile(path, bytes);
  Result<NpyArray> r = ReadNpy(path);
  REQUIRE_FALSE(r.ok());
  const std::string& m = r.status().message();
  CHECK(m.find(path) != std::string::npos);
  return m;
}

using catch_text::Contains;

TEST_CASE("npy: v1.0 float32 (2, 3) in C order") {
  TempDir dir;
  const auto data = Iota(24);
  const std::string path = dir.File("a.npy");
  const auto file = NpyBytes(1, Dict("<f4", false, "(2, 3)"), data);
  WriteFile(path, file);
  Result<NpyArray> r = ReadNpy(path);
  REQUIRE(r.ok());
  CHECK(r->descr == "<f4");
  CHECK(r->layout.scalar_type == 6);
  CHECK(r->layout.sizes == std::vector<int32_t>{2, 3});
  CHECK(r->layout.dim_order == std::vector<uint8_t>{0, 1});
  REQUIRE(r->data->size() == 24);
  CHECK(Bytes(*r->data) == data);
  // A file range, so the writer can copy it in the kernel.
  REQUIRE(r->data->file_range() != nullptr);
  CHECK(r->data->file_range()->offset == file.size() - 24);
}

TEST_CASE("npy: v2.0 and v3.0 headers") {
  TempDir dir;
  for (int major : {2, 3}) {
    const auto data = Iota(40);
    const std::string path = dir.File("v" + std::to_string(major) + ".npy");
    WriteFile(path, NpyBytes(major, Dict("<i8", false, "(5,)"), data));
    Result<NpyArray> r = ReadNpy(path);
    REQUIRE(r.ok());
    CHECK(r->layout.scalar_type == 4);
    CHECK(r->layout.sizes == std::vector<int32_t>{5});
    CHECK(r->layout.dim_order == std::vector<uint8_t>{0});
    CHECK(Bytes(*r->data) == data);
  }
}

TEST_CASE("npy: every supported dtype") {
  struct Case {
    const char* descr;
    int scalar_type;
    size_t itemsize;
  };
  const Case cases[] = {
      {"<f2", 5, 2},  {"<f4", 6, 4},  {"<f8", 7, 8},  {"|i1", 1, 1},  {"<i1", 1, 1},
      {"<i2", 2, 2},  {"<i4", 3, 4},  {"<i8", 4, 8},  {"|u1", 0, 1},  {"<u1", 0, 1},
      {"<u2", 27, 2}, {"<u4", 28, 4}, {"<u8", 29, 8}, {"|b1", 11, 1},
  };
  TempDir dir;
  for (const Case& c : cases) {
    INFO(c.descr);
    CHECK(ScalarTypeForNpyDescr(c.descr) == c.scalar_type);
    const auto data = Iota(3 * c.itemsize);
    const std::string path = dir.File("t.npy");
    WriteFile(path, NpyBytes(1, Dict(c.descr, false, "(3,)"), data));
    Result<NpyArray> r = ReadNpy(path);
    REQUIRE(r.ok());
    CHECK(r->layout.scalar_type == c.scalar_type);
    CHECK(r->descr == c.descr);
    CHECK(Bytes(*r->data) == data);
  }
  CHECK(ScalarTypeForNpyDescr(">f4") == -1);
  CHECK(ScalarTypeForNpyDescr("|f4") == -1);
  CHECK(ScalarTypeForNpyDescr(">i1") == 1);  // byte order is moot for one byte
  CHECK(ScalarTypeForNpyDescr("<c8") == -1);
  CHECK(ScalarTypeForNpyDescr("|O") == -1);
  CHECK(ScalarTypeForNpyDescr("<f16") == -1);
  CHECK(ScalarTypeForNpyDescr("") == -1);
}

TEST_CASE("npy: scalar () and empty (0,) shapes") {
  TempDir dir;
  const std::string scalar = dir.File("scalar.npy");
  WriteFile(scalar, NpyBytes(1, Dict("<f8", false, "()"), Iota(8)));
  Result<NpyArray> r = ReadNpy(scalar);
  REQUIRE(r.ok());
  CHECK(r->layout.sizes.empty());
  CHECK(r->layout.dim_order.empty());
  CHECK(Bytes(*r->data) == Iota(8));

  const std::string empty = dir.File("empty.npy");
  WriteFile(empty, NpyBytes(1, Dict("|u1", false, "(0,)"), {}));
  r = ReadNpy(empty);
  REQUIRE(r.ok());
  CHECK(r->layout.sizes == std::vector<int32_t>{0});
  CHECK(r->data->size() == 0);

  const std::string empty2 = dir.File("empty2.npy");
  WriteFile(empty2, NpyBytes(1, Dict("<f4", false, "(3, 0, 2)"), {}));
  r = ReadNpy(empty2);
  REQUIRE(r.ok());
  CHECK(r->data->size() == 0);
}

TEST_CASE("npy: Fortran order reverses dim_order, bytes untouched") {
  TempDir dir;
  const auto data = Iota(2 * 3 * 4 * 2);
  const std::string path = dir.File("f.npy");
  WriteFile(path, NpyBytes(1, Dict("<i2", true, "(2, 3, 4)"), data));
  Result<NpyArray> r = ReadNpy(path);
  REQUIRE(r.ok());
  CHECK(r->layout.sizes == std::vector<int32_t>{2, 3, 4});
  CHECK(r->layout.dim_order == std::vector<uint8_t>{2, 1, 0});
  CHECK(Bytes(*r->data) == data);

  // Rank 1 and rank 0 are the same either way.
  WriteFile(path, NpyBytes(1, Dict("<i2", true, "(4,)"), Iota(8)));
  r = ReadNpy(path);
  REQUIRE(r.ok());
  CHECK(r->layout.dim_order == std::vector<uint8_t>{0});
}

TEST_CASE("npy: header spelling variants numpy has written") {
  TempDir dir;
  const std::string path = dir.File("v.npy");
  // Key order differs, double quotes, no trailing comma, Python 2 longs,
  // no spaces, and bytes after the array.
  auto file = NpyBytes(1, "{\"shape\":(2L,3L),'fortran_order':False,'descr':'<u2'}", Iota(12));
  file.push_back(0xAB);
  WriteFile(path, file);
  Result<NpyArray> r = ReadNpy(path);
  REQUIRE(r.ok());
  CHECK(r->layout.scalar_type == 27);
  CHECK(r->layout.sizes == std::vector<int32_t>{2, 3});
  CHECK(Bytes(*r->data) == Iota(12));
}

TEST_CASE("npy: truncated data names expected and actual sizes") {
  TempDir dir;
  const std::string m =
      ErrorOf(dir, "trunc.npy", NpyBytes(1, Dict("<f4", false, "(2, 3)"), Iota(20)));
  CHECK_THAT(m, Contains("truncated"));
  CHECK_THAT(m, Contains("needs 24 bytes"));
  CHECK_THAT(m, Contains("has 20"));
}

TEST_CASE("npy: bad magic, version and preamble") {
  TempDir dir;
  auto file = NpyBytes(1, Dict("<f4", false, "(1,)"), Iota(4));
  file[1] = 'X';
  CHECK_THAT(ErrorOf(dir, "magic.npy", file), Contains("magic"));
  CHECK_THAT(ErrorOf(dir, "short.npy", {0x93, 'N', 'U'}), Contains("magic"));
  CHECK_THAT(ErrorOf(dir, "pre.npy", {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 5}),
             Contains("preamble"));
  auto v4 = NpyBytes(2, Dict("<f4", false, "(1,)"), Iota(4));
  v4[6] = 4;
  CHECK_THAT(ErrorOf(dir, "v4.npy", v4), Contains("version 4.0"));
}

TEST_CASE("npy: unsupported descrs name the descr") {
  TempDir dir;
  std::string m = ErrorOf(dir, "be.npy", NpyBytes(1, Dict(">f4", false, "(2,)"), Iota(8)));
  CHECK_THAT(m, Contains("'>f4'"));
  CHECK_THAT(m, Contains("big-endian"));
  m = ErrorOf(dir, "c8.npy", NpyBytes(1, Dict("<c8", false, "(2,)"), Iota(16)));
  CHECK_THAT(m, Contains("'<c8'"));
  CHECK_THAT(m, Contains("not supported"));
  m = ErrorOf(dir, "obj.npy", NpyBytes(1, Dict("|O", false, "(2,)"), Iota(16)));
  CHECK_THAT(m, Contains("object array"));
  m = ErrorOf(
      dir, "rec.npy",
      NpyBytes(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", Iota(8)));
  CHECK_THAT(m, Contains("structured"));
}

TEST_CASE("npy: header length limits") {
  TempDir dir;
  // Length field of 2 MiB in a v2.0 header.
  std::vector<uint8_t> big = {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0, 0, 0x20, 0};
  big.resize(4096, ' ');
  std::string m = ErrorOf(dir, "big.npy", big);
  CHECK_THAT(m, Contains("2097152"));
  CHECK_THAT(m, Contains("exceeds the limit"));
  // A header that claims more bytes than the file has.
  std::vector<uint8_t> past = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 100, 0, '{', '}'};
  CHECK_THAT(ErrorOf(dir, "past.npy", past), Contains("past the end"));
}

TEST_CASE("npy: malformed headers") {
  TempDir dir;
  struct Case {
    std::string dict;
    std::string expect;
  };
  const Case cases[] = {
      {"{'descr': '<f4', 'shape': (2,), }", "no 'fortran_order'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", "expected a string"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': True}", "unknown key 'x'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", "repeats"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2)}", "not a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", "negative"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}",
       "'shape'[0] = 99999999999999999999 is not a 64-bit integer"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", "expected a string, True"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': '2'}", "'shape' is not a tuple"},
      {"{'descr': '<f4', 'fortran_order': Falsey, 'shape': (2,)}", "expected a string, True"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}", "expected ',' or '}'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x", "after the closing"},
      {"{'descr': '<f\\x34', 'fortran_order': False, 'shape': (2,)}", "escape"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3", "expected ',' or ')'"},
  };
  for (const Case& c : cases) {
    INFO(c.dict);
    const std::string m = ErrorOf(dir, "bad.npy", NpyBytes(1, c.dict, Iota(64)));
    CHECK_THAT(m, Contains(c.expect));
  }
}

TEST_CASE("npy: a dimension beyond int32 is refused as every layout is") {
  // The library's rule and words (LayoutOfInts), as the other importers say it.
  TempDir dir;
  const std::string path = dir.File("big.npy");
  WriteFile(path, NpyBytes(1, Dict("<f4", false, "(2, 2147483648)"), Iota(64)));
  Result<NpyArray> r = ReadNpy(path);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kOutOfRange);
  CHECK(r.status().message() == path +
                                    ": shape: sizes[1] = 2147483648 is not a size the format holds "
                                    "(0 to 2147483647)");
}

TEST_CASE("npy: missing file names the file") {
  TempDir dir;
  Result<NpyArray> r = ReadNpy(dir.File("nope.npy"));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kNotFound);
  CHECK_THAT(r.status().message(), Contains("nope.npy"));
}

}  // namespace
}  // namespace etpack
