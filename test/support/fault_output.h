// fault_output.h (test support) — outputs that fail on purpose, to prove that
// every failure leaves the destination as it was and nothing behind.
//
// Two levels: NewFaultInjectingOutputFs wraps any OutputFs and fails one
// step of the OutputFile interface; FaultyPosixCalls makes the kernel call
// behind a step fail inside the POSIX output itself (the only level where a
// window can fail to map).

#ifndef ETPACK_TEST_FAULT_OUTPUT_H_
#define ETPACK_TEST_FAULT_OUTPUT_H_

#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>

#include "etpack/output.h"
#include "io/posix_calls.h"

namespace etpack {

enum class FaultStep {
  kNone,
  kReserve,        // Reserve        / fallocate
  kMap,            // (POSIX only)   / mmap of a window
  kWrite,          // Write          / pwrite, copy_file_range and populating a window
  kSync,           // Sync           / fdatasync
  kLink,           // Link           / linkat
  kRename,         // Rename         / rename
  kDirectorySync,  // SyncDirectory  / fsync of the directory
};

const char* FaultStepName(FaultStep step);

struct Fault {
  FaultStep step = FaultStep::kNone;
  // Which output fails at `step`, counted in the order the outputs were
  // created (0 = the first).
  int output = 0;
  // Independently of `step`: the write that takes the total written by all
  // outputs past this many bytes fails, after the bytes below the limit went
  // through (as a device that fills up mid-write).
  uint64_t after_bytes = ~uint64_t{0};
};

// Forwards to `inner` except where `fault` says; an injected failure is
// kIoError("injected fault: ...") and sticks to its output. kMap cannot be
// injected at this level: Create() refuses it with kInvalidArgument.
// REQUIRES: `inner` outlives the result and its outputs.
std::unique_ptr<OutputFs> NewFaultInjectingOutputFs(OutputFs* inner, const Fault& fault);

// System calls that fail with `err` at `step` (every call of that kind, on
// every output) and behave otherwise.
class FaultyPosixCalls : public PosixCalls {
 public:
  explicit FaultyPosixCalls(FaultStep step, int err = EIO) : step_(step), err_(err) {}

  int Preallocate(int fd, off_t len) override;
  void* Mmap(size_t len, int fd, off_t offset) override;
  int PopulateWrite(void* addr, size_t len) override;
  ssize_t Pwrite(int fd, const void* buf, size_t n, off_t offset) override;
  ssize_t CopyFileRange(int in_fd, off_t* in_off, int out_fd, off_t* out_off, size_t len) override;
  int Fdatasync(int fd) override;
  int Linkat(const char* from, const char* to) override;
  int Rename(const char* from, const char* to) override;
  int FsyncDirectory(int dir_fd) override;

 private:
  bool Fails(FaultStep step) const;

  const FaultStep step_;
  const int err_;
};

}  // namespace etpack

#endif  // ETPACK_TEST_FAULT_OUTPUT_H_
