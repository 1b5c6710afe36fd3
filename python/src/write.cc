#include "write.h"

#include <atomic>
#include <optional>
#include <string>
#include <utility>

#include "errors.h"
#include "etpack/writer.h"

namespace py = pybind11;

namespace etpack::python {

void PlanAndWrite(const std::function<Status(ArtifactFiles* files)>& plan, py::handle progress) {
  std::atomic<bool> cancelled{false};
  std::optional<py::error_already_set> raised;
  // Runs on the writing thread, which holds no GIL: every 64 MiB and once
  // at the end, before publishing.
  ProgressFn on_progress = [&](uint64_t done, uint64_t total) {
    py::gil_scoped_acquire gil;
    if (cancelled) return;
    try {
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      if (!progress.is_none()) progress(done, total);
    } catch (py::error_already_set& e) {
      raised = std::move(e);
      cancelled = true;
    }
  };
  // A Python exception (KeyboardInterrupt, or one the progress callback
  // raised) cancels the write: nothing is published, and it is re-raised.
  CancelFn cancel = [&] { return cancelled.load(); };
  Status status;
  {
    py::gil_scoped_release no_gil;
    ArtifactFiles files;
    status = plan(&files);
    if (status.ok())
      status = WriteArtifactFiles(files, OutputOptions{}, on_progress, nullptr, cancel);
  }
  if (raised) {
    raised->restore();
    throw py::error_already_set();
  }
  Check(status);
}

}  // namespace etpack::python
