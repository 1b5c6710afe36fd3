#include "py_object_reader.h"

#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "errors.h"

namespace py = pybind11;

namespace etpack::python {
namespace {

PyObject* Py(ObjectReader::Object o) {
  return const_cast<PyObject*>(static_cast<const PyObject*>(o));
}

}  // namespace

std::string_view ClassName(PyObject* o) {
  if (o == Py_None) return "None";
  std::string_view name = Py_TYPE(o)->tp_name;
  const size_t dot = name.rfind('.');
  return dot == std::string_view::npos ? name : name.substr(dot + 1);
}

SourcePtr DataSource(Items& items, PyObject* data, const std::function<std::string()>& path) {
  if (data == nullptr) data = Py_None;
  if (PyObject_CheckBuffer(data)) return items.Borrow(data, path);
  if (data != Py_None && !PyUnicode_Check(data)) {
    PyObject* file = PyObject_GetAttrString(data, "_path");
    if (file != nullptr) {
      py::object file_path = py::reinterpret_steal<py::object>(file);
      if (IsPath(file_path)) return items.Source(file_path, path() + "._path");
      RaiseTypeError(path() + "._path: expected a path (str or os.PathLike) naming the " +
                     std::string(ClassName(data)) + "'s file, found " +
                     std::string(ClassName(file_path.ptr())));
    }
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) throw py::error_already_set();
    PyErr_Clear();
  }
  RaiseTypeError(path() + ": expected bytes or file-backed data (an object with a _path), found " +
                 std::string(ClassName(data)));
}

PyObjectReader::~PyObjectReader() {
  ReleaseTo(0);
  for (PyObject* k : keys_) Py_DECREF(k);
}

void PyObjectReader::Check(const Status& status) {
  if (status.ok()) return;
  if (exception_) {
    exception_->restore();
    exception_.reset();
    throw py::error_already_set();
  }
  if (type_error_) RaiseTypeError(status.message());
  python::Check(status);
}

ObjectReader::Key PyObjectReader::KeyOf(std::string_view name) {
  PyObject* key = PyUnicode_InternFromString(std::string(name).c_str());
  if (key == nullptr) {
    KeepException();  // Get() with it fails, raising this
    key = Py_None;
    Py_INCREF(key);
  }
  keys_.push_back(key);
  return key;
}

Status PyObjectReader::Get(Object object, Key key, Object* value, bool* found) {
  *value = nullptr;
  *found = false;
  if (!PyUnicode_Check(Py(key))) return Status(Code::kInvalidArgument, "a Python exception");
  PyObject* v = PyObject_GetAttr(Py(object), Py(key));
  if (v == nullptr) {
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return Pending();
    PyErr_Clear();
    return Status::OK();
  }
  held_.push_back(v);
  *found = true;
  if (v != Py_None) *value = v;
  return Status::OK();
}

void PyObjectReader::ReleaseTo(size_t mark) {
  while (!snapshots_.empty() && snapshots_.back().first >= mark) snapshots_.pop_back();
  while (!views_.empty() && views_.back().first >= mark) {
    PyBuffer_Release(&views_.back().second);
    views_.pop_back();
  }
  while (held_.size() > mark) {
    Py_DECREF(held_.back());
    held_.pop_back();
  }
}

ObjectReader::Kind PyObjectReader::KindOf(Object object) {
  PyObject* o = Py(object);
  if (o == nullptr || o == Py_None) return Kind::kNone;
  if (PyBool_Check(o)) return Kind::kBool;
  if (PyLong_Check(o)) return Kind::kInt;
  if (PyFloat_Check(o)) return Kind::kFloat;
  if (PyUnicode_Check(o)) return Kind::kString;
  if (PyList_Check(o) || PyTuple_Check(o)) return Kind::kList;
  if (PyObject_CheckBuffer(o)) return Kind::kBytes;
  return Kind::kOther;
}

std::string_view PyObjectReader::ClassName(Object object) {
  return object == nullptr ? "None" : python::ClassName(Py(object));
}

std::string PyObjectReader::Text(Object object) {
  if (object == nullptr) return "None";
  PyObject* text = PyObject_Str(Py(object));
  if (text == nullptr) {
    PyErr_Clear();
    return "?";
  }
  const char* s = PyUnicode_AsUTF8(text);
  std::string out = s != nullptr ? s : "?";
  if (s == nullptr) PyErr_Clear();
  Py_DECREF(text);
  return out;
}

bool PyObjectReader::Bool(Object object) { return Py(object) == Py_True; }

bool PyObjectReader::Int64(Object object, int64_t* value) {
  int overflow = 0;
  const long long x = PyLong_AsLongLongAndOverflow(Py(object), &overflow);
  if (overflow != 0 || (x == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    return false;
  }
  *value = x;
  return true;
}

bool PyObjectReader::UInt64(Object object, uint64_t* value) {
  const unsigned long long x = PyLong_AsUnsignedLongLong(Py(object));
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  *value = x;
  return true;
}

double PyObjectReader::Double(Object object) {
  PyObject* o = Py(object);
  if (PyFloat_Check(o)) return PyFloat_AS_DOUBLE(o);
  const double d = PyLong_AsDouble(o);
  if (d == -1.0 && PyErr_Occurred()) {
    // Too large for a double: an infinity of its sign.
    PyErr_Clear();
    return _PyLong_Sign(o) < 0 ? -HUGE_VAL : HUGE_VAL;
  }
  return d;
}

Status PyObjectReader::Utf8(Object object, std::string_view* text) {
  Py_ssize_t n = 0;
  const char* s = PyUnicode_AsUTF8AndSize(Py(object), &n);
  if (s == nullptr) {
    PyErr_Clear();
    return InvalidArgument(
        "a str that is not valid Unicode (a lone surrogate?) cannot be stored as UTF-8");
  }
  *text = std::string_view(s, static_cast<size_t>(n));
  return Status::OK();
}

Status PyObjectReader::ItemsOf(Object list, bool stable, ItemSpan* items) {
  PyObject* l = Py(list);
  if (!stable) {
    // Read in place: reading scalars and strings runs no Python code.
    items->items = reinterpret_cast<const Object*>(PySequence_Fast_ITEMS(l));
    items->size = static_cast<size_t>(PySequence_Fast_GET_SIZE(l));
    return Status::OK();
  }
  // A snapshot, with None as nullptr.
  PyObject* tuple = PySequence_Tuple(l);
  if (tuple == nullptr) return Pending();
  const Py_ssize_t n = PyTuple_GET_SIZE(tuple);
  std::vector<Object>& copy =
      snapshots_.emplace_back(held_.size(), std::vector<Object>(static_cast<size_t>(n))).second;
  held_.push_back(tuple);
  for (Py_ssize_t k = 0; k < n; ++k) {
    PyObject* item = PyTuple_GET_ITEM(tuple, k);
    copy[static_cast<size_t>(k)] = item == Py_None ? nullptr : item;
  }
  items->items = copy.data();
  items->size = copy.size();
  return Status::OK();
}

Status PyObjectReader::BytesOf(Object object, const uint8_t** data, size_t* size) {
  Py_buffer view;
  if (PyObject_GetBuffer(Py(object), &view, PyBUF_C_CONTIGUOUS) != 0) {
    PyErr_Clear();
    return WrongType("a " + std::string(ClassName(object)) +
                     " whose buffer is not C-contiguous bytes");
  }
  views_.emplace_back(held_.size(), view);
  *data = static_cast<const uint8_t*>(view.buf);
  *size = static_cast<size_t>(view.len);
  return Status::OK();
}

Result<SourcePtr> PyObjectReader::DataOf(Object object, const std::function<std::string()>& path) {
  try {
    return DataSource(items_, Py(object), path);
  } catch (py::error_already_set& e) {
    if (e.matches(PyExc_TypeError)) type_error_ = true;
    exception_.emplace(std::move(e));
    return Status(Code::kInvalidArgument, "a Python exception");
  }
}

Status PyObjectReader::WrongType(std::string message) {
  type_error_ = true;
  return InvalidArgument(std::move(message));
}

Status PyObjectReader::Pending() {
  KeepException();
  return Status(Code::kInvalidArgument, "a Python exception");
}

}  // namespace etpack::python
