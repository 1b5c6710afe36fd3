// etpack/object_reader.h — a structure given as the caller's own objects.
//
// An exporter holds its program as a tree of objects whose attributes carry
// the schema's field names (ExecuTorch's exir dataclasses: docs/python.md).
// ReadProgramObjects (etpack/program_objects.h) walks the schema and asks an
// ObjectReader, which the caller implements for its object model, for one
// field at a time; the library builds the flatbuffer straight from the
// answers, with no JSON and no intermediate tree. The reader only answers
// questions: which attribute, what kind, what value. What the schema wants,
// and every error message, is the library's.
//
// How schema values are expected in the objects:
//   table          an object with one attribute per schema field
//   union          the member's object; its class name (ClassName) names the
//                  member ("Tensor", "KernelCall", ...)
//   enum           its integer value
//   bool, int      the reader's bool and int (a bool is never an int)
//   float, double  a float or an int, or the strings "inf", "-inf" and "nan"
//                  (how ExecuTorch's exporter stores infinities)
//   string         a string (stored as UTF-8)
//   vector         a list; [ubyte] also as bytes
//   absent         none (Object nullptr); a scalar equal to its schema
//                  default is stored as absent, as flatbuffers does
//
// Lifetime: every Object a reader hands out stays valid until the reader is
// destroyed (a reader keeps what it made alive) or the library releases it
// (ReleaseTo); the library never frees one.
// A reader is used by one thread at a time; the calls need whatever the
// object model needs (for Python, the GIL).

#ifndef ETPACK_OBJECT_READER_H_
#define ETPACK_OBJECT_READER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "etpack/source.h"
#include "etpack/status.h"

namespace etpack {

class ObjectReader {
 public:
  // The caller's handle of one object. nullptr stands for none: an absent
  // optional field.
  using Object = const void*;
  // A key made by Key(), standing for one attribute name.
  using Key = const void*;

  enum class Kind { kNone, kBool, kInt, kFloat, kString, kList, kBytes, kOther };

  struct ItemSpan {
    const Object* items = nullptr;
    size_t size = 0;
  };

  virtual ~ObjectReader() = default;

  // The key of attribute `name`, asked once per schema field before any
  // Get() with it. Never nullptr.
  virtual Key KeyOf(std::string_view name) = 0;

  // The attribute `key` of `object` (REQUIRES: object != nullptr): *value is
  // the attribute (nullptr for none) and *found whether it exists. A failure
  // of the object model itself (an exception raised by a property) is a
  // non-OK status; the library passes it on unchanged.
  virtual Status Get(Object object, Key key, Object* value, bool* found) = 0;

  // A mark of what has been handed out so far. ReleaseTo(mark) says the
  // library is done with everything handed out since (Get's values,
  // ItemsOf's items, BytesOf's bytes): a reader that keeps what it hands out
  // may let it go then, while it is still in the cache, instead of all at
  // its end. The library releases a table's fields once it has built the
  // table; marks are released last made, first.
  virtual size_t Mark() { return 0; }
  virtual void ReleaseTo(size_t mark) { (void)mark; }

  // What `object` is. kOther: none of the others (a table, a union member).
  virtual Kind KindOf(Object object) = 0;
  // The bare class name of `object` ("Tensor"; "None" for nullptr), which
  // names a union's member and appears in errors.
  virtual std::string_view ClassName(Object object) = 0;
  // The value as text, for errors ("300").
  virtual std::string Text(Object object) = 0;

  // REQUIRES: KindOf(object) == kBool.
  virtual bool Bool(Object object) = 0;
  // REQUIRES: kInt. false when the value does not fit the type asked for.
  virtual bool Int64(Object object, int64_t* value) = 0;
  virtual bool UInt64(Object object, uint64_t* value) = 0;
  // REQUIRES: kFloat or kInt.
  virtual double Double(Object object) = 0;
  // REQUIRES: kString. Its UTF-8 text; a non-OK status when it has none
  // (Python: a lone surrogate), which the library reports at the field.
  virtual Status Utf8(Object object, std::string_view* text) = 0;
  // REQUIRES: kList. The items. `stable`: the library will run attribute
  // reads on the items, which may run the caller's code; the reader hands
  // out a snapshot that such code cannot change.
  virtual Status ItemsOf(Object list, bool stable, ItemSpan* items) = 0;
  // REQUIRES: kBytes. The bytes, valid while the reader lives.
  virtual Status BytesOf(Object object, const uint8_t** data, size_t* size) = 0;

  // The bulk bytes of a data field (Buffer.storage,
  // BackendDelegateInlineData.data) as a source that borrows them, never a
  // copy. path() names the field for errors
  // ("program.constant_buffer[3].storage"); it is called only for one. A
  // non-OK status when the object holds no bytes the reader can lend.
  virtual Result<SourcePtr> DataOf(Object object, const std::function<std::string()>& path) = 0;

  // The error for a value of the wrong type or a missing attribute,
  // `message` naming the path, the type expected and the type found. The
  // default is InvalidArgument(message); a reader whose object model has
  // its own kind of type error may note it here (Python raises TypeError).
  virtual Status WrongType(std::string message) { return InvalidArgument(std::move(message)); }
};

}  // namespace etpack

#endif  // ETPACK_OBJECT_READER_H_
