// checked_sink.h (internal) — the call-order rules of etpack/sink.h, kept in
// one place for every sink: Reserve once, then writes at increasing offsets
// inside the reserved size, then exactly one of Finish and Abandon. The
// first failure is sticky. Implementations fill in the Do* hooks, which run
// only when the rules allow the call.

#ifndef ETPACK_CHECKED_SINK_H_
#define ETPACK_CHECKED_SINK_H_

#include <cstdint>
#include <string>
#include <utility>

#include "etpack/sink.h"
#include "etpack/source.h"
#include "etpack/status.h"

namespace etpack {

class CheckedSink : public Sink {
 public:
  using Sink::Write;

  Status Reserve(uint64_t size) final {
    if (!status_.ok()) return status_;
    if (done_) return Fail(InvalidArgument(name_ + ": Reserve called after Finish or Abandon"));
    if (reserved_) return Fail(InvalidArgument(name_ + ": Reserve called twice"));
    ETPACK_RETURN_IF_ERROR(Fail(DoReserve(size)));
    size_ = size;
    reserved_ = true;
    return Status::OK();
  }

  Status Write(uint64_t offset, const Source& source) final {
    if (!status_.ok()) return status_;
    if (done_ || !reserved_) {
      return Fail(InvalidArgument(name_ + ": Write called " +
                                  (done_ ? "after Finish or Abandon" : "before Reserve")));
    }
    const uint64_t n = source.size();
    if (offset < next_offset_) {
      return Fail(InvalidArgument(
          name_ + ": write of " + source.Describe() + " at offset " +
          std::to_string(offset) + " starts before the end of the previous write (" +
          std::to_string(next_offset_) + "); writes must go in increasing order"));
    }
    if (offset > size_ || n > size_ - offset) {
      return Fail(OutOfRange(name_ + ": write of " + source.Describe() + " at offset " +
                             std::to_string(offset) + " runs past the reserved size (" +
                             std::to_string(size_) + " bytes)"));
    }
    ETPACK_RETURN_IF_ERROR(Fail(DoWrite(offset, source)));
    next_offset_ = offset + n;
    written_ += n;
    return Status::OK();
  }

  Status Finish() final {
    if (done_) {
      return status_.ok() ? InvalidArgument(name_ + ": Finish called after Finish or Abandon")
                          : status_;
    }
    if (status_.ok() && !reserved_) {
      (void)Fail(InvalidArgument(name_ + ": Finish called before Reserve"));
    }
    if (status_.ok()) (void)Fail(DoFinish());
    if (!status_.ok()) {
      Abandon();
      return status_;
    }
    done_ = true;
    return Status::OK();
  }

  void Abandon() final {
    done_ = true;
    DoAbandon();
  }

  uint64_t bytes_written() const override { return written_; }

 protected:
  // `name` starts every message about the call order ("memory sink", the
  // output path).
  explicit CheckedSink(std::string name) : name_(std::move(name)) {}

  // REQUIRES of each hook: the base has checked the call order and, for
  // DoWrite, that [offset, offset + source.size()) lies inside the reserved
  // size at or after the previous write.
  virtual Status DoReserve(uint64_t size) = 0;
  virtual Status DoWrite(uint64_t offset, const Source& source) = 0;
  // On failure the base calls DoAbandon() next.
  virtual Status DoFinish() = 0;
  // May run more than once; the later calls must be harmless.
  virtual void DoAbandon() = 0;

  // Destructors of implementations call this: the base destructor cannot
  // reach their DoAbandon().
  void AbandonIfOpen() {
    if (!done_) Abandon();
  }

  const std::string& name() const { return name_; }

 private:
  Status Fail(Status s) {
    if (status_.ok()) status_ = s;
    return s;
  }

  const std::string name_;
  bool reserved_ = false;
  bool done_ = false;  // Finish or Abandon ran
  uint64_t size_ = 0;
  uint64_t next_offset_ = 0;
  uint64_t written_ = 0;
  Status status_;
};

}  // namespace etpack

#endif  // ETPACK_CHECKED_SINK_H_
