#include "exir_tree.h"

#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "errors.h"
#include "flatbuffer/schema_info.h"

namespace py = pybind11;

namespace etpack::python {
namespace {

using fbs::BaseType;
using fbs::FieldInfo;
using fbs::ObjectInfo;
using fbs::PathPush;

// type(x).__name__: a class defined in Python has its bare name in tp_name,
// an extension type "module.Name".
std::string_view ClassName(PyObject* o) {
  std::string_view name = Py_TYPE(o)->tp_name;
  const size_t dot = name.rfind('.');
  return dot == std::string_view::npos ? name : name.substr(dot + 1);
}

std::string Found(PyObject* o) {
  if (o == Py_None) return "None";
  return std::string(ClassName(o));
}

bool IsInt(PyObject* o) { return PyLong_Check(o) && !PyBool_Check(o); }

// The schema's Program table and every table under it, with each field's
// name interned once so that reading an attribute is one lookup.
class ProgramSchema {
 public:
  static const ProgramSchema& Get() {
    static const ProgramSchema* schema = new ProgramSchema();  // lives with the module
    return *schema;
  }
  const fbs::SchemaData& data() const { return data_; }
  PyObject* name(int object, size_t field) const { return names_[object][field]; }
  int Object(std::string_view table) const {
    for (size_t i = 0; i < data_.objects.size(); ++i) {
      if (data_.objects[i].name == table) return static_cast<int>(i);
    }
    return -1;
  }

 private:
  ProgramSchema() : data_(fbs::Decoded(SchemaId::kProgram)) {
    for (const ObjectInfo& o : data_.objects) {
      std::vector<PyObject*> names;
      for (const FieldInfo& f : o.fields) {
        names.push_back(f.present ? PyUnicode_InternFromString(std::string(f.name).c_str())
                                  : nullptr);
        if (f.present && names.back() == nullptr) throw py::error_already_set();
      }
      names_.push_back(std::move(names));
    }
  }
  const fbs::SchemaData& data_;
  std::vector<std::vector<PyObject*>> names_;
};

std::string ScalarName(BaseType t) {
  switch (t) {
    case BaseType::Bool: return "bool";
    case BaseType::Float:
    case BaseType::Double: return "float";
    default: return "int";
  }
}

}  // namespace

// Walks one object tree. Where it is, for errors, is `path_` (a prefix the
// helpers below edit as text) followed by `frames_` (the fields and indices
// of the table walk, pushed and popped without building any text: the path
// is rendered only for an error).
class TreeWalker {
 public:
  // The interned str of a string literal, made once per literal: the walk
  // reads the same few attributes (storage, data) once per item.
  static PyObject* Interned(const char* literal) {
    static std::vector<std::pair<const char*, PyObject*>> names;  // lives with the module
    for (const auto& [l, n] : names) {
      if (l == literal) return n;
    }
    PyObject* n = PyUnicode_InternFromString(literal);
    if (n == nullptr) throw py::error_already_set();
    names.emplace_back(literal, n);
    return n;
  }

  TreeWalker(Items& items, std::string root)
      : items_(items), schema_(ProgramSchema::Get()), path_(std::move(root)) {}

  std::string& path() { return path_; }

  // A field name or list index on the path for the life of the object.
  class Frame {
   public:
    Frame(TreeWalker& w, std::string_view name) : w_(w) { w.frames_.push_back({name, 0}); }
    Frame(TreeWalker& w, size_t index) : w_(w) { w.frames_.push_back({{}, index}); }
    ~Frame() { w_.frames_.pop_back(); }
    Frame(const Frame&) = delete;
    Frame& operator=(const Frame&) = delete;

   private:
    TreeWalker& w_;
  };

  std::string Path() const {
    std::string p = path_;
    for (const auto& [name, index] : frames_) {
      if (name.empty()) {
        p += "[" + std::to_string(index) + "]";
      } else {
        p += ".";
        p += name;
      }
    }
    return p;
  }

  [[noreturn]] void WrongType(PyObject* found, const std::string& expected) {
    RaiseTypeError(Path() + ": expected " + expected + ", found " + Found(found));
  }
  [[noreturn]] void Invalid(const std::string& message) {
    Raise(Code::kInvalidArgument, Path() + ": " + message);
  }

  // getattr(o, name) as a new reference. A missing attribute is an error at
  // the attribute's path naming the object's class and the type expected.
  py::object Attr(PyObject* o, PyObject* name, const std::string& expected) {
    PyObject* v = PyObject_GetAttr(o, name);
    if (v != nullptr) return py::reinterpret_steal<py::object>(v);
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) throw py::error_already_set();
    PyErr_Clear();
    const std::string attribute = PyUnicode_AsUTF8(name);
    RaiseTypeError(Path() + "." + attribute + ": expected " + expected + ", found a " + Found(o) +
                   " without attribute '" + attribute + "'");
  }
  // `name`: a string literal (interned once, kept by its address).
  py::object Attr(PyObject* o, const char* name, const std::string& expected) {
    return Attr(o, Interned(name), expected);
  }

  // The Program table (its bulk fields become sources in `input`).
  json::Value Program(PyObject* program, PteInput* input) {
    const int index = schema_.data().root;
    const ObjectInfo& info = schema_.data().objects[index];
    std::vector<json::Value::Member> members;
    for (size_t i = 0; i < info.fields.size(); ++i) {
      const FieldInfo& f = info.fields[i];
      if (!f.present) continue;
      // What the planner lays out itself.
      if (f.name == "segments" || f.name == "constant_segment" ||
          f.name == "mutable_data_segments" || f.name == "named_data") {
        continue;
      }
      if (f.name == "constant_buffer" || f.name == "backend_delegate_data") {
        const bool constants = f.name == "constant_buffer";
        py::object list = Attr(program, schema_.name(index, i),
                               constants ? "list of Buffer" : "list of BackendDelegateInlineData");
        Frame at(*this, f.name);
        std::vector<json::Value> entries;
        std::vector<SourcePtr>& sources = constants ? input->constants : input->delegates;
        ForEach(
            list.ptr(), constants ? "list of Buffer" : "list of BackendDelegateInlineData",
            [&](PyObject* item) {
              sources.push_back(BufferSource(item, constants ? "storage" : "data",
                                             constants ? "Buffer" : "BackendDelegateInlineData"));
              entries.push_back(json::Value::Object());
            });
        members.emplace_back(std::string(f.name), json::Value::Array(std::move(entries)));
        continue;
      }
      members.emplace_back(std::string(f.name), Field(program, index, i));
    }
    return json::Value::Object(std::move(members));
  }

  // The source of a Buffer-like object's bytes attribute `attr`.
  SourcePtr BufferSource(PyObject* holder, const char* attr, const char* holder_type) {
    if (holder == Py_None) WrongType(holder, holder_type);
    py::object data = Attr(holder, attr, "bytes");
    Frame at(*this, attr);
    return DataSource(data.ptr());
  }

  // bytes (any buffer), or file-backed data (no buffer protocol; `_path`
  // names the file).
  SourcePtr DataSource(PyObject* data) {
    if (PyObject_CheckBuffer(data)) return items_.Borrow(data, [&] { return Path(); });
    if (data != Py_None && !PyUnicode_Check(data)) {
      PyObject* file = PyObject_GetAttrString(data, "_path");
      if (file != nullptr) {
        py::object path = py::reinterpret_steal<py::object>(file);
        if (IsPath(path)) return items_.Source(path, Path());
      } else {
        PyErr_Clear();
      }
    }
    WrongType(data, "bytes or file-backed data (an object with a _path)");
  }

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
    PyObject** items = &PyTuple_GET_ITEM(fast.ptr(), 0);
    for (Py_ssize_t k = 0; k < n; ++k) {
      Frame at(*this, static_cast<size_t>(k));
      fn(items[k]);
    }
  }

  int64_t Int(PyObject* v, const std::string& expected) {
    if (!IsInt(v)) WrongType(v, expected);
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow != 0) Invalid(std::string(py::str(v)) + " does not fit in " + expected);
    return x;
  }

  json::Value Table(PyObject* o, int index) {
    const ObjectInfo& info = schema_.data().objects[index];
    // Members collect on one stack shared by the whole walk and move into a
    // vector of the exact size: a table holds only the fields present, and a
    // tree of millions of members must not reserve room for the rest.
    const size_t start = scratch_.size();
    auto& members = scratch_;
    for (size_t i = 0; i < info.fields.size(); ++i) {
      const FieldInfo& f = info.fields[i];
      if (!f.present || f.type == BaseType::UType) continue;
      if (f.type == BaseType::Union) {
        py::object v = AttrAt(o, schema_.name(index, i), f);
        if (v.is_none()) continue;
        Frame at(*this, f.name);
        const fbs::EnumInfo& u = schema_.data().enums[f.index];
        const std::string_view cls = ClassName(v.ptr());
        const fbs::EnumValue* member = nullptr;
        for (const fbs::EnumValue& e : u.values) {
          if (e.object >= 0 && e.name == cls) member = &e;
        }
        if (member == nullptr) WrongType(v.ptr(), Expected(f));
        members.emplace_back(std::string(f.name) + "_type", json::Value::String(std::string(cls)));
        members.emplace_back(std::string(f.name), Table(v.ptr(), member->object));
        continue;
      }
      // None is an absent field: left out rather than stored as null, so
      // neither the tree nor the builder spends anything on it.
      json::Value v = Field(o, index, i);
      if (!v.is_null()) members.emplace_back(std::string(f.name), std::move(v));
    }
    std::vector<json::Value::Member> own(std::make_move_iterator(scratch_.begin() + start),
                                         std::make_move_iterator(scratch_.end()));
    scratch_.erase(scratch_.begin() + start, scratch_.end());
    return json::Value::Object(std::move(own));
  }

 private:
  // getattr for a schema field; the expected type is worked out only for an error.
  py::object AttrAt(PyObject* o, PyObject* name, const FieldInfo& f) {
    PyObject* v = PyObject_GetAttr(o, name);
    if (v != nullptr) return py::reinterpret_steal<py::object>(v);
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) throw py::error_already_set();
    PyErr_Clear();
    return Attr(o, name, Expected(f));
  }

  std::string TypeOf(BaseType t, int index) const {
    if (t == BaseType::Obj) return std::string(schema_.data().objects[index].name);
    if (t == BaseType::String) return "str";
    if (index >= 0 && t != BaseType::Vector) {
      return std::string(schema_.data().enums[index].name) + " (int)";
    }
    return ScalarName(t);
  }

  std::string Expected(const FieldInfo& f) const {
    if (f.type == BaseType::Vector) {
      if (f.element == BaseType::UByte && f.index < 0) return "list of int or bytes";
      return "list of " + TypeOf(f.element, f.index);
    }
    if (f.type == BaseType::Union) {
      std::string names;
      for (const fbs::EnumValue& e : schema_.data().enums[f.index].values) {
        if (e.object < 0) continue;
        names += (names.empty() ? "" : ", ") + std::string(e.name);
      }
      return "one of " + names;
    }
    return TypeOf(f.type, f.index);
  }

  json::Value Field(PyObject* o, int index, size_t i) {
    const FieldInfo& f = schema_.data().objects[index].fields[i];
    py::object v = AttrAt(o, schema_.name(index, i), f);
    Frame at(*this, f.name);
    if (v.is_none()) return json::Value::Null();
    switch (f.type) {
      case BaseType::Obj: return Table(v.ptr(), f.index);
      case BaseType::String: return String(v.ptr());
      case BaseType::Vector: return Vector(v.ptr(), f);
      default: {
        json::Value x = Scalar(v.ptr(), f.type, f.index);
        // A scalar equal to its schema default is never stored in a
        // flatbuffer: leaving it out of the tree changes no byte and spares
        // the tree and the builder a member (most of a tensor's fields).
        return IsDefault(x, f) ? json::Value::Null() : x;
      }
    }
  }

  static bool IsDefault(const json::Value& x, const FieldInfo& f) {
    switch (x.kind()) {
      case json::Kind::kBool: return x.as_bool() == (f.default_integer != 0);
      case json::Kind::kInt: return x.as_int() == f.default_integer;
      case json::Kind::kDouble: return x.as_double() == f.default_real;
      default: return false;
    }
  }

  json::Value String(PyObject* v) {
    if (!PyUnicode_Check(v)) WrongType(v, "str");
    Py_ssize_t n = 0;
    const char* s = PyUnicode_AsUTF8AndSize(v, &n);
    if (s == nullptr) {
      PyErr_Clear();
      Invalid("a str that is not valid Unicode (a lone surrogate?) cannot be stored as UTF-8");
    }
    return json::Value::String(std::string(s, static_cast<size_t>(n)));
  }

  json::Value Vector(PyObject* v, const FieldInfo& f) {
    std::vector<json::Value> items;
    if (f.element == BaseType::UByte && f.index < 0 && PyObject_CheckBuffer(v)) {
      // A small byte field (CompileSpec.value): its bytes, one value each.
      Py_buffer view;
      if (PyObject_GetBuffer(v, &view, PyBUF_C_CONTIGUOUS) != 0) {
        PyErr_Clear();
        WrongType(v, Expected(f));
      }
      const auto* p = static_cast<const uint8_t*>(view.buf);
      items.reserve(static_cast<size_t>(view.len));
      for (Py_ssize_t k = 0; k < view.len; ++k) items.push_back(json::Value::Int(p[k]));
      PyBuffer_Release(&view);
      return json::Value::Array(std::move(items));
    }
    if (!PyList_Check(v) && !PyTuple_Check(v)) WrongType(v, Expected(f));
    // A list of tables is walked in a snapshot: a table's attribute reads run
    // Python code that could change the list while it is walked. Reading
    // scalars and strings runs none, so their list is read in place.
    const py::object snapshot =
        f.element == BaseType::Obj ? Snapshot(v) : py::reinterpret_borrow<py::object>(v);
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(snapshot.ptr());
    PyObject** elements = PySequence_Fast_ITEMS(snapshot.ptr());
    items.reserve(static_cast<size_t>(n));
    for (Py_ssize_t k = 0; k < n; ++k) {
      Frame at(*this, static_cast<size_t>(k));
      // Held: an error message formats the element (str() of an int
      // subclass runs Python code, which could drop it from the list).
      const py::object held = py::reinterpret_borrow<py::object>(elements[k]);
      PyObject* e = held.ptr();
      switch (f.element) {
        case BaseType::Obj:
          if (e == Py_None) WrongType(e, TypeOf(f.element, f.index));
          items.push_back(Table(e, f.index));
          break;
        case BaseType::String: items.push_back(String(e)); break;
        default: items.push_back(Scalar(e, f.element, f.index)); break;
      }
    }
    return json::Value::Array(std::move(items));
  }

  json::Value Scalar(PyObject* v, BaseType t, int enum_index) {
    switch (t) {
      case BaseType::Bool:
        if (!PyBool_Check(v)) WrongType(v, "bool");
        return json::Value::Bool(v == Py_True);
      case BaseType::Float:
      case BaseType::Double:
        if (PyFloat_Check(v)) return json::Value::Double(PyFloat_AS_DOUBLE(v));
        if (IsInt(v)) return json::Value::Double(PyLong_AsDouble(v));
        if (PyUnicode_Check(v)) {
          // How the exporter stores infinities (and, for symmetry, NaN).
          const char* s = PyUnicode_AsUTF8(v);
          if (s != nullptr && std::strcmp(s, "inf") == 0) {
            return json::Value::Double(std::numeric_limits<double>::infinity());
          }
          if (s != nullptr && std::strcmp(s, "-inf") == 0) {
            return json::Value::Double(-std::numeric_limits<double>::infinity());
          }
          if (s != nullptr && std::strcmp(s, "nan") == 0) {
            return json::Value::Double(std::numeric_limits<double>::quiet_NaN());
          }
          PyErr_Clear();
        }
        WrongType(v, "float (or \"inf\", \"-inf\")");
      default: break;
    }
    if (!IsInt(v)) WrongType(v, TypeOf(t, enum_index));
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow > 0 && t == BaseType::ULong) {
      const unsigned long long u = PyLong_AsUnsignedLongLong(v);
      if (!PyErr_Occurred()) return json::Value::UInt(u);
      PyErr_Clear();
    }
    int64_t lo = 0, hi = 0;
    switch (t) {
      case BaseType::Byte: lo = INT8_MIN, hi = INT8_MAX; break;
      case BaseType::UByte: lo = 0, hi = UINT8_MAX; break;
      case BaseType::Short: lo = INT16_MIN, hi = INT16_MAX; break;
      case BaseType::UShort: lo = 0, hi = UINT16_MAX; break;
      case BaseType::Int: lo = INT32_MIN, hi = INT32_MAX; break;
      case BaseType::UInt: lo = 0, hi = UINT32_MAX; break;
      case BaseType::Long: lo = INT64_MIN, hi = INT64_MAX; break;
      default: lo = 0, hi = INT64_MAX; break;  // ULong below 2^63
    }
    if (overflow != 0 || x < lo || x > hi) {
      Invalid(std::string(py::str(v)) + " is out of range for the schema's " + fbs::TypeName(t) +
              " (found int, expected " + TypeOf(t, enum_index) + ")");
    }
    if (enum_index >= 0 && schema_.data().enums[enum_index].ByValue(x) == nullptr) {
      Invalid(std::to_string(x) + " is not a value of enum " +
              std::string(schema_.data().enums[enum_index].name) + " (found " + Found(v) + " " +
              std::to_string(x) + ", expected " + TypeOf(t, enum_index) + ")");
    }
    return json::Value::Int(x);
  }

  Items& items_;
  const ProgramSchema& schema_;
  std::string path_;
  std::vector<std::pair<std::string_view, size_t>> frames_;
  std::vector<json::Value::Member> scratch_;  // see Table()
};

namespace {

// A mapping's items() as a list of (key, value) pairs.
py::list ItemsOf(TreeWalker& w, py::handle mapping, const std::string& expected) {
  if (!PyDict_Check(mapping.ptr()) && !py::hasattr(mapping, "items")) {
    w.WrongType(mapping.ptr(), expected);
  }
  return py::list(mapping.attr("items")());
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
    PathPush at(w.path(), "scalar_type");
    l.scalar_type = static_cast<int>(w.Int(st.ptr(), "ScalarType (int)"));
  }
  {
    py::object sizes = w.Attr(layout.ptr(), "sizes", "list of int");
    PathPush at(w.path(), "sizes");
    w.ForEach(sizes.ptr(), "list of int", [&](PyObject* s) {
      const int64_t v = w.Int(s, "int");
      if (v < 0 || v > INT32_MAX) w.Invalid(std::to_string(v) + " is not a size the format holds");
      l.sizes.push_back(static_cast<int32_t>(v));
    });
  }
  {
    py::object order = w.Attr(layout.ptr(), "dim_order", "list of int");
    PathPush at(w.path(), "dim_order");
    w.ForEach(order.ptr(), "list of int", [&](PyObject* d) {
      const int64_t v = w.Int(d, "int");
      if (v < 0 || v > 255) w.Invalid(std::to_string(v) + " is not a dimension index");
      l.dim_order.push_back(static_cast<uint8_t>(v));
    });
  }
  return l;
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
    SourcePtr source;
    uint64_t alignment = 1;
    std::optional<TensorLayout> layout;
  };

  // Calls fn(entry) for each entry of `map`, which is at the walker's path.
  template <typename Fn>
  void Read(py::handle map, Fn&& fn) {
    for (py::handle kv : ItemsOf(w_, map, "dict of str to DataEntry")) {
      py::tuple pair = py::reinterpret_borrow<py::tuple>(kv);
      Entry e;
      e.key = KeyOf(w_, pair[0]);
      std::string& path = w_.path();
      const size_t size = path.size();
      path += Quoted(e.key);
      PyObject* entry = pair[1].ptr();
      if (entry == Py_None) w_.WrongType(entry, "DataEntry");
      py::object index = w_.Attr(entry, "buffer_index", "int");
      size_t buffer = 0;
      {
        PathPush field(path, "buffer_index");
        const int64_t i = w_.Int(index.ptr(), "int");
        if (i < 0 || static_cast<size_t>(i) >= sources_.size()) {
          w_.Invalid(std::to_string(i) + " is past " + buffers_path_ + " (" +
                     std::to_string(sources_.size()) + " entries)");
        }
        buffer = static_cast<size_t>(i);
      }
      py::object alignment = w_.Attr(entry, "alignment", "int");
      if (!alignment.is_none()) {
        PathPush field(path, "alignment");
        const int64_t a = w_.Int(alignment.ptr(), "int");
        if (a <= 0) w_.Invalid("alignment " + std::to_string(a) + " is not positive");
        e.alignment = static_cast<uint64_t>(a);
      }
      py::object layout = w_.Attr(entry, "tensor_layout", "TensorLayout or None");
      if (!layout.is_none()) {
        PathPush field(path, "tensor_layout");
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

// fully_qualified_name -> layout of every EXTERNAL tensor of the program tree.
std::map<std::string, TensorLayout> ExternalLayouts(const json::Value& program) {
  std::map<std::string, TensorLayout> layouts;
  const json::Value* plans = program.Find("execution_plan");
  if (plans == nullptr || plans->kind() != json::Kind::kArray) return layouts;
  for (const json::Value& plan : plans->items()) {
    const json::Value* values = plan.Find("values");
    if (values == nullptr || values->kind() != json::Kind::kArray) continue;
    for (const json::Value& v : values->items()) {
      const json::Value* type = v.Find("val_type");
      if (type == nullptr || type->as_string() != "Tensor") continue;
      const json::Value& t = *v.Find("val");
      const json::Value* info = t.Find("extra_tensor_info");
      if (info == nullptr || info->is_null()) continue;
      const json::Value* location = info->Find("location");
      const json::Value* name = info->Find("fully_qualified_name");
      if (location == nullptr || !location->is_integer() || location->as_int() != 1 ||
          name == nullptr || name->is_null()) {
        continue;
      }
      TensorLayout l;
      const json::Value* st = t.Find("scalar_type");
      l.scalar_type = st != nullptr && st->is_integer() ? static_cast<int>(st->as_int()) : 0;
      if (const json::Value* sizes = t.Find("sizes"); sizes && !sizes->is_null()) {
        for (const json::Value& x : sizes->items())
          l.sizes.push_back(static_cast<int32_t>(x.as_int()));
      }
      if (const json::Value* order = t.Find("dim_order"); order && !order->is_null()) {
        for (const json::Value& d : order->items()) {
          l.dim_order.push_back(static_cast<uint8_t>(d.as_int()));
        }
      }
      layouts[name->as_string()] = std::move(l);
    }
  }
  return layouts;
}

void WalkPte(TreeWalker& w, const PteNames& names, py::handle program, py::handle mutable_data,
             py::handle named_data, PteInput* input) {
  w.path() = names.program;
  if (program.is_none()) w.WrongType(program.ptr(), "Program");
  input->program = ProgramStructure::FromTree(w.Program(program.ptr(), input));
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
      input->named_data.push_back({std::move(e.key), std::move(e.source), e.alignment});
    });
  }
}

// The .ptd of each tag, in the order tags first appear, each key in one tag.
class DataFiles {
 public:
  explicit DataFiles(TreeWalker& w) : w_(w) {}

  void Tag(const std::string& tag) {
    if (index_.emplace(tag, files_.size()).second) files_.push_back({tag, PtdInput()});
  }

  void Add(const std::string& tag, const std::string& key, const SourcePtr& source,
           uint64_t alignment, std::optional<TensorLayout> layout) {
    auto [where, fresh] = tag_of_key_.emplace(key, tag);
    if (!fresh && where->second != tag) {
      w_.Invalid("named-data key '" + key + "' is in two tags, '" + where->second + "' and '" +
                 tag +
                 "' (found it in both, expected each key in one .ptd: the runtime merges "
                 "the keys of all of a program's .ptd files)");
    }
    Tag(tag);
    PtdInput& input = files_[index_[tag]].second;
    auto [it, added] =
        buffer_of_[tag].emplace(source.get(), static_cast<uint32_t>(input.buffers.size()));
    if (added) input.buffers.push_back(source);
    PtdEntry e;
    e.key = key;
    e.buffer_index = it->second;
    e.alignment = alignment;
    e.layout = std::move(layout);
    input.entries.push_back(std::move(e));
  }

  std::vector<std::pair<std::string, PtdInput>> Take() { return std::move(files_); }

 private:
  TreeWalker& w_;
  std::vector<std::pair<std::string, PtdInput>> files_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> tag_of_key_;
  std::map<std::string, std::map<const Source*, uint32_t>> buffer_of_;
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
  std::map<const Source*, uint32_t> buffer_of;
  reader.Read(named, [&](NamedDataReader::Entry e) {
    auto [it, added] =
        buffer_of.emplace(e.source.get(), static_cast<uint32_t>(input.buffers.size()));
    if (added) input.buffers.push_back(e.source);
    input.entries.push_back({std::move(e.key), it->second, e.alignment, std::move(e.layout)});
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
  const std::map<std::string, TensorLayout> layouts = ExternalLayouts(out.program.program.tree());

  DataFiles files(w);
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
    for (py::handle kv : ItemsOf(w, constant_map, "dict of tag to dict of str to int")) {
      py::tuple tag_map = py::reinterpret_borrow<py::tuple>(kv);
      const std::string tag = KeyOf(w, tag_map[0]);
      const std::string map_path = w.path();
      w.path() += Quoted(tag);
      for (py::handle fi : ItemsOf(w, tag_map[1], "dict of str to int")) {
        py::tuple fqn_index = py::reinterpret_borrow<py::tuple>(fi);
        const std::string fqn = KeyOf(w, fqn_index[0]);
        const size_t size = w.path().size();
        w.path() += Quoted(fqn);
        const int64_t i = w.Int(fqn_index[1].ptr(), "int");
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
        files.Add(tag, fqn, sources[i], 1, layout->second);
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
    for (py::handle kv : ItemsOf(w, external, "dict of tag to dict of str to DataEntry")) {
      py::tuple tag_map = py::reinterpret_borrow<py::tuple>(kv);
      const std::string tag = KeyOf(w, tag_map[0]);
      // Without emitter constants every tag of the store is a file, even an
      // empty one; merged, only tags that hold a key are.
      if (!out.merged) files.Tag(tag);
      const std::string saved = w.path();
      w.path() += Quoted(tag);
      reader.Read(tag_map[1], [&](NamedDataReader::Entry e) {
        files.Add(tag, e.key, e.source, e.alignment, std::move(e.layout));
      });
      w.path() = saved;
    }
  }
  out.data = files.Take();
  return out;
}

}  // namespace etpack::python
