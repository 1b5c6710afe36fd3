#include "progress.h"

#include <unistd.h>

#include <cinttypes>
#include <cstdio>

#include "commands.h"

namespace etpack::cli {

namespace {

std::string FormatDuration(double seconds) {
  char buf[32];
  const auto s = static_cast<uint64_t>(seconds + 0.5);
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%" PRIu64 "h%02" PRIu64 "m", s / 3600, s / 60 % 60);
  } else if (s >= 60) {
    std::snprintf(buf, sizeof buf, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%" PRIu64 "s", s);
  }
  return buf;
}

}  // namespace

ProgressLine::ProgressLine(std::string label)
    : label_(std::move(label)),
      enabled_(isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

ProgressLine::~ProgressLine() { Clear(); }

WriteOptions ProgressLine::options() {
  WriteOptions options;
  if (enabled_) options.progress = [this](uint64_t done, uint64_t total) { Update(done, total); };
  return options;
}

void ProgressLine::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!shown_) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  shown_ = false;
}

void ProgressLine::Update(uint64_t done, uint64_t total) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (done >= total) {
    if (shown_) {
      std::fputs("\r\033[K", stderr);
      std::fflush(stderr);
      shown_ = false;
    }
    return;
  }
  if (now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;

  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
  std::string line = "\r\033[K" + label_ + "  " + HumanBytes(done) + " / " + HumanBytes(total);
  char buf[64];
  std::snprintf(buf, sizeof buf, "  %.0f MiB/s", rate / (1024.0 * 1024.0));
  line += buf;
  if (rate > 0) {
    line += "  ETA " + FormatDuration(static_cast<double>(total - done) / rate);
  }
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
  shown_ = true;
}

}  // namespace etpack::cli
