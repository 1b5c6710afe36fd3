// apps/progress.h — a one-line progress display for long writes.
//
// Draws "<label>  1.2 GiB / 6.0 GiB  1450 MiB/s  ETA 3s" on stderr,
// redrawn at most ten times a second, and erases it when the work is done
// or the display is destroyed. Does nothing at all when stderr is not a
// terminal, so logs and pipes stay clean.

#ifndef ETPACK_APPS_PROGRESS_H_
#define ETPACK_APPS_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "etpack/writer.h"

namespace etpack::cli {

class ProgressLine {
 public:
  explicit ProgressLine(std::string label);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // Write options (WriteArtifact*, Share, UpdateWeights, ...) whose
  // progress draws this line; the rest as WriteOptions has them. They refer
  // to this object, which must outlive every call. Safe to call from
  // several threads.
  WriteOptions options();

  // Erases the line if one is shown.
  void Clear();

 private:
  void Update(uint64_t done, uint64_t total);

  const std::string label_;
  const bool enabled_;
  std::mutex mu_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace etpack::cli

#endif  // ETPACK_APPS_PROGRESS_H_
