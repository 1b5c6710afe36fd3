#include <string>
#include <utility>

#include "etpack/sink.h"

namespace etpack {
namespace {

class FaultInjectingSink final : public Sink {
 public:
  FaultInjectingSink(std::unique_ptr<Sink> inner, uint64_t fail_after_bytes)
      : inner_(std::move(inner)), limit_(fail_after_bytes), budget_(fail_after_bytes) {}

  ~FaultInjectingSink() override {
    if (!done_) Abandon();
  }

  using Sink::Write;

  Status Reserve(uint64_t size) override {
    if (!status_.ok()) return status_;
    return Keep(inner_->Reserve(size));
  }

  Status Write(uint64_t offset, const Source& source) override {
    if (!status_.ok()) return status_;
    const uint64_t n = source.size();
    if (n <= budget_) {
      budget_ -= n;
      return Keep(inner_->Write(offset, source));
    }
    // Let the part below the limit through, as a real device that fills up
    // mid-write would, so tests see a partly written output get discarded.
    if (budget_ > 0) {
      SourcePtr whole(SourcePtr(), &source);  // non-owning
      Status s = inner_->Write(offset, *SliceSource(whole, 0, budget_));
      if (!s.ok()) return Keep(s);
    }
    return Keep(Status(Code::kIoError,
                       "injected fault: write of " + source.Describe() +
                           " at offset " + std::to_string(offset) +
                           " crosses the limit of " + std::to_string(limit_) +
                           " bytes"));
  }

  Status Finish() override {
    if (done_) {
      return status_.ok() ? InvalidArgument(
                                "fault-injecting sink: Finish called after Finish or Abandon")
                          : status_;
    }
    done_ = true;
    if (!status_.ok()) {
      inner_->Abandon();
      return status_;
    }
    return Keep(inner_->Finish());
  }

  void Abandon() override {
    done_ = true;
    inner_->Abandon();
  }

  uint64_t bytes_written() const override { return inner_->bytes_written(); }

 private:
  Status Keep(Status s) {
    if (status_.ok()) status_ = s;
    return s;
  }

  std::unique_ptr<Sink> inner_;
  uint64_t limit_;
  uint64_t budget_;  // bytes still allowed through
  bool done_ = false;
  Status status_;
};

}  // namespace

std::unique_ptr<Sink> NewFaultInjectingSink(std::unique_ptr<Sink> inner,
                                            uint64_t fail_after_bytes) {
  return std::make_unique<FaultInjectingSink>(std::move(inner), fail_after_bytes);
}

}  // namespace etpack
