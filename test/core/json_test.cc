#include "catch.h"

#include <unistd.h>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "etpack/json.h"
#include "test_files.h"

namespace etpack::json {
namespace {

Value MustParse(std::string_view text) {
  Result<Value> r = Parse(text, "t.json");
  INFO(text);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return std::move(r).value();
}

std::string ParseError(std::string_view text) {
  Result<Value> r = Parse(text, "t.json");
  INFO(text);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kInvalidArgument);
  return r.status().message();
}

TEST_CASE("scalars parse to the right kinds", "[json]") {
  CHECK(MustParse("null").is_null());
  CHECK(MustParse("true").as_bool());
  CHECK_FALSE(MustParse(" false ").as_bool());
  CHECK(MustParse("0").kind() == Kind::kInt);
  CHECK(MustParse("-0").as_int() == 0);
  CHECK(MustParse("42").as_int() == 42);
  CHECK(MustParse("-17").as_int() == -17);
  CHECK(MustParse("1.5").kind() == Kind::kDouble);
  CHECK(MustParse("1.5").as_double() == 1.5);
  CHECK(MustParse("1e3").kind() == Kind::kDouble);
  CHECK(MustParse("1E+3").as_double() == 1000.0);
  CHECK(MustParse("-2.5e-3").as_double() == -0.0025);
  CHECK(MustParse("\"hi\"").as_string() == "hi");
}

TEST_CASE("64-bit integer extremes are exact", "[json]") {
  Value min = MustParse("-9223372036854775808");
  REQUIRE(min.kind() == Kind::kInt);
  CHECK(min.as_int() == std::numeric_limits<int64_t>::min());

  Value max_i = MustParse("9223372036854775807");
  REQUIRE(max_i.kind() == Kind::kInt);
  CHECK(max_i.as_int() == std::numeric_limits<int64_t>::max());

  Value above = MustParse("9223372036854775808");
  REQUIRE(above.kind() == Kind::kUInt);
  CHECK(above.as_uint() == uint64_t{1} << 63);

  Value max_u = MustParse("18446744073709551615");
  REQUIRE(max_u.kind() == Kind::kUInt);
  CHECK(max_u.as_uint() == std::numeric_limits<uint64_t>::max());

  // 2^53 + 1 is not representable as a double: proves no double path.
  CHECK(MustParse("9007199254740993").as_int() == 9007199254740993LL);

  CHECK(Print(min) == "-9223372036854775808");
  CHECK(Print(max_u) == "18446744073709551615");
}

TEST_CASE("integers beyond 64 bits are rejected with the literal", "[json]") {
  std::string e = ParseError("[1,\n  18446744073709551616]");
  CHECK(e.find("t.json:2:3:") == 0);
  CHECK(e.find("18446744073709551616") != std::string::npos);
  e = ParseError("-9223372036854775809");
  CHECK(e.find("t.json:1:1:") == 0);
  CHECK(e.find("-9223372036854775809") != std::string::npos);
  ParseError("99999999999999999999999");
}

TEST_CASE("UInt normalizes and int kinds compare by value", "[json]") {
  CHECK(Value::UInt(5).kind() == Kind::kInt);
  CHECK(Value::UInt(5) == Value::Int(5));
  CHECK(Value::UInt(uint64_t{1} << 63).kind() == Kind::kUInt);
  CHECK(Value::UInt(uint64_t{1} << 63) != Value::Int(std::numeric_limits<int64_t>::min()));
  CHECK(Value::Int(-1) != Value::UInt(std::numeric_limits<uint64_t>::max()));
  CHECK(Value::Int(1) != Value::Double(1.0));
  CHECK(MustParse("7").as_uint() == 7);
  CHECK(MustParse("7").as_double() == 7.0);
}

TEST_CASE("doubles round-trip through Print", "[json]") {
  for (double d :
       {0.1, -1.0 / 3.0, 1e300, 5e-324, 2.5, 123456789.0, -0.0, 1.7976931348623157e308}) {
    Value v = Value::Double(d);
    std::string text = Print(v);
    INFO(text);
    Value back = MustParse(text);
    REQUIRE(back.kind() == Kind::kDouble);
    CHECK(back.as_double() == d);
    CHECK(std::signbit(back.as_double()) == std::signbit(d));
  }
  CHECK(Print(Value::Double(1.0)) == "1.0");
  CHECK(Print(Value::Double(0.5)) == "0.5");
  CHECK(Print(Value::Double(0.1)) == "0.10000000000000001");
  // Underflow reads as zero; overflow has no JSON meaning and is refused.
  CHECK(MustParse("1e-400").as_double() == 0.0);
  std::string e = ParseError("1e400");
  CHECK(e.find("1e400") != std::string::npos);
}

TEST_CASE("inf and nan print as strings", "[json]") {
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(Print(Value::Double(inf)) == "\"inf\"");
  CHECK(Print(Value::Double(-inf)) == "\"-inf\"");
  CHECK(Print(Value::Double(std::nan(""))) == "\"nan\"");
  CHECK(Value::Double(std::nan("")) == Value::Double(std::nan("")));
  CHECK(Print(Value::Array({Value::Double(inf)})) == "[\"inf\"]");
}

TEST_CASE("string escapes and surrogate pairs", "[json]") {
  CHECK(MustParse(R"("a\"b\\c\/d\b\f\n\r\t")").as_string() == "a\"b\\c/d\b\f\n\r\t");
  CHECK(MustParse(R"("\u0041\u00e9\u20AC")").as_string() == "A\xC3\xA9\xE2\x82\xAC");
  CHECK(MustParse(R"("\uD83D\uDE00")").as_string() == "\xF0\x9F\x98\x80");
  CHECK(MustParse(R"("x\u0000y")").as_string() == std::string("x\0y", 3));
  // Raw UTF-8 is kept as is.
  CHECK(MustParse("\"h\xC3\xA9llo \xF0\x9F\x98\x80\"").as_string() ==
        "h\xC3\xA9llo \xF0\x9F\x98\x80");

  CHECK(ParseError(R"("\uD83D")").find("surrogate") != std::string::npos);
  CHECK(ParseError(R"("\uD83Dx")").find("surrogate") != std::string::npos);
  CHECK(ParseError(R"("\uD83D\u0041")").find("surrogate") != std::string::npos);
  CHECK(ParseError(R"("\uDE00")").find("surrogate") != std::string::npos);
  CHECK(ParseError(R"("\x41")").find("invalid escape") != std::string::npos);
  CHECK(ParseError(R"("\u12G4")").find("\\u12G4") != std::string::npos);
  CHECK(ParseError("\"a\nb\"").find("control character") != std::string::npos);
  CHECK(ParseError("\"\xC3\x28\"").find("UTF-8") != std::string::npos);
  CHECK(ParseError("\"\xED\xA0\x80\"").find("UTF-8") != std::string::npos);  // CESU
  CHECK(ParseError("\"abc").find("unterminated") != std::string::npos);
}

TEST_CASE("Print escapes strings and keeps UTF-8", "[json]") {
  Value s = Value::String(std::string("q\"b\\n\n\x01\x1f\xC3\xA9\x7f", 11));
  CHECK(Print(s) == "\"q\\\"b\\\\n\\n\\u0001\\u001F\xC3\xA9\x7f\"");
  CHECK(MustParse(Print(s)) == s);
}

TEST_CASE("Print replaces bytes that are not UTF-8 with U+FFFD, so its output parses", "[json]") {
  const std::string fffd = "\xEF\xBF\xBD";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a\xff"
       "b",
       "a" + fffd + "b"},                           // never a lead byte
      {"\xC0\xAF", fffd + fffd},                    // overlong '/'
      {"\xED\xA0\x80", fffd + fffd + fffd},         // a surrogate
      {"x\xE2\x82", "x" + fffd + fffd},             // truncated at the end
      {"\xE2\x82\xAC\x80", "\xE2\x82\xAC" + fffd},  // valid, then a stray continuation
  };
  for (const auto& [in, want] : cases) {
    const std::string printed = Print(Value::String(in));
    INFO(printed);
    CHECK(printed == "\"" + want + "\"");
    CHECK(MustParse(printed).as_string() == want);
  }
}

TEST_CASE("strict grammar", "[json]") {
  CHECK(ParseError("[1,2,]").find("trailing comma") != std::string::npos);
  CHECK(ParseError("{\"a\":1,}").find("trailing comma") != std::string::npos);
  CHECK(ParseError("[1 // c\n]").find("comments") != std::string::npos);
  CHECK(ParseError("/* c */ 1").find("comments") != std::string::npos);
  CHECK(ParseError("012").find("leading zero") != std::string::npos);
  CHECK(ParseError("-01").find("-01") != std::string::npos);
  ParseError("+1");
  ParseError(".5");
  ParseError("1.");
  ParseError("1e");
  ParseError("0x10");
  ParseError("NaN");
  ParseError("Infinity");
  ParseError("'a'");
  ParseError("{a:1}");
  ParseError("{\"a\" 1}");
  ParseError("[1 2]");
  ParseError("tru");
  ParseError("nulls");
  ParseError("");
  ParseError("   ");
  ParseError("1 2");
  CHECK(ParseError("{\"a\":1,\"a\":2}").find("\"a\"") != std::string::npos);
}

TEST_CASE("errors give line and column", "[json]") {
  std::string e = ParseError("{\n  \"a\": [1,\n    x]\n}");
  CHECK(e.rfind("t.json:3:5: ", 0) == 0);
  // Columns count characters: the two-byte é is one column.
  e = ParseError("[\"\xC3\xA9\", ?]");
  CHECK(e.rfind("t.json:1:7: ", 0) == 0);
  e = ParseError("[1,\n");
  CHECK(e.rfind("t.json:2:1: ", 0) == 0);
  CHECK(e.find("end of input") != std::string::npos);
}

TEST_CASE("depth limit is 512", "[json]") {
  std::string ok = std::string(512, '[') + std::string(512, ']');
  Value v = MustParse(ok);
  int depth = 0;
  for (const Value* p = &v; p->kind() == Kind::kArray; p = &p->items()[0]) {
    ++depth;
    if (p->items().empty()) break;
  }
  CHECK(depth == 512);
  std::string too_deep = std::string(513, '[') + std::string(513, ']');
  CHECK(ParseError(too_deep).find("512") != std::string::npos);
  std::string objs;
  for (int i = 0; i < 600; ++i) objs += "{\"a\":";
  objs += "1" + std::string(600, '}');
  CHECK(ParseError(objs).find("512") != std::string::npos);
}

TEST_CASE("round trip keeps order, null vs [] and exact integers", "[json]") {
  const std::string text =
      R"({"z":1,"a":[],"m":null,"n":{"x":[1,-2,18446744073709551615,"s",true,false,null,{}]},"d":2.5})";
  Value v = MustParse(text);
  CHECK(Print(v) == text);
  REQUIRE(v.members().size() == 5);
  CHECK(v.members()[0].first == "z");
  CHECK(v.Find("a")->kind() == Kind::kArray);
  CHECK(v.Find("m")->is_null());
  CHECK(v.Find("nope") == nullptr);
  CHECK(MustParse(Print(v, 2)) == v);
  CHECK(MustParse(Print(v, 0)) == v);
}

TEST_CASE("pretty printing", "[json]") {
  Value v = MustParse(R"({"a":[1,{"b":null}],"e":[],"o":{}})");
  CHECK(Print(v, 2) ==
        "{\n"
        "  \"a\": [\n"
        "    1,\n"
        "    {\n"
        "      \"b\": null\n"
        "    }\n"
        "  ],\n"
        "  \"e\": [],\n"
        "  \"o\": {}\n"
        "}");
}

TEST_CASE("object equality ignores member order, arrays do not", "[json]") {
  CHECK(MustParse(R"({"a":1,"b":[1,2]})") == MustParse(R"({"b":[1,2],"a":1})"));
  CHECK(MustParse(R"({"a":1,"b":[1,2]})") != MustParse(R"({"a":1,"b":[2,1]})"));
  CHECK(MustParse(R"({"a":1})") != MustParse(R"({"a":1,"b":2})"));
  CHECK(MustParse(R"({"a":null})") != MustParse(R"({"a":[]})"));
  CHECK(MustParse(R"({"a":1,"b":2})") != MustParse(R"({"a":1,"c":2})"));
}

TEST_CASE("Set replaces in place or appends", "[json]") {
  Value v = MustParse(R"({"a":1,"b":2,"c":3})");
  v.Set("b", Value::String("two"));
  CHECK(Print(v) == R"({"a":1,"b":"two","c":3})");
  Value& d = v.Set("d", Value::Array());
  d.items().push_back(Value::Bool(true));
  CHECK(Print(v) == R"({"a":1,"b":"two","c":3,"d":[true]})");
  CHECK(v.members().size() == 4);
}

TEST_CASE("ParseFile reads a file and names it in errors", "[json]") {
  etpack::testing::TempDir temp;
  const std::string dir = temp.path();
  const std::string path = temp.File("m.json");
  const std::string missing = temp.File("missing.json");
  {
    FILE* f = std::fopen(path.c_str(), "w");
    REQUIRE(f != nullptr);
    std::fputs("{\"k\": [1, 2,\n 3,]}", f);
    std::fclose(f);
  }
  Result<Value> r = ParseFile(path);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().rfind(path + ":2:4: ", 0) == 0);

  {
    FILE* f = std::fopen(path.c_str(), "w");
    std::fputs("{\"k\": [1, 2, 3]}\n", f);
    std::fclose(f);
  }
  r = ParseFile(path);
  REQUIRE(r.ok());
  CHECK(r->Find("k")->items().size() == 3);

  r = ParseFile(missing);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kNotFound);
  CHECK(r.status().message().find(missing) != std::string::npos);
  CHECK(r.status().message().find("No such file") != std::string::npos);
  // A directory is a wrong request, not an I/O failure.
  r = ParseFile(dir);
  CHECK(r.status().code() == Code::kInvalidArgument);
}

TEST_CASE("golden inputs parse and print back to equal trees", "[json]") {
  const std::string golden = etpack::testing::GoldenDir();
  for (const char* name :
       {"pte_all_kinds.input.json", "pte_constants.input.json", "ptd_basic.input.json",
        "bpte_basic.input.json", "pte_constants.decoded.json"}) {
    INFO(name);
    Result<Value> r = ParseFile(std::string(golden) + "/" + name);
    REQUIRE(r.ok());
    CHECK(MustParse(Print(*r)) == *r);
    CHECK(MustParse(Print(*r, 1)) == *r);
  }
  // Int.int_val extremes survive exactly.
  Result<Value> all = ParseFile(std::string(golden) + "/pte_all_kinds.input.json");
  REQUIRE(all.ok());
  const std::string text = Print(*all);
  CHECK(text.find("-9223372036854775808") != std::string::npos);
  CHECK(text.find("9223372036854775807") != std::string::npos);
}

}  // namespace
}  // namespace etpack::json

TEST_CASE("StreamPrinter prints what Print prints of the same tree") {
  using etpack::json::StreamPrinter;
  using etpack::json::Value;
  for (int indent : {-1, 2}) {
    std::string text;
    StreamPrinter p([&text](std::string_view piece) { text += piece; }, indent);
    p.BeginObject();
    p.Key("a");
    p.Put(Value::Int(1));
    p.Key("empty");
    p.BeginArray();
    p.End();
    p.Key("list");
    p.BeginArray();
    p.Put(Value::Object({{"k", Value::String("v")}, {"n", Value::Array({Value::Null()})}}));
    p.BeginObject();
    p.End();
    p.Put(Value::Array());
    p.End();
    p.Key("nested");
    p.BeginObject();
    p.Key("x");
    p.Put(Value::Bool(true));
    p.End();
    p.End();
    const Value tree =
        Value::Object({{"a", Value::Int(1)},
                       {"empty", Value::Array()},
                       {"list", Value::Array({Value::Object({{"k", Value::String("v")},
                                                             {"n", Value::Array({Value::Null()})}}),
                                              Value::Object(), Value::Array()})},
                       {"nested", Value::Object({{"x", Value::Bool(true)}})}});
    CHECK(text == etpack::json::Print(tree, indent));
  }
}
