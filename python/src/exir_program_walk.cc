#include "exir_program_walk.h"

#include <deque>
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
#include "py_object_reader.h"

namespace py = pybind11;

namespace etpack::python {
namespace {

bool IsInt(PyObject* o) { return PyLong_Check(o) && !PyBool_Check(o); }

// The items of a list or tuple as a tuple that nothing else can change.
py::object Snapshot(PyObject* list) {
  PyObject* tuple = PySequence_Tuple(list);
  if (tuple == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(tuple);
}

// Reads the exporter's objects outside the Program schema by attribute,
// keeping where it is in an ErrorPath: names, keys and indices pushed and
// popped as it descends (Frame), the text made only for an error.
class ExirReader {
 public:
  explicit ExirReader(Items& items) : items_(items) {}

  Items& items() { return items_; }

  // A field, a mapping's key or a list index on the path for the life of
  // the object. A name or key is not copied: it must outlive the frame.
  class Frame : public ErrorPath::Push {
   public:
    Frame(ExirReader& r, std::string_view name) : ErrorPath::Push(r.path_, name) {}
    Frame(ExirReader& r, ErrorPath::Key key) : ErrorPath::Push(r.path_, key) {}
    Frame(ExirReader& r, size_t index) : ErrorPath::Push(r.path_, index) {}
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
    Frame at(*this, attr);
    return DataSource(data.ptr());
  }

  // The source of `data`, found at the path.
  SourcePtr DataSource(PyObject* data) {
    return python::DataSource(items_, data, [&] { return Path(); });
  }

  // A list or tuple (else a wrong type at the path) as a Snapshot.
  py::object List(PyObject* list, const std::string& expected) {
    if (!PyList_Check(list) && !PyTuple_Check(list)) WrongType(list, expected);
    return Snapshot(list);
  }

  // Calls fn(item) for each item of a list or tuple, with the index on the path.
  template <typename Fn>
  void ForEach(PyObject* list, const std::string& expected, Fn&& fn) {
    // A snapshot (a tuple is its own): fn runs Python code (attribute
    // reads) that could shrink or grow a list while it is walked.
    const py::object fast = List(list, expected);
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

  // An index into a list of `count` items at `list_path`: an int in
  // [0, count), else an error at the path.
  size_t Index(PyObject* v, size_t count, const std::string& list_path) {
    const int64_t i = Int(v, "int");
    if (i < 0 || static_cast<size_t>(i) >= count) {
      Invalid(std::to_string(i) + " is past " + list_path + " (" + std::to_string(count) +
              " entries)");
    }
    return static_cast<size_t>(i);
  }

 private:
  Items& items_;
  ErrorPath path_;
};

// A mapping's items() as (key, value) pairs. Each item must be a pair (a
// tuple or list of two): anything else is a TypeError at the mapping's path.
std::vector<std::pair<py::object, py::object>> ItemsOf(ExirReader& r, py::handle mapping,
                                                       const std::string& expected) {
  PyObject* items = PyObject_GetAttrString(mapping.ptr(), "items");
  if (items == nullptr) {
    // Only a missing attribute means "not a mapping" (a KeyboardInterrupt
    // a property raises propagates).
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) throw py::error_already_set();
    PyErr_Clear();
    r.WrongType(mapping.ptr(), expected);
  }
  std::vector<std::pair<py::object, py::object>> pairs;
  size_t i = 0;
  for (py::handle kv : py::reinterpret_steal<py::object>(items)()) {
    PyObject* p = kv.ptr();
    const bool sequence = PyTuple_Check(p) || PyList_Check(p);
    if (!sequence || PySequence_Fast_GET_SIZE(p) != 2) {
      RaiseTypeError(r.Path() + ": items() gave " +
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

std::string KeyOf(ExirReader& r, py::handle key) {
  if (!PyUnicode_Check(key.ptr())) r.WrongType(key.ptr(), "str key");
  return Utf8Of(key, r.Path() + " key");
}

// A TensorLayout-like object (scalar_type, sizes, dim_order).
TensorLayout LayoutOf(ExirReader& r, py::handle layout) {
  TensorLayout l;
  {
    py::object st = r.Attr(layout.ptr(), "scalar_type", "ScalarType (int)");
    ExirReader::Frame at(r, "scalar_type");
    l.scalar_type = static_cast<int>(r.Int(st.ptr(), "ScalarType (int)"));
  }
  std::vector<int64_t> sizes, dim_order;
  {
    py::object list = r.Attr(layout.ptr(), "sizes", "list of int");
    ExirReader::Frame at(r, "sizes");
    r.ForEach(list.ptr(), "list of int", [&](PyObject* s) { sizes.push_back(r.Int(s, "int")); });
  }
  {
    py::object list = r.Attr(layout.ptr(), "dim_order", "list of int");
    ExirReader::Frame at(r, "dim_order");
    r.ForEach(list.ptr(), "list of int",
              [&](PyObject* d) { dim_order.push_back(r.Int(d, "int")); });
  }
  return Take(LayoutOfInts(l.scalar_type, sizes, dim_order, r.Path()));
}

// A list of buffers (bytes) whose sources are made on first use, each
// named in errors by its place in the list, wherever the walk is then.
class LazyBuffers {
 public:
  // `list` is at the reader's path (a wrong type there is its error).
  LazyBuffers(ExirReader& r, py::handle list)
      : r_(r), list_(r.List(list.ptr(), "list of bytes")), path_(r.Path()) {
    sources_.resize(static_cast<size_t>(PyTuple_GET_SIZE(list_.ptr())));
  }

  size_t size() const { return sources_.size(); }
  const std::string& path() const { return path_; }

  // REQUIRES: i < size().
  SourcePtr Source(size_t i) {
    if (!sources_[i]) {
      sources_[i] =
          DataSource(r_.items(), PyTuple_GET_ITEM(list_.ptr(), static_cast<Py_ssize_t>(i)),
                     [&] { return path_ + "[" + std::to_string(i) + "]"; });
    }
    return sources_[i];
  }

 private:
  ExirReader& r_;
  // A snapshot: reading entries runs Python code that could change the list.
  py::object list_;
  std::string path_;  // where the list is, for errors ("named_data_store.buffers")
  std::vector<SourcePtr> sources_;
};

// Named data of one map (key -> entry with buffer_index, alignment,
// tensor_layout) over a list of buffers.
class NamedDataReader {
 public:
  // `buffers` is the attribute "buffers" of the object at the reader's path.
  NamedDataReader(ExirReader& r, py::handle buffers) : r_(r), buffers_(Buffers(r, buffers)) {}

  struct Entry {
    std::string key;
    std::string what;  // its path, for the planner's errors
    SourcePtr source;
    uint64_t alignment = 1;
    std::optional<TensorLayout> layout;
  };

  // Calls fn(entry) for each entry of `map`, which is at the reader's path.
  template <typename Fn>
  void Read(py::handle map, Fn&& fn) {
    for (const auto& [key, value] : ItemsOf(r_, map, "dict of str to DataEntry")) {
      Entry e;
      e.key = KeyOf(r_, key);
      size_t buffer = 0;
      {
        ExirReader::Frame at(r_, ErrorPath::Key{e.key});
        e.what = r_.Path();
        buffer = ReadEntry(value.ptr(), &e);
      }
      e.source = buffers_.Source(buffer);
      fn(std::move(e));
    }
  }

 private:
  static LazyBuffers Buffers(ExirReader& r, py::handle buffers) {
    ExirReader::Frame at(r, "buffers");
    return LazyBuffers(r, buffers);
  }

  // An entry's fields into `e`; returns its buffer index.
  size_t ReadEntry(PyObject* entry, Entry* e) {
    if (entry == Py_None) r_.WrongType(entry, "DataEntry");
    py::object index = r_.Attr(entry, "buffer_index", "int");
    size_t buffer = 0;
    {
      ExirReader::Frame field(r_, "buffer_index");
      buffer = r_.Index(index.ptr(), buffers_.size(), buffers_.path());
    }
    py::object alignment = r_.Attr(entry, "alignment", "int");
    if (!alignment.is_none()) {
      ExirReader::Frame field(r_, "alignment");
      const int64_t a = r_.Int(alignment.ptr(), "int");
      if (a < 0) r_.Invalid("alignment " + std::to_string(a) + " is negative");
      // 0 asks for nothing, as None does: upstream's serializers pad such
      // an entry to 1 (its flat tensor tests store alignment=0 entries).
      e->alignment = a == 0 ? 1 : static_cast<uint64_t>(a);
    }
    py::object layout = r_.Attr(entry, "tensor_layout", "TensorLayout or None");
    if (!layout.is_none()) {
      ExirReader::Frame field(r_, "tensor_layout");
      e->layout = LayoutOf(r_, layout);
    }
    return buffer;
  }

  ExirReader& r_;
  LazyBuffers buffers_;
};

void WalkPte(ExirReader& r, const PteNames& names, py::handle program, py::handle mutable_data,
             py::handle named_data, PteInput* input) {
  {
    PyObjectReader reader(r.items());
    reader.Check(ReadProgramObjects(reader, program.is_none() ? nullptr : program.ptr(),
                                    names.program, input));
  }
  if (!mutable_data.is_none()) {
    ExirReader::Frame at(r, names.mutable_data);
    r.ForEach(mutable_data.ptr(), "list of Buffer", [&](PyObject* buffer) {
      input->mutable_data.push_back(r.BufferSource(buffer, "storage", "Buffer"));
    });
  }
  if (!named_data.is_none()) {
    ExirReader::Frame at(r, names.named_data);
    py::object buffers = r.Attr(named_data.ptr(), "buffers", "list of bytes");
    py::object pte_data = r.Attr(named_data.ptr(), "pte_data", "dict of str to DataEntry");
    NamedDataReader reader(r, buffers);
    ExirReader::Frame field(r, "pte_data");
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

// The emitter's external constants (external_constant_map: tag -> fqn ->
// index into external_constant_buffer), each under its fully qualified name
// with the layout of the program's EXTERNAL tensor of that name. Returns
// whether there were any. `emitter_output` is at the reader's path.
bool ReadExternalConstants(ExirReader& r, py::handle emitter_output,
                           const std::map<std::string, TensorLayout>& layouts, DataFiles* files) {
  py::object constant_map =
      r.Attr(emitter_output.ptr(), "external_constant_map", "dict of tag to dict of str to int");
  if (constant_map.is_none()) return false;
  py::object list = r.Attr(emitter_output.ptr(), "external_constant_buffer", "list of bytes");
  std::optional<LazyBuffers> buffers;
  {
    ExirReader::Frame at(r, "external_constant_buffer");
    buffers.emplace(r, list);
  }
  ExirReader::Frame at(r, "external_constant_map");
  for (const auto& [tag_key, fqns] :
       ItemsOf(r, constant_map, "dict of tag to dict of str to int")) {
    const std::string tag = KeyOf(r, tag_key);
    ExirReader::Frame tag_at(r, ErrorPath::Key{tag});
    for (const auto& [fqn_key, index] : ItemsOf(r, fqns, "dict of str to int")) {
      const std::string fqn = KeyOf(r, fqn_key);
      ExirReader::Frame fqn_at(r, ErrorPath::Key{fqn});
      const size_t i = r.Index(index.ptr(), buffers->size(), buffers->path());
      auto layout = layouts.find(fqn);
      if (layout == layouts.end()) {
        r.Invalid("no EXTERNAL tensor of the program has fully_qualified_name '" + fqn +
                  "', so the constant has no tensor layout");
      }
      files->Add(tag, fqn, buffers->Source(i), 1, layout->second, r.Path());
    }
  }
  return py::len(constant_map) > 0;
}

// The store's external_data (tag -> key -> DataEntry over the store's
// buffers). Without emitter constants (`merged` false) every tag of the
// store is a file, even an empty one; merged, only tags that hold a key
// are. `store` is at the reader's path.
void ReadExternalData(ExirReader& r, py::handle store, bool merged, DataFiles* files) {
  py::object external =
      r.Attr(store.ptr(), "external_data", "dict of tag to dict of str to DataEntry");
  py::object buffers = r.Attr(store.ptr(), "buffers", "list of bytes");
  NamedDataReader reader(r, buffers);
  ExirReader::Frame at(r, "external_data");
  for (const auto& [tag_key, entries] :
       ItemsOf(r, external, "dict of tag to dict of str to DataEntry")) {
    const std::string tag = KeyOf(r, tag_key);
    if (!merged) files->Tag(tag);
    ExirReader::Frame tag_at(r, ErrorPath::Key{tag});
    reader.Read(entries, [&](NamedDataReader::Entry e) {
      files->Add(tag, e.key, e.source, e.alignment, std::move(e.layout), std::move(e.what));
    });
  }
}

}  // namespace

PteInput WalkPteFile(Items& items, const PteNames& names, py::handle program,
                     py::handle mutable_data, py::handle named_data) {
  ExirReader r(items);
  PteInput input;
  WalkPte(r, names, program, mutable_data, named_data, &input);
  return input;
}

PtdInput WalkDataPayload(Items& items, const std::string& root, py::handle payload) {
  ExirReader r(items);
  ExirReader::Frame at(r, root);
  py::object buffers = r.Attr(payload.ptr(), "buffers", "list of bytes");
  py::object named = r.Attr(payload.ptr(), "named_data", "dict of str to DataEntry");
  NamedDataReader reader(r, buffers);
  ExirReader::Frame field(r, "named_data");
  PtdInput input;
  SourceIndex index(&input.buffers);
  reader.Read(named, [&](NamedDataReader::Entry e) {
    input.entries.push_back({std::move(e.key), index.Add(e.source), e.alignment,
                             std::move(e.layout), std::move(e.what)});
  });
  return input;
}

ExirInputs WalkForExecutorch(Items& items, py::handle emitter_output, py::handle store) {
  ExirReader r(items);
  const std::string emitter = "emitter_output", store_name = "named_data_store";
  py::object program, mutable_data;
  {
    ExirReader::Frame at(r, emitter);
    program = r.Attr(emitter_output.ptr(), "program", "Program");
    mutable_data = r.Attr(emitter_output.ptr(), "mutable_data", "list of Buffer or None");
  }
  ExirInputs out;
  const PteNames names{emitter + ".program", emitter + ".mutable_data", store_name};
  WalkPte(r, names, program, mutable_data, store, &out.program);
  const std::map<std::string, TensorLayout> layouts =
      Take(ExternalTensorLayouts(out.program.program));
  DataFiles files;
  {
    ExirReader::Frame at(r, emitter);
    out.merged = ReadExternalConstants(r, emitter_output, layouts, &files);
  }
  if (!store.is_none()) {
    ExirReader::Frame at(r, store_name);
    ReadExternalData(r, store, out.merged, &files);
  }
  out.data = files.Take();
  return out;
}

}  // namespace etpack::python
