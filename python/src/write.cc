#include "write.h"

#include <time.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "errors.h"
#include "etpack/json.h"
#include "etpack/writer.h"

namespace py = pybind11;

namespace etpack::python {

namespace {

// Milliseconds of CLOCK_MONOTONIC_COARSE: a read of what the kernel last
// stored (a few ns), where steady_clock reads the time stamp counter (about
// 25 ns). The cancel callback reads it after every item written, and a
// 100 ms poll needs no better than its few milliseconds.
int64_t CoarseMilliseconds() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
  return int64_t{t.tv_sec} * 1000 + t.tv_nsec / 1000000;
}

}  // namespace

void RunCancellable(const std::function<Status(const WriteOptions&)>& work, py::handle progress) {
  // How often, at most, the cancel callback takes the GIL to look for a
  // signal: it is asked after every item written, which may be every few
  // bytes, and inside lock waits, where it is the only way out. Each look
  // may wait a switch interval (5 ms) for a busy Python thread, so a few
  // looks a second: a Ctrl-C stops within a tenth of a second, and the
  // writing thread never spends more than a few percent waiting.
  constexpr int64_t kSignalPollMs = 100;
  std::atomic<bool> cancelled{false};
  std::optional<py::error_already_set> raised;
  int64_t polled = CoarseMilliseconds();
  // Takes the GIL and calls `f`; an exception it raises cancels.
  auto with_gil = [&](const std::function<void()>& f) {
    py::gil_scoped_acquire gil;
    if (cancelled) return;
    try {
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      f();
    } catch (py::error_already_set& e) {
      raised = std::move(e);
      cancelled = true;
    }
  };
  WriteOptions write;
  // Runs on the working thread, which holds no GIL: every 64 MiB and once
  // at the end, before publishing.
  write.progress = [&](uint64_t done, uint64_t total) {
    with_gil([&] {
      if (!progress.is_none()) progress(done, total);
    });
  };
  // A Python exception (KeyboardInterrupt, or one the progress callback
  // raised) cancels the work: nothing is published, and it is re-raised.
  // A signal is looked for here too, so a wait for a lock (which reports no
  // progress) stops at Ctrl-C.
  write.cancel = [&] {
    if (!cancelled && CoarseMilliseconds() - polled >= kSignalPollMs) {
      with_gil([] {});
      polled = CoarseMilliseconds();
    }
    return cancelled.load();
  };
  Status status;
  {
    py::gil_scoped_release no_gil;
    status = work(write);
  }
  if (raised) {
    raised->restore();
    throw py::error_already_set();
  }
  Check(status);
}

std::string ReportText(const std::function<Result<json::Value>(const WriteOptions&)>& work,
                       py::handle progress) {
  json::Value report;
  RunCancellable(
      [&](const WriteOptions& write) -> Status {
        ETPACK_ASSIGN_OR_RETURN(report, work(write));
        return Status::OK();
      },
      progress);
  return json::Print(report);
}

void PlanAndWrite(const std::function<Status(ArtifactFiles* files)>& plan, py::handle progress) {
  RunCancellable(
      [&](const WriteOptions& write) {
        ArtifactFiles files;
        Status status = plan(&files);
        if (!status.ok()) return status;
        return WriteArtifactFiles(files, write);
      },
      progress);
}

}  // namespace etpack::python
