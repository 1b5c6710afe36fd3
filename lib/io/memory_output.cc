// Outputs held in memory until published into MemoryOutputFs::files().

#include <map>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "etpack/output.h"
#include "io/checked_output.h"

namespace etpack {
namespace {

class MemoryOutput final : public CheckedOutput {
 public:
  MemoryOutput(std::string destination, std::map<std::string, std::vector<uint8_t>>* files)
      : CheckedOutput(std::move(destination)), files_(files) {}

 private:
  Status DoReserve(uint64_t size) override {
    if (size > SIZE_MAX) {
      return OutOfRange(destination() + ": memory output cannot hold " + std::to_string(size) +
                        " bytes");
    }
    try {
      bytes_.assign(static_cast<size_t>(size), 0);
    } catch (const std::bad_alloc&) {
      return OutOfRange(destination() + ": cannot allocate " + std::to_string(size) + " bytes");
    }
    return Status::OK();
  }

  Status DoWrite(uint64_t offset, const Source& source) override {
    const uint64_t n = source.size();
    if (n == 0) return Status::OK();
    return source.ReadAt(0, bytes_.data() + offset, static_cast<size_t>(n))
        .WithContext(destination());
  }

  Status DoTruncate(uint64_t size) override {
    bytes_.resize(static_cast<size_t>(size));
    return Status::OK();
  }

  Status DoSync() override { return Status::OK(); }

  Status DoLink(bool* placed_free) override {
    *placed_free = files_->count(destination()) == 0;
    if (*placed_free) (*files_)[destination()] = std::move(bytes_);
    return Status::OK();
  }

  Status DoRename() override {
    (*files_)[destination()] = std::move(bytes_);
    return Status::OK();
  }

  void DoUnplace() override { files_->erase(destination()); }
  Status DoSyncDirectory() override { return Status::OK(); }

  std::map<std::string, std::vector<uint8_t>>* files_;
  std::vector<uint8_t> bytes_;
};

}  // namespace

Result<std::unique_ptr<OutputFile>> MemoryOutputFs::Create(const std::string& destination) {
  return std::unique_ptr<OutputFile>(std::make_unique<MemoryOutput>(destination, &files_));
}

}  // namespace etpack
