// A range of a caller's open file as an OutputFile (see fd_output.h).

#include "io/fd_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/same_file.h"
#include "io/checked_output.h"
#include "io/posix_calls.h"

namespace etpack {
namespace {

// Bounded so that writing a source with no span costs a fixed amount of
// memory whatever its size.
constexpr size_t kChunk = size_t{8} << 20;

class FdRangeOutput final : public CheckedOutput {
 public:
  FdRangeOutput(int fd, uint64_t base, std::string name)
      : CheckedOutput(std::move(name)), fd_(fd), base_(base) {}

 private:
  Status Error(const std::string& what, int err) const {
    return IoError(destination(), err).WithContext(what);
  }

  Status PwriteAll(const uint8_t* data, uint64_t n, uint64_t at) {
    while (n > 0) {
      const size_t k = static_cast<size_t>(std::min<uint64_t>(n, size_t{1} << 30));
      const ssize_t w = ::pwrite(fd_, data, k, static_cast<off_t>(at));
      if (w < 0) {
        if (errno == EINTR) continue;
        return Error("pwrite at " + std::to_string(at), errno);
      }
      data += w;
      n -= static_cast<uint64_t>(w);
      at += static_cast<uint64_t>(w);
    }
    return Status::OK();
  }

  Status DoReserve(uint64_t size) override {
    struct stat st;
    if (fstat(fd_, &st) != 0) return Error("fstat", errno);
    const uint64_t old_size = static_cast<uint64_t>(st.st_size);
    // Bytes already in the range would show through the padding the
    // writer never writes: zero them. Past the old end the file reads as
    // zero by itself once it is extended.
    if (old_size > base_) {
      const uint64_t overlap = std::min(old_size - base_, size);
      std::vector<uint8_t> zeros(static_cast<size_t>(std::min<uint64_t>(overlap, kChunk)), 0);
      for (uint64_t done = 0; done < overlap;) {
        const uint64_t k = std::min<uint64_t>(overlap - done, zeros.size());
        ETPACK_RETURN_IF_ERROR(PwriteAll(zeros.data(), k, base_ + done));
        done += k;
      }
    }
    if (old_size < base_ + size && ftruncate(fd_, static_cast<off_t>(base_ + size)) != 0) {
      return Error("extending to " + std::to_string(base_ + size) + " bytes", errno);
    }
    return Status::OK();
  }

  Status DoWrite(uint64_t offset, const Source& source) override {
    uint64_t n = source.size();
    uint64_t at = base_ + offset;
    if (const uint8_t* data = source.contiguous()) return PwriteAll(data, n, at);
    if (const FileRange* range = source.file_range(); range != nullptr && copy_file_range_) {
      off_t in = static_cast<off_t>(range->offset);
      off_t out = static_cast<off_t>(at);
      uint64_t done = 0;
      while (done < n) {
        const ssize_t c = DefaultPosixCalls()->CopyFileRange(
            range->fd, &in, fd_, &out, static_cast<size_t>(std::min<uint64_t>(n - done, 1u << 30)));
        if (c < 0 && errno == EINTR) continue;
        if (c <= 0) {
          // Not supported between these files (or a short source): copy
          // what is left through memory instead.
          if (c < 0 && errno != EXDEV && errno != EINVAL && errno != ENOSYS &&
              errno != EOPNOTSUPP) {
            return Error("copy_file_range from " + source.Describe(), errno);
          }
          copy_file_range_ = false;
          break;
        }
        done += static_cast<uint64_t>(c);
      }
      if (done == n) return Status::OK();
      return CopyThroughMemory(source, done, n - done, at + done);
    }
    return CopyThroughMemory(source, 0, n, at);
  }

  Status CopyThroughMemory(const Source& source, uint64_t from, uint64_t n, uint64_t at) {
    std::vector<uint8_t> chunk(static_cast<size_t>(std::min<uint64_t>(n, kChunk)));
    for (uint64_t done = 0; done < n;) {
      const size_t k = static_cast<size_t>(std::min<uint64_t>(n - done, chunk.size()));
      ETPACK_RETURN_IF_ERROR(source.ReadAt(from + done, chunk.data(), k));
      ETPACK_RETURN_IF_ERROR(PwriteAll(chunk.data(), k, at + done));
      done += k;
    }
    return Status::OK();
  }

  // Writing the range overwrites the file itself, so it "replaces" every
  // file that is the same (device and inode), whatever name or descriptor
  // leads to it.
  bool Replaces(int fd) const override { return SameFile(fd_, fd); }

  Status DoTruncate(uint64_t) override { return Unimplemented(destination() + ": cannot shrink"); }
  Status DoSync() override { return Status::OK(); }
  Status NotPublished() const {
    return Unimplemented(destination() + ": a range of an open file is never published");
  }
  Status DoLink(bool*) override { return NotPublished(); }
  Status DoRename() override { return NotPublished(); }
  void DoUnplace() override {}
  Status DoSyncDirectory() override { return NotPublished(); }

  const int fd_;
  const uint64_t base_;
  bool copy_file_range_ = true;
};

}  // namespace

Status CheckFdNotInputs(int fd, const std::string& name, const std::vector<const Source*>& inputs) {
  return CheckNotInputs(FdRangeOutput(fd, 0, name), inputs);
}

Result<std::unique_ptr<OutputFile>> NewFdRangeOutput(int fd, uint64_t offset, std::string name) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0) return IoError(name, errno);
  if ((flags & O_ACCMODE) == O_RDONLY) {
    return InvalidArgument(name + ": file descriptor " + std::to_string(fd) +
                           " is not open for writing");
  }
  if ((flags & O_APPEND) != 0) {
    return InvalidArgument(name + ": file descriptor " + std::to_string(fd) +
                           " is in append mode, where the kernel ignores write offsets");
  }
  return std::unique_ptr<OutputFile>(std::make_unique<FdRangeOutput>(fd, offset, std::move(name)));
}

}  // namespace etpack
