// python/src/exir_program_walk.h — ExecuTorch's exporter objects (read by
// attribute name, as docs/python.md describes them) to the library's
// program and data inputs, without JSON and without copying a byte.
//
// The Program itself is read by the library (ReadProgramObjects,
// etpack/program_objects.h) through a PyObjectReader (py_object_reader.h),
// which builds the flatbuffer from one getattr per field. What lies outside
// the Program schema is read here: mutable data, named data, a data
// payload, the emitter's external constants. Bulk bytes become borrowed
// sources (Items), as the reader makes them.
//
// Errors raise with the path in the object tree, the type found and the
// type expected: TypeError for a missing attribute or a wrong type,
// etpack.InvalidArgumentError for a value out of range (an enum value the
// schema lacks, an index past its list, a key in two tags). Every function
// here needs the GIL.

#ifndef ETPACK_PYTHON_EXIR_PROGRAM_WALK_H_
#define ETPACK_PYTHON_EXIR_PROGRAM_WALK_H_

#include <pybind11/pybind11.h>

#include <string>
#include <utility>
#include <vector>

#include "etpack/ptd.h"
#include "etpack/pte.h"
#include "items.h"

namespace etpack::python {

// What errors call the three parts of a program's input.
struct PteNames {
  std::string program;       // "pte_file.program"
  std::string mutable_data;  // "pte_file.mutable_data"
  std::string named_data;    // "pte_file.named_data"
};

// A program (a Program-like object), its mutable data (a list of Buffer, or
// None) and its named data (NamedDataStoreOutput-like, or None: only its
// pte_data is read) as PlanPte takes them.
PteInput WalkPteFile(Items& items, const PteNames& names, pybind11::handle program,
                     pybind11::handle mutable_data, pybind11::handle named_data);

// A DataPayload-like object (buffers, named_data) as PlanPtd takes it.
PtdInput WalkDataPayload(Items& items, const std::string& root, pybind11::handle payload);

struct ExirInputs {
  PteInput program;
  // One .ptd per tag, in the order tags first appear: the emitter's
  // external constants (each under its fully_qualified_name with the layout
  // of the program's EXTERNAL tensor of that name, alignment 1), then the
  // store's external_data merged in.
  std::vector<std::pair<std::string, PtdInput>> data;
  bool merged = false;  // the emitter had external constants
};

// What serialize_for_executorch places where: the program with the store's
// pte_data only, and the .ptd inputs of the external data.
ExirInputs WalkForExecutorch(Items& items, pybind11::handle emitter_output,
                             pybind11::handle named_data_store);

}  // namespace etpack::python

#endif  // ETPACK_PYTHON_EXIR_PROGRAM_WALK_H_
