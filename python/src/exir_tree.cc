#include "exir_tree.h"

#include <cmath>
#include <deque>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "errors.h"
#include "etpack/error_path.h"
#include "etpack/external_data.h"
#include "etpack/program_objects.h"

namespace py = pybind11;

namespace etpack::python {
namespace {

// type(x).__name__: a class defined in Python has its bare name in tp_name,
// an extension type "module.Name".
std::string_view ClassName(PyObject* o) {
  if (o == Py_None) return "None";
  std::string_view name = Py_TYPE(o)->tp_name;
  const size_t dot = name.rfind('.');
  return dot == std::string_view::npos ? name : name.substr(dot + 1);
}

bool IsInt(PyObject* o) { return PyLong_Check(o) && !PyBool_Check(o); }

PyObject* Py(ObjectReader::Object o) {
  return const_cast<PyObject*>(static_cast<const PyObject*>(o));
}

// Python objects as the library reads a program from them
// (etpack/object_reader.h). Everything it hands out stays referenced until
// the library releases it or the reader is destroyed, so no Python code run
// by an attribute read can free an object the library still walks. A Python
// exception other than a missing attribute is kept and raised again by
// Check().
class PyObjectReader final : public ObjectReader {
 public:
  explicit PyObjectReader(python::Items& items) : items_(items) {}
  ~PyObjectReader() override {
    ReleaseTo(0);
    for (PyObject* k : keys_) Py_DECREF(k);
  }
  PyObjectReader(const PyObjectReader&) = delete;
  PyObjectReader& operator=(const PyObjectReader&) = delete;

  // Raises for a failed status: the Python exception it stands for, a
  // TypeError for a wrong type, else etpack's exception of its code.
  void Check(const Status& status) {
    if (status.ok()) return;
    if (exception_) {
      exception_->restore();
      exception_.reset();
      throw py::error_already_set();
    }
    if (type_error_) RaiseTypeError(status.message());
    python::Check(status);
  }

  Key KeyOf(std::string_view name) override {
    PyObject* key = PyUnicode_InternFromString(std::string(name).c_str());
    if (key == nullptr) {
      KeepException();  // Get() with it fails, raising this
      key = Py_None;
      Py_INCREF(key);
    }
    keys_.push_back(key);
    return key;
  }

  Status Get(Object object, Key key, Object* value, bool* found) override {
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

  // A table's fields are dropped when it is built, while they are cached;
  // dropping a million objects at the end would miss the cache on each.
  size_t Mark() override { return held_.size(); }
  void ReleaseTo(size_t mark) override {
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

  Kind KindOf(Object object) override {
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

  std::string_view ClassName(Object object) override {
    return object == nullptr ? "None" : python::ClassName(Py(object));
  }

  std::string Text(Object object) override {
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

  bool Bool(Object object) override { return Py(object) == Py_True; }

  bool Int64(Object object, int64_t* value) override {
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(Py(object), &overflow);
    if (overflow != 0 || (x == -1 && PyErr_Occurred())) {
      PyErr_Clear();
      return false;
    }
    *value = x;
    return true;
  }

  bool UInt64(Object object, uint64_t* value) override {
    const unsigned long long x = PyLong_AsUnsignedLongLong(Py(object));
    if (PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    *value = x;
    return true;
  }

  double Double(Object object) override {
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

  Status Utf8(Object object, std::string_view* text) override {
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

  Status ItemsOf(Object list, bool stable, ItemSpan* items) override {
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

  Status BytesOf(Object object, const uint8_t** data, size_t* size) override {
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

  Result<SourcePtr> DataOf(Object object, const std::function<std::string()>& path) override {
    try {
      return DataSource(items_, Py(object), path);
    } catch (py::error_already_set& e) {
      if (e.matches(PyExc_TypeError)) type_error_ = true;
      exception_.emplace(std::move(e));
      return Status(Code::kInvalidArgument, "a Python exception");
    }
  }

  Status WrongType(std::string message) override {
    type_error_ = true;
    return InvalidArgument(std::move(message));
  }

  // bytes (any buffer), or file-backed data (no buffer protocol; `_path`
  // names the file). Raises a TypeError naming `path` for anything else,
  // and whatever reading `_path` raised other than AttributeError (a
  // KeyboardInterrupt, a property's own error) as it is.
  static SourcePtr DataSource(python::Items& items, PyObject* data,
                              const std::function<std::string()>& path) {
    if (data == nullptr) data = Py_None;
    if (PyObject_CheckBuffer(data)) return items.Borrow(data, path);
    if (data != Py_None && !PyUnicode_Check(data)) {
      PyObject* file = PyObject_GetAttrString(data, "_path");
      if (file != nullptr) {
        py::object file_path = py::reinterpret_steal<py::object>(file);
        if (IsPath(file_path)) return items.Source(file_path, path() + "._path");
        RaiseTypeError(path() + "._path: expected a path (str or os.PathLike) naming the " +
                       std::string(python::ClassName(data)) + "'s file, found " +
                       std::string(python::ClassName(file_path.ptr())));
      }
      if (!PyErr_ExceptionMatches(PyExc_AttributeError)) throw py::error_already_set();
      PyErr_Clear();
    }
    RaiseTypeError(path() +
                   ": expected bytes or file-backed data (an object with a _path), found " +
                   std::string(python::ClassName(data)));
  }

 private:
  // Keeps the Python exception set now (clearing it) for Check().
  void KeepException() { exception_.emplace(); }
  Status Pending() {
    KeepException();
    return Status(Code::kInvalidArgument, "a Python exception");
  }

  python::Items& items_;
  std::vector<PyObject*> keys_;
  std::deque<PyObject*> held_;
  // Each with the size of held_ when it was made (the mark it goes with).
  std::deque<std::pair<size_t, std::vector<Object>>> snapshots_;
  std::deque<std::pair<size_t, Py_buffer>> views_;
  std::optional<py::error_already_set> exception_;
  bool type_error_ = false;
};

// Where the non-schema parts of the exporter's objects are read (mutable
// data, named data, external constants), in the library's ErrorPath: its
// root, a prefix the helpers below edit as text, then field names and list
// indices pushed and popped without building any text.
class TreeWalker {
 public:
  TreeWalker(Items& items, std::string root) : items_(items), path_(std::move(root)) {}

  Items& items() { return items_; }
  std::string& path() { return path_.root(); }

  // A field or list index on the path for the life of the object.
  class Frame : public ErrorPath::Push {
   public:
    Frame(TreeWalker& w, std::string_view name) : ErrorPath::Push(w.path_, name) {}
    Frame(TreeWalker& w, size_t index) : ErrorPath::Push(w.path_, index) {}
  };

  std::string Path() const { return path_.Text(); }

  [[noreturn]] void WrongType(PyObject* found, const std::string& expected) {
    RaiseTypeError(Path() + ": expected " + expected + ", found " + std::string(ClassName(found)));
  }
  [[noreturn]] void Invalid(const std::string& message) {
    Raise(Code::kInvalidArgument, Path() + ": " + message);
  }

  // getattr(o, name) as a new reference. A missing attribute is an error at
  // the attribute's path naming the object's class and the type expected.
  py::object Attr(PyObject* o, const char* name, const std::string& expected) {
    PyObject* v = PyObject_GetAttrString(o, name);
    if (v != nullptr) return py::reinterpret_steal<py::object>(v);
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) throw py::error_already_set();
    PyErr_Clear();
    RaiseTypeError(Path() + "." + name + ": expected " + expected + ", found a " +
                   std::string(ClassName(o)) + " without attribute '" + name + "'");
  }

  // The source of a Buffer-like object's bytes attribute `attr`.
  SourcePtr BufferSource(PyObject* holder, const char* attr, const char* holder_type) {
    if (holder == Py_None) WrongType(holder, holder_type);
    py::object data = Attr(holder, attr, "bytes");
    return DataSource(data.ptr(), Path() + "." + attr);
  }

  SourcePtr DataSource(PyObject* data, const std::string& path) {
    return PyObjectReader::DataSource(items_, data, [&] { return path; });
  }
  SourcePtr DataSource(PyObject* data) { return DataSource(data, Path()); }

  // The items of a list or tuple as a tuple that nothing else can change.
  static py::object Snapshot(PyObject* list) {
    PyObject* tuple = PySequence_Tuple(list);
    if (tuple == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(tuple);
  }

  // Calls fn(item) for each item of a list or tuple, with the index on the path.
  template <typename Fn>
  void ForEach(PyObject* list, const std::string& expected, Fn&& fn) {
    if (!PyList_Check(list) && !PyTuple_Check(list)) WrongType(list, expected);
    // A snapshot (a tuple is its own): fn runs Python code (attribute
    // reads) that could shrink or grow a list while it is walked.
    const py::object fast = Snapshot(list);
    const Py_ssize_t n = PyTuple_GET_SIZE(fast.ptr());
    for (Py_ssize_t k = 0; k < n; ++k) {
      Frame at(*this, static_cast<size_t>(k));
      fn(PyTuple_GET_ITEM(fast.ptr(), k));
    }
  }

  int64_t Int(PyObject* v, const std::string& expected) {
    if (!IsInt(v)) WrongType(v, expected);
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow != 0) Invalid(std::string(py::str(v)) + " does not fit in " + expected);
    return x;
  }

 private:
  Items& items_;
  ErrorPath path_;
};

// A mapping's items() as (key, value) pairs. Each item must be a pair (a
// tuple or list of two): anything else is a TypeError at the mapping's path.
std::vector<std::pair<py::object, py::object>> ItemsOf(TreeWalker& w, py::handle mapping,
                                                       const std::string& expected) {
  PyObject* items = PyObject_GetAttrString(mapping.ptr(), "items");
  if (items == nullptr) {
    // Only a missing attribute means "not a mapping" (a KeyboardInterrupt
    // a property raises propagates).
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) throw py::error_already_set();
    PyErr_Clear();
    w.WrongType(mapping.ptr(), expected);
  }
  std::vector<std::pair<py::object, py::object>> pairs;
  size_t i = 0;
  for (py::handle kv : py::reinterpret_steal<py::object>(items)()) {
    PyObject* p = kv.ptr();
    const bool sequence = PyTuple_Check(p) || PyList_Check(p);
    if (!sequence || PySequence_Fast_GET_SIZE(p) != 2) {
      RaiseTypeError(w.Path() + ": items() gave " +
                     (sequence ? "a " + std::string(ClassName(p)) + " of " +
                                     std::to_string(PySequence_Fast_GET_SIZE(p))
                               : "a " + std::string(ClassName(p))) +
                     " as item " + std::to_string(i) + ", expected a (key, value) pair");
    }
    pairs.emplace_back(py::reinterpret_borrow<py::object>(PySequence_Fast_GET_ITEM(p, 0)),
                       py::reinterpret_borrow<py::object>(PySequence_Fast_GET_ITEM(p, 1)));
    ++i;
  }
  return pairs;
}

std::string KeyOf(TreeWalker& w, py::handle key) {
  if (!PyUnicode_Check(key.ptr())) w.WrongType(key.ptr(), "str key");
  return Utf8Of(key, w.Path() + " key");
}

std::string Quoted(const std::string& key) { return "['" + key + "']"; }

// A TensorLayout-like object (scalar_type, sizes, dim_order).
TensorLayout LayoutOf(TreeWalker& w, py::handle layout) {
  TensorLayout l;
  {
    py::object st = w.Attr(layout.ptr(), "scalar_type", "ScalarType (int)");
    TreeWalker::Frame at(w, "scalar_type");
    l.scalar_type = static_cast<int>(w.Int(st.ptr(), "ScalarType (int)"));
  }
  std::vector<int64_t> sizes, dim_order;
  {
    py::object list = w.Attr(layout.ptr(), "sizes", "list of int");
    TreeWalker::Frame at(w, "sizes");
    w.ForEach(list.ptr(), "list of int", [&](PyObject* s) { sizes.push_back(w.Int(s, "int")); });
  }
  {
    py::object list = w.Attr(layout.ptr(), "dim_order", "list of int");
    TreeWalker::Frame at(w, "dim_order");
    w.ForEach(list.ptr(), "list of int",
              [&](PyObject* d) { dim_order.push_back(w.Int(d, "int")); });
  }
  return Take(LayoutOfInts(l.scalar_type, sizes, dim_order, w.Path()));
}

// Named data of one map (key -> entry with buffer_index, alignment,
// tensor_layout) over a list of buffers, whose sources are made on first use.
class NamedDataReader {
 public:
  // `buffers_path`: where the list is, for errors ("named_data_store.buffers").
  NamedDataReader(TreeWalker& w, py::handle buffers, std::string buffers_path)
      : w_(w), buffers_path_(std::move(buffers_path)) {
    if (!PyList_Check(buffers.ptr()) && !PyTuple_Check(buffers.ptr())) {
      std::string saved = std::exchange(w.path(), buffers_path_);
      w.WrongType(buffers.ptr(), "list of bytes");
    }
    // Entries' attribute reads run Python code that could change the list.
    buffers_ = TreeWalker::Snapshot(buffers.ptr());
    sources_.resize(static_cast<size_t>(PyTuple_GET_SIZE(buffers_.ptr())));
  }

  struct Entry {
    std::string key;
    std::string what;  // its path, for the planner's errors
    SourcePtr source;
    uint64_t alignment = 1;
    std::optional<TensorLayout> layout;
  };

  // Calls fn(entry) for each entry of `map`, which is at the walker's path.
  template <typename Fn>
  void Read(py::handle map, Fn&& fn) {
    for (const auto& [key, value] : ItemsOf(w_, map, "dict of str to DataEntry")) {
      Entry e;
      e.key = KeyOf(w_, key);
      std::string& path = w_.path();
      const size_t size = path.size();
      path += Quoted(e.key);
      e.what = path;
      PyObject* entry = value.ptr();
      if (entry == Py_None) w_.WrongType(entry, "DataEntry");
      py::object index = w_.Attr(entry, "buffer_index", "int");
      size_t buffer = 0;
      {
        TreeWalker::Frame field(w_, "buffer_index");
        const int64_t i = w_.Int(index.ptr(), "int");
        if (i < 0 || static_cast<size_t>(i) >= sources_.size()) {
          w_.Invalid(std::to_string(i) + " is past " + buffers_path_ + " (" +
                     std::to_string(sources_.size()) + " entries)");
        }
        buffer = static_cast<size_t>(i);
      }
      py::object alignment = w_.Attr(entry, "alignment", "int");
      if (!alignment.is_none()) {
        TreeWalker::Frame field(w_, "alignment");
        const int64_t a = w_.Int(alignment.ptr(), "int");
        if (a < 0) w_.Invalid("alignment " + std::to_string(a) + " is negative");
        // 0 asks for nothing, as None does: upstream's serializers pad such
        // an entry to 1 (its flat tensor tests store alignment=0 entries).
        e.alignment = a == 0 ? 1 : static_cast<uint64_t>(a);
      }
      py::object layout = w_.Attr(entry, "tensor_layout", "TensorLayout or None");
      if (!layout.is_none()) {
        TreeWalker::Frame field(w_, "tensor_layout");
        e.layout = LayoutOf(w_, layout);
      }
      path.resize(size);
      e.source = Source(buffer);
      fn(std::move(e));
    }
  }

  SourcePtr Source(size_t i) {
    if (!sources_[i]) {
      const std::string at = buffers_path_ + "[" + std::to_string(i) + "]";
      std::string saved = std::exchange(w_.path(), at);
      sources_[i] = w_.DataSource(PyTuple_GET_ITEM(buffers_.ptr(), static_cast<Py_ssize_t>(i)));
      w_.path() = std::move(saved);
    }
    return sources_[i];
  }

 private:
  TreeWalker& w_;
  py::object buffers_;  // a snapshot of the list
  std::string buffers_path_;
  std::vector<SourcePtr> sources_;
};

void WalkPte(TreeWalker& w, const PteNames& names, py::handle program, py::handle mutable_data,
             py::handle named_data, PteInput* input) {
  {
    PyObjectReader reader(w.items());
    reader.Check(ReadProgramObjects(reader, program.is_none() ? nullptr : program.ptr(),
                                    names.program, input));
  }
  if (!mutable_data.is_none()) {
    w.path() = names.mutable_data;
    w.ForEach(mutable_data.ptr(), "list of Buffer", [&](PyObject* buffer) {
      input->mutable_data.push_back(w.BufferSource(buffer, "storage", "Buffer"));
    });
  }
  if (!named_data.is_none()) {
    w.path() = names.named_data;
    py::object buffers = w.Attr(named_data.ptr(), "buffers", "list of bytes");
    py::object pte_data = w.Attr(named_data.ptr(), "pte_data", "dict of str to DataEntry");
    NamedDataReader reader(w, buffers, names.named_data + ".buffers");
    w.path() = names.named_data + ".pte_data";
    reader.Read(pte_data, [&](NamedDataReader::Entry e) {
      input->named_data.push_back(
          {std::move(e.key), std::move(e.source), e.alignment, std::move(e.what)});
    });
  }
}

// The .ptd of each tag, in the order tags first appear (a key in two tags is
// PlanProgramWithData's error, as for any front end).
class DataFiles {
 public:
  void Tag(const std::string& tag) {
    if (!index_.emplace(tag, files_.size()).second) return;
    files_.push_back({tag, PtdInput()});
    buffers_.emplace_back(&files_.back().second.buffers);
  }

  // `what`: where the entry was found, naming it in the planner's errors.
  void Add(const std::string& tag, const std::string& key, const SourcePtr& source,
           uint64_t alignment, std::optional<TensorLayout> layout, std::string what) {
    Tag(tag);
    const size_t file = index_[tag];
    PtdEntry e;
    e.key = key;
    e.buffer_index = buffers_[file].Add(source);
    e.alignment = alignment;
    e.layout = std::move(layout);
    e.what = std::move(what);
    files_[file].second.entries.push_back(std::move(e));
  }

  std::vector<std::pair<std::string, PtdInput>> Take() {
    return {std::make_move_iterator(files_.begin()), std::make_move_iterator(files_.end())};
  }

 private:
  // Deques: each file's SourceIndex points into its input.
  std::deque<std::pair<std::string, PtdInput>> files_;
  std::deque<SourceIndex> buffers_;
  std::map<std::string, size_t> index_;
};

}  // namespace

PteInput WalkPteFile(Items& items, const PteNames& names, py::handle program,
                     py::handle mutable_data, py::handle named_data) {
  TreeWalker w(items, names.program);
  PteInput input;
  WalkPte(w, names, program, mutable_data, named_data, &input);
  return input;
}

PtdInput WalkDataPayload(Items& items, const std::string& root, py::handle payload) {
  TreeWalker w(items, root);
  py::object buffers = w.Attr(payload.ptr(), "buffers", "list of bytes");
  py::object named = w.Attr(payload.ptr(), "named_data", "dict of str to DataEntry");
  NamedDataReader reader(w, buffers, root + ".buffers");
  w.path() = root + ".named_data";
  PtdInput input;
  SourceIndex index(&input.buffers);
  reader.Read(named, [&](NamedDataReader::Entry e) {
    input.entries.push_back({std::move(e.key), index.Add(e.source), e.alignment,
                             std::move(e.layout), std::move(e.what)});
  });
  return input;
}

ExirInputs WalkForExecutorch(Items& items, py::handle emitter_output, py::handle store) {
  TreeWalker w(items, "emitter_output");
  py::object program = w.Attr(emitter_output.ptr(), "program", "Program");
  py::object mutable_data = w.Attr(emitter_output.ptr(), "mutable_data", "list of Buffer or None");
  ExirInputs out;
  const PteNames names{"emitter_output.program", "emitter_output.mutable_data", "named_data_store"};
  WalkPte(w, names, program, mutable_data, store, &out.program);
  const std::map<std::string, TensorLayout> layouts =
      Take(ExternalTensorLayouts(out.program.program));

  DataFiles files;
  w.path() = "emitter_output";
  py::object constant_map =
      w.Attr(emitter_output.ptr(), "external_constant_map", "dict of tag to dict of str to int");
  if (!constant_map.is_none()) {
    py::object buffers = w.Attr(emitter_output.ptr(), "external_constant_buffer", "list of bytes");
    w.path() = "emitter_output.external_constant_buffer";
    if (!PyList_Check(buffers.ptr()) && !PyTuple_Check(buffers.ptr())) {
      w.WrongType(buffers.ptr(), "list of bytes");
    }
    buffers = TreeWalker::Snapshot(buffers.ptr());  // the walk below runs Python code
    const size_t count = static_cast<size_t>(PyTuple_GET_SIZE(buffers.ptr()));
    std::vector<SourcePtr> sources(count);
    w.path() = "emitter_output.external_constant_map";
    for (const auto& [tag_key, fqns] :
         ItemsOf(w, constant_map, "dict of tag to dict of str to int")) {
      const std::string tag = KeyOf(w, tag_key);
      const std::string map_path = w.path();
      w.path() += Quoted(tag);
      for (const auto& [fqn_key, index] : ItemsOf(w, fqns, "dict of str to int")) {
        const std::string fqn = KeyOf(w, fqn_key);
        const size_t size = w.path().size();
        w.path() += Quoted(fqn);
        const int64_t i = w.Int(index.ptr(), "int");
        if (i < 0 || static_cast<size_t>(i) >= count) {
          w.Invalid(std::to_string(i) + " is past emitter_output.external_constant_buffer (" +
                    std::to_string(count) + " entries)");
        }
        auto layout = layouts.find(fqn);
        if (layout == layouts.end()) {
          w.Invalid("no EXTERNAL tensor of the program has fully_qualified_name '" + fqn +
                    "', so the constant has no tensor layout");
        }
        if (!sources[i]) {
          std::string saved = std::exchange(
              w.path(), "emitter_output.external_constant_buffer[" + std::to_string(i) + "]");
          sources[i] = w.DataSource(PyTuple_GET_ITEM(buffers.ptr(), static_cast<Py_ssize_t>(i)));
          w.path() = std::move(saved);
        }
        files.Add(tag, fqn, sources[i], 1, layout->second, w.path());
        w.path().resize(size);
      }
      w.path() = map_path;
    }
    if (py::len(constant_map) > 0) out.merged = true;
  }
  if (!store.is_none()) {
    w.path() = "named_data_store";
    py::object external =
        w.Attr(store.ptr(), "external_data", "dict of tag to dict of str to DataEntry");
    py::object buffers = w.Attr(store.ptr(), "buffers", "list of bytes");
    NamedDataReader reader(w, buffers, "named_data_store.buffers");
    w.path() = "named_data_store.external_data";
    for (const auto& [tag_key, entries] :
         ItemsOf(w, external, "dict of tag to dict of str to DataEntry")) {
      const std::string tag = KeyOf(w, tag_key);
      // Without emitter constants every tag of the store is a file, even an
      // empty one; merged, only tags that hold a key are.
      if (!out.merged) files.Tag(tag);
      const std::string saved = w.path();
      w.path() += Quoted(tag);
      reader.Read(entries, [&](NamedDataReader::Entry e) {
        files.Add(tag, e.key, e.source, e.alignment, std::move(e.layout), std::move(e.what));
      });
      w.path() = saved;
    }
  }
  out.data = files.Take();
  return out;
}

}  // namespace etpack::python
