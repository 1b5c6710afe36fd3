// python/src/write.h — writing planned artifacts with the GIL released.
//
// The library streams every byte with the GIL released. Its progress
// callback (at most once per 64 MiB written, and at the end) takes the GIL only to
// call the caller's progress(done, total) and to look for a pending signal
// (Ctrl-C); its cancel callback looks for one too (at most every 100 ms:
// write.cc, kSignalPollMs), so a wait for another writer's lock stops at
// Ctrl-C as well. When either raises, the remaining writes and the
// publishing fail, so no file appears, and the Python exception is raised
// once the write has unwound.

#ifndef ETPACK_PYTHON_WRITE_H_
#define ETPACK_PYTHON_WRITE_H_

#include <pybind11/pybind11.h>

#include <functional>
#include <string>

#include "etpack/json.h"
#include "etpack/status.h"
#include "etpack/writer.h"

namespace etpack::python {

// Runs `work` with the GIL released, handing it write options whose
// progress calls `progress` (None or callable) and whose cancel asks Python
// about pending signals at most every 100 ms; a Python exception from
// either cancels the work and is raised once it returns, else its failure
// is. REQUIRES: the GIL is held; `work` touches no Python object.
void RunCancellable(const std::function<Status(const WriteOptions&)>& work,
                    pybind11::handle progress);

// RunCancellable for work that ends in a report: the report's JSON text
// (json::Print), which etpack/__init__.py reads with json.loads.
std::string ReportText(const std::function<Result<json::Value>(const WriteOptions&)>& work,
                       pybind11::handle progress);

// Runs `plan` (planning; no Python objects may be touched) and then writes
// `files` (set by plan) with the GIL released; raises the first failure.
// REQUIRES: the GIL is held; `progress` is None or callable.
void PlanAndWrite(const std::function<Status(ArtifactFiles* files)>& plan,
                  pybind11::handle progress);

}  // namespace etpack::python

#endif  // ETPACK_PYTHON_WRITE_H_
