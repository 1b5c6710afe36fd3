// python/src/py_object_reader.h — Python objects as the library reads a
// structure from them (etpack/object_reader.h): one getattr per field,
// unions by the member object's class name, IntEnums as their value, Double
// "inf"/"-inf" strings as infinities, None as an absent field. Bulk bytes
// become borrowed sources (Items): any buffer-protocol object, or
// file-backed data (an object with no buffer protocol whose `_path` names
// the file; copied file to file). Nothing here knows the exporter's
// classes: the walk that does is exir_program_walk.h. Every function here
// needs the GIL.

#ifndef ETPACK_PYTHON_PY_OBJECT_READER_H_
#define ETPACK_PYTHON_PY_OBJECT_READER_H_

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "etpack/object_reader.h"
#include "etpack/source.h"
#include "etpack/status.h"
#include "items.h"

namespace etpack::python {

// type(o).__name__: "None" for None, the bare name of a class defined in
// Python, the part after the last dot of an extension type's "module.Name".
std::string_view ClassName(PyObject* o);

// The bytes of `data` as a source: a buffer-protocol object (borrowed), or
// file-backed data (no buffer protocol; `_path` names the file). Raises a
// TypeError naming path() for anything else, and whatever reading `_path`
// raised other than AttributeError (a KeyboardInterrupt, a property's own
// error) as it is. path() is called only for an error.
SourcePtr DataSource(Items& items, PyObject* data, const std::function<std::string()>& path);

// Everything the reader hands out stays referenced until the library
// releases it or the reader is destroyed, so no Python code run by an
// attribute read can free an object the library still walks. A Python
// exception other than a missing attribute is kept and raised again by
// Check().
class PyObjectReader final : public ObjectReader {
 public:
  explicit PyObjectReader(Items& items) : items_(items) {}
  ~PyObjectReader() override;
  PyObjectReader(const PyObjectReader&) = delete;
  PyObjectReader& operator=(const PyObjectReader&) = delete;

  // Raises for a failed status of a read through this reader: the Python
  // exception it stands for, a TypeError for a wrong type, else etpack's
  // exception of its code.
  void Check(const Status& status);

  Key KeyOf(std::string_view name) override;
  Status Get(Object object, Key key, Object* value, bool* found) override;
  // A table's fields are dropped when it is built, while they are cached;
  // dropping a million objects at the end would miss the cache on each.
  size_t Mark() override { return held_.size(); }
  void ReleaseTo(size_t mark) override;
  Kind KindOf(Object object) override;
  std::string_view ClassName(Object object) override;
  std::string Text(Object object) override;
  bool Bool(Object object) override;
  bool Int64(Object object, int64_t* value) override;
  bool UInt64(Object object, uint64_t* value) override;
  double Double(Object object) override;
  Status Utf8(Object object, std::string_view* text) override;
  Status ItemsOf(Object list, bool stable, ItemSpan* items) override;
  Status BytesOf(Object object, const uint8_t** data, size_t* size) override;
  Result<SourcePtr> DataOf(Object object, const std::function<std::string()>& path) override;
  Status WrongType(std::string message) override;

 private:
  // Keeps the Python exception set now (clearing it) for Check().
  void KeepException() { exception_.emplace(); }
  Status Pending();

  Items& items_;
  std::vector<PyObject*> keys_;
  std::deque<PyObject*> held_;
  // Each with the size of held_ when it was made (the mark it goes with).
  std::deque<std::pair<size_t, std::vector<Object>>> snapshots_;
  std::deque<std::pair<size_t, Py_buffer>> views_;
  std::optional<pybind11::error_already_set> exception_;
  bool type_error_ = false;
};

}  // namespace etpack::python

#endif  // ETPACK_PYTHON_PY_OBJECT_READER_H_
