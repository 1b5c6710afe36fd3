// libFuzzer target: the JSON parser (json::Parse).
#include <string_view>

#include "etpack/json.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)etpack::json::Parse(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
