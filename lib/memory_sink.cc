#include <cassert>
#include <new>
#include <string>
#include <utility>

#include "etpack/sink.h"

namespace etpack {

Status Sink::Write(uint64_t offset, const void* data, uint64_t size) {
  return Write(offset, *MemorySource(data, size));
}

namespace {

class MemorySink final : public Sink {
 public:
  explicit MemorySink(std::vector<uint8_t>* out) : out_(out) {}

  using Sink::Write;

  Status Reserve(uint64_t size) override {
    if (!status_.ok()) return status_;
    if (reserved_) return Fail(InvalidArgument("memory sink: Reserve called twice"));
    if (size > SIZE_MAX) {
      return Fail(OutOfRange("memory sink: cannot hold " + std::to_string(size) +
                             " bytes"));
    }
    try {
      bytes_.assign(static_cast<size_t>(size), 0);
    } catch (const std::bad_alloc&) {
      return Fail(OutOfRange("memory sink: cannot allocate " +
                             std::to_string(size) + " bytes"));
    }
    reserved_ = true;
    return Status::OK();
  }

  Status Write(uint64_t offset, const Source& source) override {
    if (!status_.ok()) return status_;
    if (!reserved_ || done_) {
      return Fail(InvalidArgument("memory sink: Write outside Reserve..Finish"));
    }
    const uint64_t n = source.size();
    if (offset < next_offset_) {
      return Fail(InvalidArgument(
          "memory sink: write of " + source.Describe() + " at offset " +
          std::to_string(offset) + " starts before the end of the previous write (" +
          std::to_string(next_offset_) + ")"));
    }
    const bool inside = offset <= bytes_.size() && n <= bytes_.size() - offset;
    assert(inside && "write runs past the reserved size");
    if (!inside) {
      return Fail(OutOfRange("memory sink: write of " + source.Describe() +
                             " at offset " + std::to_string(offset) +
                             " runs past the reserved size (" +
                             std::to_string(bytes_.size()) + " bytes)"));
    }
    if (n != 0) {
      ETPACK_RETURN_IF_ERROR(
          Fail(source.ReadAt(0, bytes_.data() + offset, static_cast<size_t>(n))));
    }
    next_offset_ = offset + n;
    written_ += n;
    return Status::OK();
  }

  Status Finish() override {
    if (!status_.ok()) {
      Abandon();
      return status_;
    }
    if (done_) return InvalidArgument("memory sink: Finish called after Finish or Abandon");
    done_ = true;
    *out_ = std::move(bytes_);
    bytes_ = {};
    return Status::OK();
  }

  void Abandon() override {
    done_ = true;
    bytes_ = {};
  }

  uint64_t bytes_written() const override { return written_; }

 private:
  Status Fail(Status s) {
    if (status_.ok()) status_ = s;
    return s;
  }

  std::vector<uint8_t>* out_;
  std::vector<uint8_t> bytes_;
  bool reserved_ = false;
  bool done_ = false;
  uint64_t next_offset_ = 0;
  uint64_t written_ = 0;
  Status status_;
};

}  // namespace

std::unique_ptr<Sink> NewMemorySink(std::vector<uint8_t>* out) {
  return std::make_unique<MemorySink>(out);
}

}  // namespace etpack
