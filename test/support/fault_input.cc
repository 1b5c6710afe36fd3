#include "fault_input.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

namespace etpack {
namespace {

class FaultInjectingInput final : public InputFileWrapper {
 public:
  FaultInjectingInput(std::shared_ptr<const InputFile> inner, const InputFault& fault)
      : InputFileWrapper(std::move(inner)), fault_(fault) {}

  Result<size_t> Read(uint64_t offset, void* dst, size_t n) const override {
    switch (fault_.kind) {
      case InputFaultKind::kRead:
        if (offset >= fault_.at) {
          return IoError("pread (injected fault at offset " + std::to_string(fault_.at) + ")",
                         fault_.err);
        }
        n = static_cast<size_t>(std::min<uint64_t>(n, fault_.at - offset));
        break;
      case InputFaultKind::kShortRead:
        n = static_cast<size_t>(std::min<uint64_t>(n, std::max<uint64_t>(fault_.at, 1)));
        break;
      case InputFaultKind::kShrink:
        if (offset >= fault_.at) return size_t{0};
        n = static_cast<size_t>(std::min<uint64_t>(n, fault_.at - offset));
        break;
      default: break;
    }
    return InputFileWrapper::Read(offset, dst, n);
  }

 private:
  const InputFault fault_;
};

class FaultInjectingInputFs final : public InputFsWrapper {
 public:
  FaultInjectingInputFs(InputFs* inner, const InputFault& fault)
      : InputFsWrapper(inner), fault_(fault) {}

  Result<std::shared_ptr<const InputFile>> Open(const std::string& path) override {
    if (fault_.kind == InputFaultKind::kOpen) {
      return IoError("cannot open " + path + " for reading (injected fault)", fault_.err);
    }
    ETPACK_ASSIGN_OR_RETURN(std::shared_ptr<const InputFile> file, InputFsWrapper::Open(path));
    return std::shared_ptr<const InputFile>(
        std::make_shared<FaultInjectingInput>(std::move(file), fault_));
  }

 private:
  const InputFault fault_;
};

}  // namespace

std::unique_ptr<InputFs> NewFaultInjectingInputFs(InputFs* inner, const InputFault& fault) {
  return std::make_unique<FaultInjectingInputFs>(inner, fault);
}

}  // namespace etpack
