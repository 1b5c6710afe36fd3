// bpte_values.h (internal) — walking a bundled program's test values, for
// the reader (validation, Suites()) and the reports (inspect --sizes).

#ifndef ETPACK_BPTE_BPTE_VALUES_H_
#define ETPACK_BPTE_BPTE_VALUES_H_

#include <cstdint>
#include <string>

#include "bundled_program_etpack_generated.h"
#include "etpack/status.h"

namespace etpack::bpte {

// "method_test_suites[s] 'forward'": how errors and reports name a suite.
inline std::string SuitePath(uint32_t s, const bpte_fb::BundledMethodTestSuite& suite) {
  std::string p = "method_test_suites[" + std::to_string(s) + "]";
  if (suite.method_name() != nullptr) p += " '" + suite.method_name()->str() + "'";
  return p;
}

// Calls fn(value, path) for every test value of every case, inputs then
// expected outputs, stopping at the first error. Paths read
// "method_test_suites[0] 'forward'.test_cases[1].inputs[0]".
// REQUIRES: every suite has test_cases, every case inputs and
// expected_outputs (BpteFile validates it before walking).
template <typename Fn>
Status ForEachValue(const bpte_fb::BundledProgram& root, Fn fn) {
  const auto* suites = root.method_test_suites();
  for (uint32_t s = 0; s < suites->size(); ++s) {
    const auto* suite = suites->Get(s);
    const auto* cases = suite->test_cases();
    for (uint32_t c = 0; c < cases->size(); ++c) {
      const auto* tc = cases->Get(c);
      const std::string cpath = SuitePath(s, *suite) + ".test_cases[" + std::to_string(c) + "]";
      for (uint32_t i = 0; i < tc->inputs()->size(); ++i) {
        ETPACK_RETURN_IF_ERROR(
            fn(*tc->inputs()->Get(i), cpath + ".inputs[" + std::to_string(i) + "]"));
      }
      for (uint32_t i = 0; i < tc->expected_outputs()->size(); ++i) {
        ETPACK_RETURN_IF_ERROR(fn(*tc->expected_outputs()->Get(i),
                                  cpath + ".expected_outputs[" + std::to_string(i) + "]"));
      }
    }
  }
  return Status::OK();
}

}  // namespace etpack::bpte

#endif  // ETPACK_BPTE_BPTE_VALUES_H_
