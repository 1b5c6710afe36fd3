// python/src/exir.h — the private functions behind etpack.exir
// (python/etpack/exir.py) and its Artifact type.

#ifndef ETPACK_PYTHON_EXIR_H_
#define ETPACK_PYTHON_EXIR_H_

#include <pybind11/pybind11.h>

namespace etpack::python {

// Adds Artifact and the _exir_* functions to `module`.
void DefineExir(pybind11::module_& module);

}  // namespace etpack::python

#endif  // ETPACK_PYTHON_EXIR_H_
