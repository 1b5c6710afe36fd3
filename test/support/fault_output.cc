#include "fault_output.h"

#include <sys/mman.h>

#include <string>
#include <utility>

namespace etpack {
namespace {

// Fails the one step `fault` names (when this is the output to fail) and
// every write past the shared byte budget; forwards the rest.
class FaultInjectingOutput final : public OutputFileWrapper {
 public:
  FaultInjectingOutput(std::unique_ptr<OutputFile> inner, bool fails, FaultStep step,
                       uint64_t* budget, uint64_t limit)
      : OutputFileWrapper(std::move(inner)),
        step_(fails ? step : FaultStep::kNone),
        budget_(budget),
        limit_(limit) {}

  Status Reserve(uint64_t size) override {
    return Step(FaultStep::kReserve, [&] { return OutputFileWrapper::Reserve(size); });
  }

  // A clone is the reserving step of an update.
  Result<bool> ReserveClone(const Source& source) override {
    Result<bool> cloned = false;
    ETPACK_RETURN_IF_ERROR(Step(FaultStep::kReserve, [&]() -> Status {
      cloned = OutputFileWrapper::ReserveClone(source);
      return cloned.ok() ? Status::OK() : cloned.status();
    }));
    return cloned;
  }

  using OutputFile::Write;
  Status Write(uint64_t offset, const Source& source) override {
    return Step(FaultStep::kWrite, [&]() -> Status {
      const uint64_t n = source.size();
      if (n <= *budget_) {
        *budget_ -= n;
        return OutputFileWrapper::Write(offset, source);
      }
      // The part below the limit goes through, so tests see a partly
      // written output get discarded.
      if (*budget_ > 0) {
        SourcePtr whole(SourcePtr(), &source);  // non-owning
        ETPACK_RETURN_IF_ERROR(OutputFileWrapper::Write(offset, *SliceSource(whole, 0, *budget_)));
        *budget_ = 0;
      }
      return Status(Code::kIoError, destination() + ": injected fault: write of " +
                                        source.Describe() + " at offset " + std::to_string(offset) +
                                        " crosses the limit of " + std::to_string(limit_) +
                                        " bytes");
    });
  }

  Status Truncate(uint64_t size) override {
    return Step(FaultStep::kNone, [&] { return OutputFileWrapper::Truncate(size); });
  }

  Status Sync() override {
    return Step(FaultStep::kSync, [&] { return OutputFileWrapper::Sync(); });
  }

 protected:
  Status Link() override {
    return Step(FaultStep::kLink, [&] { return OutputFileWrapper::Link(); });
  }
  Status Rename() override {
    return Step(FaultStep::kRename, [&] { return OutputFileWrapper::Rename(); });
  }
  Status SyncDirectory() override {
    return Step(FaultStep::kDirectorySync, [&] { return OutputFileWrapper::SyncDirectory(); });
  }

 private:
  // Sticky: after the first failure (injected or not) every step returns it.
  template <typename Fn>
  Status Step(FaultStep step, Fn&& forward) {
    if (!status_.ok()) return status_;
    if (step != FaultStep::kNone && step == step_) {
      status_ =
          Status(Code::kIoError, destination() + ": injected fault at " + FaultStepName(step));
      return status_;
    }
    Status s = forward();
    if (!s.ok()) status_ = s;
    return s;
  }

  const FaultStep step_;  // kNone unless this output is the one to fail
  uint64_t* budget_;      // bytes still allowed through, shared by all outputs
  const uint64_t limit_;
  Status status_;
};

class FaultInjectingOutputFs final : public OutputFsWrapper {
 public:
  FaultInjectingOutputFs(OutputFs* inner, const Fault& fault)
      : OutputFsWrapper(inner), fault_(fault), budget_(fault.after_bytes) {}

  Result<std::unique_ptr<OutputFile>> Create(const std::string& destination) override {
    if (fault_.step == FaultStep::kMap) {
      return InvalidArgument(
          "fault-injecting outputs: a window mapping fails only inside "
          "the POSIX output (FaultyPosixCalls)");
    }
    ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<OutputFile> out, OutputFsWrapper::Create(destination));
    const bool fails = created_++ == fault_.output;
    return std::unique_ptr<OutputFile>(std::make_unique<FaultInjectingOutput>(
        std::move(out), fails, fault_.step, &budget_, fault_.after_bytes));
  }

 private:
  const Fault fault_;
  uint64_t budget_;
  int created_ = 0;
};

}  // namespace

const char* FaultStepName(FaultStep step) {
  switch (step) {
    case FaultStep::kNone: return "no step";
    case FaultStep::kReserve: return "reserve";
    case FaultStep::kMap: return "map";
    case FaultStep::kWrite: return "write";
    case FaultStep::kSync: return "sync";
    case FaultStep::kLink: return "link";
    case FaultStep::kRename: return "rename";
    case FaultStep::kDirectorySync: return "directory sync";
  }
  return "unknown step";
}

std::unique_ptr<OutputFs> NewFaultInjectingOutputFs(OutputFs* inner, const Fault& fault) {
  return std::make_unique<FaultInjectingOutputFs>(inner, fault);
}

bool FaultyPosixCalls::Fails(FaultStep step) const {
  if (step != step_) return false;
  errno = err_;
  return true;
}

int FaultyPosixCalls::Preallocate(int fd, off_t len) {
  return Fails(FaultStep::kReserve) ? -1 : PosixCalls::Preallocate(fd, len);
}
void* FaultyPosixCalls::Mmap(size_t len, int fd, off_t offset) {
  return Fails(FaultStep::kMap) ? MAP_FAILED : PosixCalls::Mmap(len, fd, offset);
}
int FaultyPosixCalls::PopulateWrite(void* addr, size_t len) {
  return Fails(FaultStep::kWrite) ? -1 : PosixCalls::PopulateWrite(addr, len);
}
ssize_t FaultyPosixCalls::Pwrite(int fd, const void* buf, size_t n, off_t offset) {
  return Fails(FaultStep::kWrite) ? -1 : PosixCalls::Pwrite(fd, buf, n, offset);
}
ssize_t FaultyPosixCalls::CopyFileRange(int in_fd, off_t* in_off, int out_fd, off_t* out_off,
                                        size_t len) {
  return Fails(FaultStep::kWrite) ? -1
                                  : PosixCalls::CopyFileRange(in_fd, in_off, out_fd, out_off, len);
}
int FaultyPosixCalls::Fdatasync(int fd) {
  return Fails(FaultStep::kSync) ? -1 : PosixCalls::Fdatasync(fd);
}
int FaultyPosixCalls::Linkat(const char* from, const char* to) {
  return Fails(FaultStep::kLink) ? -1 : PosixCalls::Linkat(from, to);
}
int FaultyPosixCalls::Rename(const char* from, const char* to) {
  return Fails(FaultStep::kRename) ? -1 : PosixCalls::Rename(from, to);
}
int FaultyPosixCalls::FsyncDirectory(int dir_fd) {
  return Fails(FaultStep::kDirectorySync) ? -1 : PosixCalls::FsyncDirectory(dir_fd);
}

}  // namespace etpack
