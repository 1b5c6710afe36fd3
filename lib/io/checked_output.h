// checked_output.h (internal) — the call-order rules of etpack/output.h, kept
// in one place for every output: Reserve once, then writes at increasing
// offsets inside the reserved size, then the publishing steps in order
// (Sync, Link, Rename, SyncDirectory). The first failure is sticky.
// Implementations fill in the Do* hooks, which run only when the rules
// allow the call, and clean up in their destructors.

#ifndef ETPACK_IO_CHECKED_OUTPUT_H_
#define ETPACK_IO_CHECKED_OUTPUT_H_

#include <cstdint>
#include <string>
#include <utility>

#include "etpack/output.h"
#include "etpack/source.h"
#include "etpack/status.h"

namespace etpack {

class CheckedOutput : public OutputFile {
 public:
  using WritableOutput::Write;

  const std::string& destination() const final { return destination_; }

  Status Reserve(uint64_t size) final {
    if (!status_.ok()) return status_;
    if (stage_ != Stage::kCreated) {
      return Fail(
          InvalidArgument(destination_ + ": Reserve called " +
                          (stage_ == Stage::kWriting ? "twice" : "after publishing began")));
    }
    ETPACK_RETURN_IF_ERROR(Fail(DoReserve(size)));
    size_ = size;
    stage_ = Stage::kWriting;
    return Status::OK();
  }

  Result<bool> ReserveClone(const Source& source) final {
    if (!status_.ok()) return status_;
    if (stage_ != Stage::kCreated) {
      return Fail(InvalidArgument(
          destination_ + ": ReserveClone called " +
          (stage_ == Stage::kWriting ? "after Reserve" : "after publishing began")));
    }
    Result<bool> cloned = DoReserveClone(source);
    if (!cloned.ok()) return Fail(cloned.status());
    if (*cloned) {
      size_ = source.size();
      stage_ = Stage::kWriting;
    }
    return cloned;
  }

  Status Write(uint64_t offset, const Source& source) final {
    if (!status_.ok()) return status_;
    if (stage_ != Stage::kWriting) {
      return Fail(InvalidArgument(
          destination_ + ": Write called " +
          (stage_ == Stage::kCreated ? "before Reserve" : "after publishing began")));
    }
    const uint64_t n = source.size();
    if (offset < next_offset_) {
      return Fail(InvalidArgument(
          destination_ + ": write of " + source.Describe() + " at offset " +
          std::to_string(offset) + " starts before the end of the previous write (" +
          std::to_string(next_offset_) + "); writes must go in increasing order"));
    }
    if (offset > size_ || n > size_ - offset) {
      return Fail(OutOfRange(destination_ + ": write of " + source.Describe() + " at offset " +
                             std::to_string(offset) + " runs past the reserved size (" +
                             std::to_string(size_) + " bytes)"));
    }
    ETPACK_RETURN_IF_ERROR(Fail(DoWrite(offset, source)));
    next_offset_ = offset + n;
    written_ += n;
    return Status::OK();
  }

  uint64_t bytes_written() const override { return written_; }

  Status Truncate(uint64_t size) final {
    ETPACK_RETURN_IF_ERROR(Expect(Stage::kWriting, "Truncate"));
    if (size < next_offset_ || size > size_) {
      return Fail(InvalidArgument(destination_ + ": cannot truncate to " + std::to_string(size) +
                                  " bytes: outside [end of the last write " +
                                  std::to_string(next_offset_) + ", reserved size " +
                                  std::to_string(size_) + "]"));
    }
    ETPACK_RETURN_IF_ERROR(Fail(DoTruncate(size)));
    size_ = size;
    return Status::OK();
  }

  Status Sync() final {
    if (stage_ == Stage::kSynced && status_.ok()) return Status::OK();
    ETPACK_RETURN_IF_ERROR(Expect(Stage::kWriting, "Sync"));
    ETPACK_RETURN_IF_ERROR(Fail(DoSync()));
    stage_ = Stage::kSynced;
    return Status::OK();
  }

 protected:
  Status Link() final {
    ETPACK_RETURN_IF_ERROR(Expect(Stage::kSynced, "Link"));
    ETPACK_RETURN_IF_ERROR(Fail(DoLink(&placed_free_)));
    stage_ = placed_free_ ? Stage::kPlaced : Stage::kLinked;
    return Status::OK();
  }

  Status Rename() final {
    if (stage_ == Stage::kPlaced && placed_free_ && status_.ok()) return Status::OK();
    ETPACK_RETURN_IF_ERROR(Expect(Stage::kLinked, "Rename"));
    ETPACK_RETURN_IF_ERROR(Fail(DoRename()));
    stage_ = Stage::kPlaced;
    return Status::OK();
  }

  void Unplace() final {
    if (stage_ == Stage::kPlaced && placed_free_) {
      DoUnplace();
      stage_ = Stage::kUnplaced;
    }
  }

  Status SyncDirectory() final {
    ETPACK_RETURN_IF_ERROR(Expect(Stage::kPlaced, "SyncDirectory"));
    ETPACK_RETURN_IF_ERROR(Fail(DoSyncDirectory()));
    stage_ = Stage::kPublished;
    return Status::OK();
  }

  bool replaced_existing() const final {
    return (stage_ == Stage::kPlaced || stage_ == Stage::kPublished) && !placed_free_;
  }

  explicit CheckedOutput(std::string destination) : destination_(std::move(destination)) {}

  // REQUIRES of each hook: the base has checked the call order and, for
  // DoWrite, that [offset, offset + source.size()) lies inside the reserved
  // size at or after the previous write.
  virtual Status DoReserve(uint64_t size) = 0;
  virtual Status DoWrite(uint64_t offset, const Source& source) = 0;
  // True after making the output a clone of `source` (see ReserveClone);
  // false, changing nothing, where it cannot.
  virtual Result<bool> DoReserveClone(const Source& source) {
    (void)source;
    return false;
  }
  virtual Status DoTruncate(uint64_t size) = 0;
  virtual Status DoSync() = 0;
  // Sets *placed_free when the output went straight to its free
  // destination (then DoRename is never called).
  virtual Status DoLink(bool* placed_free) = 0;
  virtual Status DoRename() = 0;
  virtual void DoUnplace() = 0;
  virtual Status DoSyncDirectory() = 0;

  // True once the output is at its destination: a destructor must not
  // remove it then.
  bool in_place() const { return stage_ == Stage::kPlaced || stage_ == Stage::kPublished; }

 private:
  enum class Stage { kCreated, kWriting, kSynced, kLinked, kPlaced, kPublished, kUnplaced };

  Status Expect(Stage want, const char* call) {
    if (!status_.ok()) return status_;
    if (stage_ == want) return Status::OK();
    return Fail(InvalidArgument(destination_ + ": " + call + " called out of order" +
                                (stage_ == Stage::kCreated ? " (before Reserve)" : "")));
  }

  Status Fail(Status s) {
    if (status_.ok()) status_ = s;
    return s;
  }

  const std::string destination_;
  Stage stage_ = Stage::kCreated;
  bool placed_free_ = false;  // in place where nothing was before
  uint64_t size_ = 0;
  uint64_t next_offset_ = 0;
  uint64_t written_ = 0;
  Status status_;
};

}  // namespace etpack

#endif  // ETPACK_IO_CHECKED_OUTPUT_H_
