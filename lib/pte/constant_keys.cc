// ConstantKeys (pte/constant_keys.h).

#include "pte/constant_keys.h"

#include "etpack/status.h"
#include "pte/program_walk.h"

namespace etpack {

ConstantKeys::ConstantKeys(const pte_fb::Program& program) : program_(program) {
  (void)ForEachTensor(program, [&](uint32_t, uint32_t, const pte_fb::Tensor& t) {
    const auto* extra = t.extra_tensor_info();
    if (extra != nullptr && extra->fully_qualified_name() != nullptr) {
      taken_.insert(extra->fully_qualified_name()->str());
    }
    return Status::OK();
  });
}

std::string ConstantKeys::Of(uint32_t p, uint32_t v, const pte_fb::Tensor& t) {
  const auto* extra = t.extra_tensor_info();
  if (extra != nullptr && extra->fully_qualified_name() != nullptr &&
      extra->fully_qualified_name()->size() > 0) {
    return extra->fully_qualified_name()->str();
  }
  const auto* method = program_.execution_plan()->Get(p)->name();
  const std::string base =
      "constant." + (method ? method->str() : std::to_string(p)) + "." + std::to_string(v);
  std::string key = base;
  for (uint64_t n = 1; taken_.count(key) != 0; ++n) key = base + "." + std::to_string(n);
  taken_.insert(key);
  return key;
}

}  // namespace etpack
