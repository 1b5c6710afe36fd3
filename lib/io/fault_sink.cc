#include <string>
#include <utility>

#include "io/checked_sink.h"
#include "etpack/sink.h"

namespace etpack {
namespace {

class FaultInjectingSink final : public CheckedSink {
 public:
  FaultInjectingSink(std::unique_ptr<Sink> inner, uint64_t fail_after_bytes)
      : CheckedSink("fault-injecting sink"),
        inner_(std::move(inner)),
        limit_(fail_after_bytes),
        budget_(fail_after_bytes) {}

  ~FaultInjectingSink() override { AbandonIfOpen(); }

  uint64_t bytes_written() const override { return inner_->bytes_written(); }

 private:
  Status DoReserve(uint64_t size) override { return inner_->Reserve(size); }

  Status DoWrite(uint64_t offset, const Source& source) override {
    const uint64_t n = source.size();
    if (n <= budget_) {
      budget_ -= n;
      return inner_->Write(offset, source);
    }
    // Let the part below the limit through, as a real device that fills up
    // mid-write would, so tests see a partly written output get discarded.
    if (budget_ > 0) {
      SourcePtr whole(SourcePtr(), &source);  // non-owning
      ETPACK_RETURN_IF_ERROR(inner_->Write(offset, *SliceSource(whole, 0, budget_)));
    }
    return Status(Code::kIoError, "injected fault: write of " + source.Describe() +
                                      " at offset " + std::to_string(offset) +
                                      " crosses the limit of " + std::to_string(limit_) +
                                      " bytes");
  }

  Status DoFinish() override { return inner_->Finish(); }
  void DoAbandon() override { inner_->Abandon(); }

  std::unique_ptr<Sink> inner_;
  uint64_t limit_;
  uint64_t budget_;  // bytes still allowed through
};

}  // namespace

std::unique_ptr<Sink> NewFaultInjectingSink(std::unique_ptr<Sink> inner,
                                            uint64_t fail_after_bytes) {
  return std::make_unique<FaultInjectingSink>(std::move(inner), fail_after_bytes);
}

}  // namespace etpack
