#include <new>
#include <string>
#include <utility>

#include "io/checked_sink.h"
#include "etpack/sink.h"

namespace etpack {

Status Sink::Write(uint64_t offset, const void* data, uint64_t size) {
  return Write(offset, *MemorySource(data, size));
}

namespace {

class MemorySink final : public CheckedSink {
 public:
  explicit MemorySink(std::vector<uint8_t>* out) : CheckedSink("memory sink"), out_(out) {}

 private:
  Status DoReserve(uint64_t size) override {
    if (size > SIZE_MAX) {
      return OutOfRange(name() + ": cannot hold " + std::to_string(size) + " bytes");
    }
    try {
      bytes_.assign(static_cast<size_t>(size), 0);
    } catch (const std::bad_alloc&) {
      return OutOfRange(name() + ": cannot allocate " + std::to_string(size) + " bytes");
    }
    return Status::OK();
  }

  Status DoWrite(uint64_t offset, const Source& source) override {
    const uint64_t n = source.size();
    if (n == 0) return Status::OK();
    return source.ReadAt(0, bytes_.data() + offset, static_cast<size_t>(n));
  }

  Status DoFinish() override {
    *out_ = std::move(bytes_);
    bytes_ = {};
    return Status::OK();
  }

  void DoAbandon() override { bytes_ = {}; }

  std::vector<uint8_t>* out_;
  std::vector<uint8_t> bytes_;
};

}  // namespace

std::unique_ptr<Sink> NewMemorySink(std::vector<uint8_t>* out) {
  return std::make_unique<MemorySink>(out);
}

}  // namespace etpack
