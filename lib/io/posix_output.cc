// The POSIX output: a temporary file, reserved in full, filled through an
// mmap window (or copy_file_range / pwrite, or by sharing a source's
// extents), put in place by Publish(). This file is the glue: the call
// order is CheckedOutput's, and each concern has its own file:
//
//   posix_temp_file.h  the temporary file: made beside the destination,
//                      unnamed until linked, renamed into place
//   output_window.h    copying through one mapped window with write-behind,
//                      so memory stays bounded however large the file
//   extent_sharing.h   bytes of file sources that need no copy through
//                      memory: shared extents (reflink), copy_file_range

#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <utility>

#include "core/os_file.h"
#include "etpack/output.h"
#include "io/checked_output.h"
#include "io/extent_sharing.h"
#include "io/file_lock.h"
#include "io/output_window.h"
#include "io/posix_calls.h"
#include "io/posix_output.h"
#include "io/posix_temp_file.h"

namespace etpack {
namespace {

class PosixOutput final : public CheckedOutput {
 public:
  // `given` is the destination as the caller named it; `file` the
  // temporary that replaces or creates the file it leads to.
  PosixOutput(const std::string& given, std::unique_ptr<PosixTempFile> file,
              const OutputOptions& options, PosixCalls* calls)
      : CheckedOutput(given),
        file_(std::move(file)),
        window_(*file_, options, calls),
        extents_(*file_, window_, options, calls),
        sync_(options.sync),
        calls_(calls) {}

  // The window is dropped first (the members go in reverse order), then the
  // file, which removes whatever is not in place.
  ~PosixOutput() override = default;

 private:
  const std::string& target() const override { return file_->key(); }
  uint64_t bytes_shared() const override { return extents_.bytes_shared(); }
  bool Replaces(int fd) const override { return file_->Replaces(fd); }
  Status ReplaceOnly(int fd) override { return file_->ReplaceOnly(fd); }
  // Publish() finds which folder this is (device and inode) once it has
  // opened it, so two paths to one folder share a lock.
  std::string lock_directory() const override { return file_->real_dir(); }
  bool DestinationExists() const override { return file_->DestinationExists(); }
  Status Mark(const std::string& bytes) override { return file_->Mark(bytes); }
  void Unmark(bool unit_placed) override { file_->Unmark(unit_placed); }

  Status DoReserve(uint64_t size) override {
    const std::string& path = file_->path();
    if (size > static_cast<uint64_t>(INT64_MAX)) {
      return OutOfRange(path + ": cannot reserve " + std::to_string(size) +
                        " bytes, more than a file can hold");
    }
    // Growing the file past RLIMIT_FSIZE raises SIGXFSZ, which kills the
    // process (leaving the temporary file) before ftruncate could say EFBIG.
    struct rlimit limit;
    if (::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
        size > static_cast<uint64_t>(limit.rlim_cur)) {
      return OutOfRange(path + ": cannot reserve " + std::to_string(size) +
                        " bytes: exceeds the file size limit (ulimit -f) of " +
                        std::to_string(static_cast<uint64_t>(limit.rlim_cur)) + " bytes");
    }
    if (calls_->Ftruncate(file_->fd(), static_cast<off_t>(size)) != 0) {
      return ReserveError(size, "ftruncate", errno);
    }
    if (size > 0) {
      int rc;
      do {
        rc = calls_->Preallocate(file_->fd(), static_cast<off_t>(size));
      } while (rc != 0 && errno == EINTR);
      if (rc != 0) {
        // Without reserved blocks a full disk would surface as SIGBUS on a
        // mapped page; pwrite reports it as an error instead.
        if (errno == EOPNOTSUPP || errno == ENOSYS) {
          window_.StopMapping();
        } else {
          return ReserveError(size, "fallocate", errno);
        }
      }
    }
    window_.Resize(size);
    return Status::OK();
  }

  Result<bool> DoReserveClone(const Source& source) override { return extents_.CloneWhole(source); }

  // Shares what can share extents, copies the rest: in the kernel
  // (copy_file_range) when large, else through the window.
  Status DoWrite(uint64_t offset, const Source& source) override {
    const uint64_t n = source.size();
    extents_.Unshare(offset, n);
    uint64_t done = 0;
    const ExtentSharing::Span body = extents_.ShareableBody(offset, source);
    if (body.size > 0) {
      ETPACK_RETURN_IF_ERROR(CopyPart(offset, source, 0, body.start));
      ETPACK_ASSIGN_OR_RETURN(const uint64_t shared, extents_.Share(offset, source, body));
      done = body.start + shared;
    }
    ETPACK_RETURN_IF_ERROR(CopyPart(offset, source, done, n - done));
    return window_.AdvanceFrontier(offset + n);
  }

  // Copies source bytes [from, from + n) to offset + from.
  Status CopyPart(uint64_t offset, const Source& source, uint64_t from, uint64_t n) {
    ETPACK_ASSIGN_OR_RETURN(uint64_t done, extents_.CopyInKernel(offset, source, from, n));
    while (done < n) {
      // Copy stops early when the mapping turns out unusable and the
      // window switches to pwrite for good.
      const uint64_t at = from + done;
      ETPACK_ASSIGN_OR_RETURN(const uint64_t copied,
                              window_.Copy(offset + at, source, at, n - done));
      done += copied;
    }
    return Status::OK();
  }

  // Every write is done, so write-behind has nothing left to track past
  // `size`; the window is dropped first so no mapped page lies beyond it.
  Status DoTruncate(uint64_t size) override {
    window_.Unmap();
    if (calls_->Ftruncate(file_->fd(), static_cast<off_t>(size)) != 0) {
      return IoError(file_->path() + ": cannot truncate " + file_->Text() + " to " +
                         std::to_string(size) + " bytes",
                     errno);
    }
    window_.Resize(size);
    return Status::OK();
  }

  Status DoSync() override {
    window_.Unmap();
    window_.FlushSourceCache();
    if (sync_) {
      if (calls_->Fdatasync(file_->fd()) != 0) {
        return IoError(file_->path() + ": cannot flush " + file_->Text() + " to disk", errno);
      }
      // All clean now: drop what write-behind has not evicted yet.
      DropCachedPages(file_->fd(), 0, 0);
    }
    return Status::OK();
  }

  Status DoLink(bool* placed_free) override { return file_->Link(placed_free); }
  Status DoRename() override { return file_->Rename(); }
  void DoUnplace() override { file_->Unplace(); }
  Status DoSyncDirectory() override { return file_->SyncDirectory(); }

  Status ReserveError(uint64_t size, const char* call, int err) const {
    Status s = IoError(file_->path() + ": cannot reserve " + std::to_string(size) +
                           " bytes for the output (" + call + ")",
                       err);
    if (err == EFBIG) {
      return Status(s.code(), s.message() + " (larger than this file system allows)");
    }
    return s;
  }

  const std::unique_ptr<PosixTempFile> file_;
  OutputWindow window_;
  ExtentSharing extents_;
  const bool sync_;
  PosixCalls* const calls_;
};

class PosixOutputFs final : public OutputFs {
 public:
  PosixOutputFs(const OutputOptions& options, PosixCalls* calls)
      : options_(options), calls_(calls) {}

  Result<std::unique_ptr<OutputFile>> Create(const std::string& destination) override {
    ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<PosixTempFile> file,
                            PosixTempFile::Create(destination, options_.sync, calls_));
    return std::unique_ptr<OutputFile>(
        std::make_unique<PosixOutput>(destination, std::move(file), options_, calls_));
  }

  Status MakeFolders(const std::string& dir) override {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return IoError("cannot create the folder " + dir, ec.value());
    return Status::OK();
  }

  Result<std::unique_ptr<UpdateLock>> LockForUpdate(const std::string& path,
                                                    const CancelFn& cancel) override {
    return LockFileForUpdate(path, cancel);
  }

 private:
  const OutputOptions options_;
  PosixCalls* const calls_;
};

}  // namespace

std::unique_ptr<OutputFs> NewPosixOutputFs(const OutputOptions& options, PosixCalls* calls) {
  return std::make_unique<PosixOutputFs>(options, calls);
}

std::unique_ptr<OutputFs> NewPosixOutputFs(const OutputOptions& options) {
  return NewPosixOutputFs(options, DefaultPosixCalls());
}

OutputFs* DefaultOutputFs() {
  static OutputFs* const fs = NewPosixOutputFs().release();  // never destroyed, as DefaultInputFs
  return fs;
}

}  // namespace etpack
