#include "items.h"

#include <optional>
#include <string>
#include <vector>

#include "errors.h"

namespace py = pybind11;

namespace etpack::python {
namespace {

// Deeper than any program the schema allows; stops a self-containing dict.
constexpr int kMaxDepth = 512;

std::string TypeName(py::handle object) {
  return py::str(py::type::handle_of(object).attr("__name__"));
}

// The message of the pending Python error, which is cleared.
std::string TakeErrorMessage() {
  py::error_already_set e;
  return py::str(e.value());
}

json::Value Tree(py::handle o, const std::string& path, int depth) {
  if (depth > kMaxDepth) {
    Raise(Code::kInvalidArgument, path + ": nested more than " + std::to_string(kMaxDepth) +
                                      " levels deep (does a dict or list contain itself?)");
  }
  PyObject* p = o.ptr();
  if (o.is_none()) return json::Value::Null();
  if (PyBool_Check(p)) return json::Value::Bool(p == Py_True);
  if (PyLong_Check(p)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(p, &overflow);
    if (overflow == 0 && !PyErr_Occurred()) return json::Value::Int(v);
    PyErr_Clear();
    if (overflow > 0) {
      const unsigned long long u = PyLong_AsUnsignedLongLong(p);
      if (!PyErr_Occurred()) return json::Value::UInt(u);
      PyErr_Clear();
    }
    Raise(Code::kInvalidArgument,
          path + " = " + std::string(py::str(o)) + " does not fit in 64 bits");
  }
  if (PyFloat_Check(p)) return json::Value::Double(PyFloat_AsDouble(p));
  if (PyUnicode_Check(p)) return json::Value::String(Utf8Of(o, path));
  if (PyDict_Check(p)) {
    std::vector<json::Value::Member> members;
    for (auto item : o.cast<py::dict>()) {
      if (!PyUnicode_Check(item.first.ptr())) {
        RaiseTypeError(path + ": keys must be str, not " + TypeName(item.first));
      }
      std::string key = Utf8Of(item.first, path + " key");
      json::Value value = Tree(item.second, path + "." + key, depth + 1);
      members.emplace_back(std::move(key), std::move(value));
    }
    return json::Value::Object(std::move(members));
  }
  if (PyList_Check(p) || PyTuple_Check(p)) {
    std::vector<json::Value> items;
    size_t i = 0;
    for (py::handle item : o) {
      items.push_back(Tree(item, path + "[" + std::to_string(i++) + "]", depth + 1));
    }
    return json::Value::Array(std::move(items));
  }
  if (PyBytes_Check(p) || PyByteArray_Check(p)) {
    // Small [ubyte] fields (a CompileSpec value) as the tree holds them.
    const std::string bytes = PyBytes_Check(p)
                                  ? std::string(o.cast<py::bytes>())
                                  : std::string(PyByteArray_AsString(p), PyByteArray_Size(p));
    std::vector<json::Value> items;
    for (unsigned char c : bytes) items.push_back(json::Value::Int(c));
    return json::Value::Array(std::move(items));
  }
  RaiseTypeError(path + ": a " + TypeName(o) +
                 " has no JSON form (expected dict, list, str, int, float, bool, None or bytes)");
}

}  // namespace

uint64_t UInt64Of(py::handle value, const std::string& what) {
  if (!PyLong_Check(value.ptr()) || PyBool_Check(value.ptr())) {
    RaiseTypeError(what + " must be an int, not " + TypeName(value));
  }
  const unsigned long long v = PyLong_AsUnsignedLongLong(value.ptr());
  if (PyErr_Occurred()) {
    PyErr_Clear();
    Raise(Code::kOutOfRange,
          what + " = " + std::string(py::str(value)) + " is not a 64-bit unsigned integer");
  }
  return v;
}

int64_t IntIn(py::handle value, const std::string& what, int64_t min, int64_t max) {
  if (!PyLong_Check(value.ptr()) || PyBool_Check(value.ptr())) {
    RaiseTypeError(what + " must be an int, not " + TypeName(value));
  }
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
  if (overflow == 0 && v == -1 && PyErr_Occurred()) throw py::error_already_set();
  if (overflow != 0 || v < min || v > max) {
    Raise(Code::kOutOfRange, what + " = " + std::string(py::str(value)) + " is outside [" +
                                 std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return v;
}

Items::~Items() {
  for (Py_buffer& view : views_) PyBuffer_Release(&view);
}

bool IsPath(py::handle object) {
  return PyUnicode_Check(object.ptr()) || py::hasattr(object, "__fspath__");
}

std::string Utf8Of(py::handle object, const std::string& what) {
  if (!PyUnicode_Check(object.ptr()))
    RaiseTypeError(what + " must be a str, not " + TypeName(object));
  Py_ssize_t size = 0;
  const char* bytes = PyUnicode_AsUTF8AndSize(object.ptr(), &size);
  if (bytes == nullptr) {
    const std::string why = TakeErrorMessage();
    Raise(Code::kInvalidArgument,
          what + " " + std::string(py::repr(object)) + " has no UTF-8 form (" + why + ")");
  }
  return std::string(bytes, static_cast<size_t>(size));
}

py::object PathObject(const std::string& path) {
  PyObject* decoded =
      PyUnicode_DecodeFSDefaultAndSize(path.data(), static_cast<Py_ssize_t>(path.size()));
  if (decoded == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(decoded);
}

std::vector<std::string> PathsOf(py::handle objects, const std::string& what) {
  std::vector<std::string> paths;
  for (py::handle p : objects) {
    paths.push_back(PathOf(p, what + "[" + std::to_string(paths.size()) + "]"));
  }
  return paths;
}

std::string PathOf(py::handle object, const std::string& what) {
  if (!IsPath(object) && !PyBytes_Check(object.ptr())) {
    RaiseTypeError(what + " must be a path (str, bytes or os.PathLike), not " + TypeName(object));
  }
  // The file system's bytes: a str goes through os.fsencode, as open() does
  // (so names that are not UTF-8, decoded with surrogateescape, round-trip).
  const py::module_ os = py::module_::import("os");
  py::object path = os.attr("fspath")(object);
  if (PyUnicode_Check(path.ptr())) {
    PyObject* encoded = PyUnicode_EncodeFSDefault(path.ptr());
    if (encoded == nullptr) {
      const std::string why = TakeErrorMessage();
      Raise(Code::kInvalidArgument,
            what + " " + std::string(py::repr(path)) + " is not a file name (" + why + ")");
    }
    path = py::reinterpret_steal<py::object>(encoded);
  }
  if (!PyBytes_Check(path.ptr())) {
    RaiseTypeError(what + ": os.fspath gave a " + TypeName(path) + ", not str or bytes");
  }
  return std::string(PyBytes_AS_STRING(path.ptr()),
                     static_cast<size_t>(PyBytes_GET_SIZE(path.ptr())));
}

// A buffer export alone does not keep every exporter from moving the bytes.
// bytearray, array.array, mmap (close and resize), io.BytesIO and a
// memoryview (release) refuse while exported, so holding the export (views_)
// pins them. numpy does not: ndarray.resize(..., refcheck=False) skips the
// reference count, the only sign of an export it looks at, and reallocates
// (the writer would then read freed memory). It does refuse an array that
// has weak references ("cannot resize an array that references or is
// referenced by another array"). So the object and what its memory belongs
// to (an array's .base chain, a memoryview's exporter) get a weak reference
// each until the items are released. ctypes honours neither:
// ctypes.resize() reallocates whatever exports or references exist, so
// memory that belongs to a ctypes object cannot be pinned (false).
bool Items::Pin(py::handle object) {
  // bytes: immutable, no weak references, no base to follow (an exporter's
  // constants are bytes: tens of thousands per call).
  if (PyBytes_CheckExact(object.ptr())) return true;
  // Without numpy (or ctypes) imported there is no ndarray (or ctypes
  // object) to follow. Looked up once per call (while absent, again each
  // time: an object's getattr may import it).
  if (!ndarray_) ndarray_ = Loaded("numpy", "ndarray");
  if (!cdata_) {
    // ctypes.Array, Structure, _SimpleCData... all derive from _ctypes._CData.
    const py::object simple = Loaded("_ctypes", "_SimpleCData");
    if (simple) cdata_ = py::getattr(simple, "__base__", py::none());
  }
  py::object o = py::reinterpret_borrow<py::object>(object);
  for (int depth = 0; depth < kMaxDepth && !o.is_none(); ++depth) {
    if (cdata_ && !cdata_.is_none() && PyObject_IsInstance(o.ptr(), cdata_.ptr()) == 1) {
      return false;
    }
    if (PyErr_Occurred()) throw py::error_already_set();
    if (PyType_SUPPORTS_WEAKREFS(Py_TYPE(o.ptr()))) {
      PyObject* ref = PyWeakref_NewRef(o.ptr(), nullptr);
      if (ref == nullptr) throw py::error_already_set();
      pins_.push_back(py::reinterpret_steal<py::object>(ref));
    }
    if (PyMemoryView_Check(o.ptr())) {
      PyObject* exporter = PyMemoryView_GET_BUFFER(o.ptr())->obj;
      if (exporter == nullptr) break;
      o = py::reinterpret_borrow<py::object>(exporter);
    } else if (ndarray_ && !ndarray_.is_none() && py::isinstance(o, ndarray_)) {
      o = o.attr("base");
    } else {
      break;
    }
  }
  return true;
}

// `module.name` when the module is imported, None when it is blocked
// (sys.modules[module] = None) or has no such name; null when not imported.
py::object Items::Loaded(const char* module, const char* name) {
  PyObject* m = PyImport_GetModule(py::str(module).ptr());
  if (m == nullptr) {
    if (PyErr_Occurred()) throw py::error_already_set();
    return py::object();
  }
  const py::object mod = py::reinterpret_steal<py::object>(m);
  if (mod.is_none()) return py::none();
  return py::getattr(mod, name, py::none());
}

SourcePtr Items::Borrow(py::handle object, const std::function<std::string()>& what) {
  Py_buffer view;
  // C-contiguous: the bytes in memory order are the item's bytes. Read-only
  // is enough, and a writable exporter still refuses to resize meanwhile.
  if (PyObject_GetBuffer(object.ptr(), &view, PyBUF_C_CONTIGUOUS) != 0) {
    Raise(Code::kInvalidArgument, what() + ": the " + TypeName(object) +
                                      " is not one C-contiguous block of memory (" +
                                      TakeErrorMessage() + "); pass a contiguous copy");
  }
  // Held before Pin(), which may raise: the items release it either way.
  views_.push_back(view);
  if (!Pin(object)) {
    // Memory its owner may free or move while borrowed (Pin): a copy, made
    // now under the GIL (so no Python thread changes it meanwhile), kept
    // as long as the borrowed buffers are. Not shared by address: the
    // original's address may be reused by other memory.
    PyObject* copy = PyBytes_FromStringAndSize(static_cast<const char*>(view.buf), view.len);
    PyBuffer_Release(&views_.back());
    views_.pop_back();
    if (copy == nullptr) throw py::error_already_set();
    copies_.push_back(py::reinterpret_steal<py::object>(copy));
    return MemorySource(PyBytes_AS_STRING(copy), static_cast<uint64_t>(PyBytes_GET_SIZE(copy)));
  }
  const auto key = std::make_pair(static_cast<const void*>(view.buf), view.len);
  Borrowed& borrowed = memory_[key];
  if (borrowed.source) {
    // The same memory again (one object given for many keys). The export
    // held since its first time keeps it only when it is the same
    // exporter's: another one (a bytearray under an ndarray that dropped
    // its own export) must stay exported as well.
    if (borrowed.exporter == view.obj) {
      PyBuffer_Release(&views_.back());
      views_.pop_back();
    }
    return borrowed.source;
  }
  borrowed.source = MemorySource(view.buf, static_cast<uint64_t>(view.len));
  borrowed.exporter = view.obj;
  return borrowed.source;
}

SourcePtr Items::Source(py::handle item, const std::string& what) {
  if (item.is_none()) RaiseTypeError(what + " is None; give bytes, an array, a path or a range");
  if (IsPath(item) || PyTuple_Check(item.ptr())) {
    std::string path;
    uint64_t offset = 0;
    std::optional<uint64_t> length;  // none: the whole file
    if (PyTuple_Check(item.ptr())) {
      py::tuple range = py::reinterpret_borrow<py::tuple>(item);
      if (range.size() != 3) {
        RaiseTypeError(what + ": a file range is (path, offset, length), not a tuple of " +
                       std::to_string(range.size()));
      }
      path = PathOf(range[0], what + "[0]");
      offset = UInt64Of(range[1], what + ".offset");
      length = UInt64Of(range[2], what + ".length");
    } else {
      path = PathOf(item, what);
    }
    SourcePtr& source = files_[{path, offset, length}];
    if (!source) {
      Result<SourcePtr> file = length ? FileSource(path, offset, *length) : FileSource(path);
      if (!file.ok()) Check(file.status().WithContext(what));
      source = *file;
    }
    return source;
  }
  if (!PyObject_CheckBuffer(item.ptr())) {
    RaiseTypeError(what + ": a " + TypeName(item) +
                   " is not a data item (give bytes or another buffer, a numpy array, a CPU "
                   "torch tensor, a path or a (path, offset, length) range)");
  }
  return Borrow(item, [&] { return what; });
}

json::Value JsonTree(py::handle object, const std::string& path) { return Tree(object, path, 0); }

}  // namespace etpack::python
