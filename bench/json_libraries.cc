// The evidence behind keeping etpack's own JSON parser (docs/json.md):
// parse time of a 100k-tensor program tree and the answers to the inputs
// where parsers differ, for etpack::json, nlohmann::json and simdjson.
// Built only when Debian's nlohmann-json3-dev and libsimdjson-dev are
// installed; not part of the test suite.

#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>

#include <simdjson.h>
#include <nlohmann/json.hpp>

#include "etpack/json.h"

namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// A program tree in flatc form with `n` constant tensors, the shape the
// planner's 100k-tensor benchmark uses.
std::string ProgramText(int n) {
  std::string s = "{\"version\": 0, \"execution_plan\": [{\"name\": \"forward\", \"values\": [";
  for (int i = 0; i < n; ++i) {
    if (i) s += ",\n";
    s += "{\"val_type\": \"Tensor\", \"val\": {\"scalar_type\": 6, \"storage_offset\": 0, "
         "\"sizes\": [64, 128], \"dim_order\": [0, 1], \"requires_grad\": false, "
         "\"data_buffer_idx\": " +
         std::to_string(i + 1) +
         ", \"allocation_info\": null, \"layout\": 0, \"shape_dynamism\": 0}}";
  }
  return s + "], \"inputs\": [], \"outputs\": [], \"chains\": [], \"operators\": []}]}";
}

std::string Simdjson(const std::string& text) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(text);
  simdjson::dom::element root;
  if (auto err = parser.parse(padded).get(root)) return simdjson::error_message(err);
  std::ostringstream out;
  out << root;
  return out.str();
}

}  // namespace

int main() {
  const std::string text = ProgramText(100000);
  std::printf("100k-tensor program, %zu bytes; best of 5 (ms)\n", text.size());
  double best[4] = {1e9, 1e9, 1e9, 1e9};
  for (int rep = 0; rep < 5; ++rep) {
    auto t = Clock::now();
    auto ours = etpack::json::Parse(text);
    best[0] = std::min(best[0], MsSince(t));
    t = Clock::now();
    auto unordered = nlohmann::json::parse(text);
    best[1] = std::min(best[1], MsSince(t));
    t = Clock::now();
    auto ordered = nlohmann::ordered_json::parse(text);  // keeps member order, as etpack does
    best[2] = std::min(best[2], MsSince(t));
    simdjson::dom::parser parser;
    simdjson::padded_string padded(text);
    simdjson::dom::element root;
    t = Clock::now();
    if (parser.parse(padded).get(root)) return 1;
    best[3] = std::min(best[3], MsSince(t));
    if (!ours.ok()) return 1;
  }
  std::printf(
      "etpack::json %.0f | nlohmann::json %.0f | nlohmann::ordered_json %.0f | "
      "simdjson dom %.0f\n\n",
      best[0], best[1], best[2], best[3]);

  const char* cases[] = {
      "{\"a\": 1, \"a\": 2}",
      "{\"x\": 18446744073709551615}",
      "{\"x\": 18446744073709551616}",
      "{\"x\": -9223372036854775809}",
      "{\"a\": [1, 2,]}",
      "{\n  \"a\": {\n    \"b\": tru\n  }\n}",
  };
  for (const char* c : cases) {
    std::printf("input: %s\n", c);
    auto ours = etpack::json::Parse(c, "m.json");
    std::printf("  etpack:   %s\n",
                ours.ok() ? etpack::json::Print(*ours).c_str() : ours.status().message().c_str());
    try {
      std::printf("  nlohmann: %s\n", nlohmann::ordered_json::parse(c).dump().c_str());
    } catch (const std::exception& e) {
      std::printf("  nlohmann: %s\n", e.what());
    }
    std::printf("  simdjson: %s\n", Simdjson(c).c_str());
  }
  return 0;
}
