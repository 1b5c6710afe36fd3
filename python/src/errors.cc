#include "errors.h"

namespace py = pybind11;

namespace etpack::python {
namespace {

struct ErrorClass {
  Code code;
  const char* name;
  PyObject* extra_base;  // a built-in class the error also is, or nullptr
  PyObject* type = nullptr;
};

// The classes live as long as the interpreter (module attributes hold them).
PyObject* base_error = nullptr;
ErrorClass classes[] = {
    // Callers catching ValueError for a bad argument catch these too.
    {Code::kInvalidArgument, "InvalidArgumentError", PyExc_ValueError},
    {Code::kNotFound, "NotFoundError", nullptr},
    {Code::kCorrupt, "CorruptError", nullptr},
    {Code::kOutOfRange, "OutOfRangeError", PyExc_ValueError},
    {Code::kIoError, "IoError", nullptr},
    {Code::kUnimplemented, "UnimplementedError", nullptr},
};

}  // namespace

void DefineErrors(py::module_& module) {
  base_error = PyErr_NewExceptionWithDoc(
      "etpack.Error", "A failure reported by the etpack library; `code` names its kind.",
      PyExc_Exception, nullptr);
  if (base_error == nullptr) throw py::error_already_set();
  module.attr("Error") = py::handle(base_error);
  for (ErrorClass& c : classes) {
    py::tuple bases = c.extra_base
                          ? py::make_tuple(py::handle(base_error), py::handle(c.extra_base))
                          : py::make_tuple(py::handle(base_error));
    const std::string qualified = std::string("etpack.") + c.name;
    c.type = PyErr_NewException(qualified.c_str(), bases.ptr(), nullptr);
    if (c.type == nullptr) throw py::error_already_set();
    py::handle(c.type).attr("code") = CodeName(c.code);
    module.attr(c.name) = py::handle(c.type);
  }
}

namespace {

// Messages may quote file names that are not UTF-8 (bytes paths): those
// bytes are shown as \xNN rather than lost with the message.
[[noreturn]] void RaiseText(PyObject* type, const std::string& message) {
  PyObject* text = PyUnicode_DecodeUTF8(message.data(), static_cast<Py_ssize_t>(message.size()),
                                        "backslashreplace");
  if (text != nullptr) {
    PyErr_SetObject(type, text);
    Py_DECREF(text);
  }
  throw py::error_already_set();
}

}  // namespace

void Raise(Code code, const std::string& message) {
  PyObject* type = base_error;
  for (const ErrorClass& c : classes) {
    if (c.code == code) type = c.type;
  }
  RaiseText(type, message);
}

void RaiseTypeError(const std::string& message) { RaiseText(PyExc_TypeError, message); }

}  // namespace etpack::python
