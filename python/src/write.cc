#include "write.h"

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "errors.h"
#include "etpack/output.h"
#include "io/publish_steps.h"

namespace py = pybind11;

namespace etpack::python {
namespace {

Status Cancelled() { return Status(Code::kIoError, "cancelled from Python"); }

// Forwards to a POSIX output until `cancelled` is set; from then on every
// write and the sync that publishing starts with fail, so the output is
// discarded and its destination left as it was.
class CancellableFile final : public OutputFile {
 public:
  CancellableFile(std::unique_ptr<OutputFile> inner, const std::atomic<bool>& cancelled)
      : inner_(std::move(inner)), cancelled_(cancelled) {}

  const std::string& destination() const override { return inner_->destination(); }
  const std::string& target() const override { return inner_->target(); }
  bool Replaces(int fd) const override { return inner_->Replaces(fd); }
  Status Reserve(uint64_t size) override { return inner_->Reserve(size); }
  Status Write(uint64_t offset, const Source& source) override {
    if (cancelled_) return Cancelled();
    return inner_->Write(offset, source);
  }
  uint64_t bytes_written() const override { return inner_->bytes_written(); }
  uint64_t bytes_shared() const override { return inner_->bytes_shared(); }
  Status Sync() override {
    if (cancelled_) return Cancelled();
    return inner_->Sync();
  }

 protected:
  Status Link() override { return PublishSteps::Link(*inner_); }
  Status Rename() override { return PublishSteps::Rename(*inner_); }
  void Unplace() override { PublishSteps::Unplace(*inner_); }
  Status SyncDirectory() override { return PublishSteps::SyncDirectory(*inner_); }
  bool replaced_existing() const override { return PublishSteps::replaced_existing(*inner_); }
  std::string lock_directory() const override { return PublishSteps::lock_directory(*inner_); }

 private:
  std::unique_ptr<OutputFile> inner_;
  const std::atomic<bool>& cancelled_;
};

class CancellableFs final : public OutputFs {
 public:
  explicit CancellableFs(const std::atomic<bool>& cancelled)
      : inner_(NewPosixOutputFs()), cancelled_(cancelled) {}

  Result<std::unique_ptr<OutputFile>> Create(const std::string& destination) override {
    ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<OutputFile> out, inner_->Create(destination));
    return std::unique_ptr<OutputFile>(new CancellableFile(std::move(out), cancelled_));
  }

 private:
  std::unique_ptr<OutputFs> inner_;
  const std::atomic<bool>& cancelled_;
};

}  // namespace

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
  CancellableFs fs(cancelled);
  Status status;
  {
    py::gil_scoped_release no_gil;
    ArtifactFiles files;
    status = plan(&files);
    if (status.ok()) status = WriteArtifactFiles(fs, files, on_progress);
  }
  if (raised) {
    raised->restore();
    throw py::error_already_set();
  }
  Check(status);
}

}  // namespace etpack::python
