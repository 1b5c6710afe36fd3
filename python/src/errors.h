// python/src/errors.h — etpack.Error and its subclasses, one per status code.
//
// A failed Status becomes a Python exception carrying the library's message
// (which names the file, the field and the value). Raising goes through
// pybind11's error_already_set, so nothing but a Python exception ever
// leaves the module.

#ifndef ETPACK_PYTHON_ERRORS_H_
#define ETPACK_PYTHON_ERRORS_H_

#include <pybind11/pybind11.h>

#include <string>
#include <utility>

#include "etpack/status.h"

namespace etpack::python {

// Creates Error and its subclasses in `module`.
void DefineErrors(pybind11::module_& module);

// Raises the exception class of `code` with `message`.
[[noreturn]] void Raise(Code code, const std::string& message);

// Raises for a failed status; nothing for OK.
inline void Check(const Status& status) {
  if (!status.ok()) Raise(status.code(), status.message());
}

template <typename T>
T Take(Result<T> result) {
  Check(result.status());
  return std::move(result).value();
}

// A TypeError naming what was wrong.
[[noreturn]] void RaiseTypeError(const std::string& message);

}  // namespace etpack::python

#endif  // ETPACK_PYTHON_ERRORS_H_
