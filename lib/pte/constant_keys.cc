// ConstantKeys (pte/constant_keys.h).

#include "pte/constant_keys.h"

#include "etpack/external_data.h"
#include "etpack/status.h"
#include "pte/program_walk.h"

namespace etpack {

std::string ConstantKeyBase(const pte_fb::Program& program, uint32_t p, uint32_t v) {
  const auto* method = program.execution_plan()->Get(p)->name();
  return "constant." + (method ? method->str() : std::to_string(p)) + "." + std::to_string(v);
}

bool IsMadeUpKey(const pte_fb::Program& program, uint32_t p, uint32_t v, std::string_view key) {
  if (key.substr(0, kContentKeyPrefix.size()) == kContentKeyPrefix) return true;
  const std::string base = ConstantKeyBase(program, p, v);
  if (key.substr(0, base.size()) != base) return false;
  // Exactly the base, or the base and "." and a positive count.
  const std::string_view rest = key.substr(base.size());
  if (rest.empty()) return true;
  if (rest.size() < 2 || rest[0] != '.' || rest[1] == '0') return false;
  return rest.find_first_not_of("0123456789", 1) == std::string_view::npos;
}

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
  const std::string base = ConstantKeyBase(program_, p, v);
  std::string key = base;
  for (uint64_t n = 1; taken_.count(key) != 0; ++n) key = base + "." + std::to_string(n);
  taken_.insert(key);
  return key;
}

}  // namespace etpack
