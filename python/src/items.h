// python/src/items.h — Python objects to the library's inputs, without
// copying a byte (but what a ctypes object owns: Items::Pin).
//
// A data item is a buffer-protocol object, borrowed: its Py_buffer is held
// until the Items are released (for etpack.exir, as long as an artifact
// planned from it lives), and every numpy array the bytes belong to is
// pinned by a weak reference, so the exporter can neither free nor resize
// them (see Items::Pin); memory of a ctypes object, which nothing pins, is
// copied instead,
// a path (str or os.PathLike: the whole file) or a (path, offset, length)
// file range. etpack/__init__.py has already turned numpy arrays and torch
// tensors into C-contiguous buffers. Every function here needs the GIL.

#ifndef ETPACK_PYTHON_ITEMS_H_
#define ETPACK_PYTHON_ITEMS_H_

#include <pybind11/pybind11.h>

#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "etpack/json.h"
#include "etpack/source.h"

namespace etpack::python {

class Items {
 public:
  Items() = default;
  Items(const Items&) = delete;
  Items& operator=(const Items&) = delete;
  // Releases every borrowed buffer. REQUIRES: the GIL is held.
  ~Items();

  // The source of one data item; `what` names it in errors
  // ("constants[3]"). The same memory (address and size) or the same file
  // range given twice gives the same source, so the planners store it once.
  SourcePtr Source(pybind11::handle item, const std::string& what);

  // The source of a buffer-protocol object (which Source() also takes, after
  // ruling out paths and ranges). `what` is called only for an error.
  SourcePtr Borrow(pybind11::handle object, const std::function<std::string()>& what);
  // Weak references to `object` and to what its memory belongs to; false
  // when that memory can be freed or moved whatever is held (a ctypes
  // object's), so it must not be borrowed.
  bool Pin(pybind11::handle object);

 private:
  static pybind11::object Loaded(const char* module, const char* name);

  std::deque<Py_buffer> views_;
  std::vector<pybind11::object> pins_;
  std::vector<pybind11::object> copies_;  // bytes of what could not be pinned
  pybind11::object ndarray_;              // numpy.ndarray once numpy is imported (Pin)
  pybind11::object cdata_;                // _ctypes._CData once ctypes is imported (Pin)
  struct MemoryHash {
    size_t operator()(const std::pair<const void*, Py_ssize_t>& m) const {
      return std::hash<const void*>()(m.first) ^
             (static_cast<size_t>(m.second) * 0x9e3779b97f4a7c15u);
    }
  };
  // Memory borrowed so far, with the object whose export holds it. Looked
  // up once per constant: tens of thousands per call.
  struct Borrowed {
    SourcePtr source;
    PyObject* exporter = nullptr;  // views_ holds a reference
  };
  std::unordered_map<std::pair<const void*, Py_ssize_t>, Borrowed, MemoryHash> memory_;
  std::map<std::tuple<std::string, uint64_t, std::optional<uint64_t>>, SourcePtr> files_;
};

// A path argument (str, bytes or os.PathLike) as the file system's bytes
// (os.fsencode); a TypeError naming `what` for anything else, an
// InvalidArgumentError for a str with no file-system form.
std::string PathOf(pybind11::handle object, const std::string& what);
// Each path of the iterable `objects`, as PathOf, named "what[i]".
std::vector<std::string> PathsOf(pybind11::handle objects, const std::string& what);
// A path the library made (a shard's name) as Python gives file names back:
// a str decoded as os.fsdecode does, so bytes that are not UTF-8 round-trip.
pybind11::object PathObject(const std::string& path);

// A str as UTF-8 (keys, names, JSON text); InvalidArgumentError naming
// `what` and the value for one that has none (a lone surrogate), TypeError
// for anything but a str.
std::string Utf8Of(pybind11::handle object, const std::string& what);

// An int as a uint64_t: a TypeError naming `what` for anything but an int
// (a bool included), an OutOfRangeError naming `what` and the value for one
// that is negative or 2**64 or more.
uint64_t UInt64Of(pybind11::handle value, const std::string& what);

// An int argument, item or result as an integer in [min, max]: a
// TypeError naming `what` for anything but an int (a bool included), an
// OutOfRangeError naming `what` and the value outside.
int64_t IntIn(pybind11::handle value, const std::string& what, int64_t min, int64_t max);

// True for str and os.PathLike objects (bytes are data items, not paths,
// except where only a path can be given: PathOf).
bool IsPath(pybind11::handle object);

// A program given as a dict/list tree (flatc form) to the library's tree.
// Raises TypeError for a value JSON cannot hold and InvalidArgumentError for
// an integer beyond 64 bits or a tree nested too deeply (a dict that
// contains itself), naming the path ("program.execution_plan[0].name").
json::Value JsonTree(pybind11::handle object, const std::string& path = "program");

}  // namespace etpack::python

#endif  // ETPACK_PYTHON_ITEMS_H_
