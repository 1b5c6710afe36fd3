// flatbuffer/table_builder.h (internal) — the one flatbuffer builder: it
// walks the reflection schema and emits tables, vectors, unions, strings
// and scalars, asking a TableInput for each field's value (its walk is in
// table_builder_inl.h). The inputs are drivers that only answer: a JSON
// tree (tree_builder.cc), a verified flatbuffer copied with typed edits
// (table_copy.cc) and the caller's objects read through an ObjectReader
// (object_builder.cc). What is the same for every input (field order,
// defaults left out, union types, required fields, vector alignment, the
// 2 GiB limit, error paths) is only here.

#ifndef ETPACK_FLATBUFFER_TABLE_BUILDER_H_
#define ETPACK_FLATBUFFER_TABLE_BUILDER_H_

#include <flatbuffers/flatbuffer_builder.h>
#include <flatbuffers/reflection.h>

#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "etpack/error_path.h"
#include "etpack/source.h"
#include "etpack/status.h"
#include "flatbuffer/build_options.h"
#include "flatbuffer/schema_info.h"

namespace etpack::fbs {

// flatbuffers offsets are signed 32-bit; its builder aborts (asserts) past
// this, so every append is checked against it first.
inline constexpr uint64_t kMaxFlatbufferSize = (uint64_t{1} << 31) - 1;
// Held back for what follows the last checked append: table vtables, final
// alignment padding and the root offset + identifier written by Finish.
inline constexpr uint64_t kFinishReserve = uint64_t{1} << 17;
inline constexpr uint64_t kMaxVectorAlignment = uint64_t{1} << 16;

struct IntRange {
  int64_t min;
  uint64_t max;
};

inline IntRange RangeOf(BaseType t) {
  switch (t) {
    case BaseType::Bool: return {0, 1};
    case BaseType::Byte: return {INT8_MIN, INT8_MAX};
    case BaseType::UType:
    case BaseType::UByte: return {0, UINT8_MAX};
    case BaseType::Short: return {INT16_MIN, INT16_MAX};
    case BaseType::UShort: return {0, UINT16_MAX};
    case BaseType::Int: return {INT32_MIN, INT32_MAX};
    case BaseType::UInt: return {0, UINT32_MAX};
    case BaseType::Long: return {INT64_MIN, INT64_MAX};
    case BaseType::ULong: return {0, UINT64_MAX};
    default: return {0, 0};
  }
}

// Scalars travel from an input to the builder as the bits of their
// little-endian encoding: two's complement for integers (bool, enum, union
// type), IEEE for float and double. These are a float's or double's (t).
inline uint64_t RealBits(BaseType t, double d) {
  if (t == BaseType::Float) {
    const float f = static_cast<float>(d);
    uint32_t u = 0;
    std::memcpy(&u, &f, sizeof u);
    return u;
  }
  uint64_t u = 0;
  std::memcpy(&u, &d, sizeof u);
  return u;
}

// Writes the low bytes of the scalar bits (of type t) little-endian at dst.
inline void WriteScalarBits(BaseType t, uint8_t* dst, uint64_t bits) {
  switch (flatbuffers::GetTypeSize(t)) {
    case 1: flatbuffers::WriteScalar<uint8_t>(dst, static_cast<uint8_t>(bits)); break;
    case 2: flatbuffers::WriteScalar<uint16_t>(dst, static_cast<uint16_t>(bits)); break;
    case 4: flatbuffers::WriteScalar<uint32_t>(dst, static_cast<uint32_t>(bits)); break;
    default: flatbuffers::WriteScalar<uint64_t>(dst, bits); break;
  }
}

class TableBuilder;

// What the builder asks an input, in the order it builds: for a table,
// Begin, then each present field in id order (Scalar, Union or Field; a
// union's type field is answered by Union), then End. A value the builder
// descends into is a Node, the input's own handle (a json::Value*, a
// flatbuffers::Table*, an ObjectReader::Object). Errors name the path the
// builder keeps (TableBuilder::Push, Fail): it has pushed the field's name
// for Field and the calls on its value, not for Scalar (the copy's, the
// hot path, cannot fail) and Union (whose type and value may fail at
// different fields): an input that fails there pushes what it names.
class TableInput {
 public:
  using Node = const void*;

  // What a non-scalar field holds.
  struct Value {
    enum class Kind : uint8_t { kAbsent, kNode, kBuilt };
    Kind kind = Kind::kAbsent;
    Node node = nullptr;  // kNode: built by the builder as the field's type asks
    uoffset_t built = 0;  // kBuilt: the object the input built for the field

    static Value Absent() { return {}; }
    static Value Of(Node n) { return {Kind::kNode, n, 0}; }
    static Value Built(uoffset_t o) { return {Kind::kBuilt, nullptr, o}; }
  };

  // A vector node: its length and what the input needs to reach the items.
  struct Vector {
    Node items = nullptr;
    size_t size = 0;
    uint32_t form = 0;  // the input's own
  };

  virtual ~TableInput() = default;

  // Table obj_index (of SchemaData::objects) at `table` begins; an error
  // when `table` is not one. End: its fields are done.
  virtual Status Begin(int obj_index, Node table) = 0;
  virtual void End(int obj_index) { (void)obj_index; }
  // Scalar field f (field id `id`, not a union type): true with *bits, or
  // false when absent (left out, as a value equal to the default is).
  virtual Result<bool> Scalar(int obj_index, const FieldInfo& f, size_t id, Node table,
                              uint64_t* bits) = 0;
  // Union field f: *code, the member's code written to its type field (0:
  // none), and the member's table (Value::Of) or an object built for it.
  virtual Status Union(int obj_index, const FieldInfo& f, size_t id, Node table, uint8_t* code,
                       Value* value) = 0;
  // String, vector or table field f.
  virtual Status Field(int obj_index, const FieldInfo& f, size_t id, Node table, Value* value) = 0;

  virtual Result<std::string_view> String(Node v) = 0;
  virtual Result<Vector> VectorOf(const FieldInfo& f, Node v) = 0;
  // Vector of scalars: its v.size elements' little-endian bytes at dst.
  virtual Status ScalarItems(const FieldInfo& f, const Vector& v, uint8_t* dst) = 0;
  // Vector of strings or tables: item i.
  virtual Node Item(const FieldInfo& f, const Vector& v, size_t i) = 0;
};

// Builds one flatbuffer of a schema from a TableInput. A table is built the
// same way whatever the input: its children in field order, then the table
// (scalars, then offsets, each in field order), so one structure gives the
// same bytes whichever way it came. Its checked primitives also serve a
// CopyEdits building a replacement (flatbuffer/table_copy.h); each checks
// for room first (the 2 GiB limit), so nothing past it reaches the
// flatbuffers builder.
class TableBuilder {
 public:
  using Node = TableInput::Node;

  explicit TableBuilder(const SchemaData& data, size_t initial_size = 1024)
      : d_(data), fbb_(initial_size) {}

  // The errors' root and the alignment of [ubyte] vectors by "Table.field",
  // overriding the schema's force_align.
  Status Configure(const BuildOptions& options);
  // The finished flatbuffer (root + file identifier) of `in`, a final
  // class derived from TableInput, from `root` (table_builder_inl.h).
  template <typename In>
  Result<std::vector<uint8_t>> Build(In& in, Node root);

  const SchemaData& schema() const { return d_; }
  flatbuffers::FlatBufferBuilder& fbb() { return fbb_; }
  Status Room(uint64_t bytes) const;
  // A string of the builder.
  Result<uoffset_t> StringOf(std::string_view s);
  Result<uoffset_t> OffsetVector(const std::vector<uoffset_t>& offsets) {
    return OffsetVector(offsets.data(), offsets.size());
  }
  Result<uoffset_t> OffsetVector(const uoffset_t* offsets, size_t n);
  // A vector of n elements of elem_size bytes, aligned as f asks, for the
  // caller to fill at *dst before anything else is added to the builder.
  Result<uoffset_t> UninitializedVector(const FieldInfo& f, uint64_t n, size_t elem_size,
                                        uint8_t** dst);
  // The [ubyte] field f holding the bytes of `src`, aligned as f asks.
  Result<uoffset_t> BytesOf(const FieldInfo& f, const Source& src);
  // Starts a table of object obj_index after checking room for it; the
  // caller adds its scalars, then its offsets, each in field order (as
  // every input does), then calls fbb().EndTable(start).
  Result<uoffset_t> StartTable(int obj_index);
  // A table of object obj_index from the input's node (during Build).
  Result<uoffset_t> Table(int obj_index, Node node) { return table_(*this, in_, obj_index, node); }

  // Where the build is, for errors (etpack/error_path.h).
  class Push : public ErrorPath::Push {
   public:
    Push(TableBuilder& b, std::string_view name) : ErrorPath::Push(b.path_, name) {}
    Push(TableBuilder& b, size_t index) : ErrorPath::Push(b.path_, index) {}
  };
  // The current path's text ("(root)" when empty).
  std::string Where() const { return PathOf(path_.Text()); }
  // An error at the current path.
  Status Fail(const std::string& message) const {
    return InvalidArgument(Where() + ": " + message);
  }

 private:
  struct PendingScalar {
    const FieldInfo* field = nullptr;
    uint64_t bits = 0;
  };

  // The walk (table_builder_inl.h).
  template <typename In>
  Result<uoffset_t> WalkTable(In& in, int obj_index, Node node);
  template <typename In>
  Result<uoffset_t> WalkChild(In& in, const FieldInfo& f, Node node);
  template <typename In>
  Result<uoffset_t> WalkVector(In& in, const FieldInfo& f, Node node);
  // Union field f of a table of obj_index at `table`: its offset, 0 when
  // absent.
  template <typename In>
  Result<uoffset_t> WalkUnion(In& in, int obj_index, const FieldInfo& f, size_t id, Node table);
  // The offset of field f (of table `obj`) holding v, 0 when absent;
  // `member` >= 0: v is a union's member table of that object.
  template <typename In>
  Result<uoffset_t> WalkValue(In& in, const ObjectInfo& obj, const FieldInfo& f,
                              const TableInput::Value& v, int member);
  // Scalar field f as its bits; a value equal to the default is left out,
  // as flatc does.
  void AddScalar(const FieldInfo& f, uint64_t bits);
  // An integer of type T: the low bytes of `bits`, and of f's default.
  template <typename T>
  void AddInt(voffset_t off, uint64_t bits, const FieldInfo& f) {
    fbb_.AddElement<T>(off, static_cast<T>(bits), static_cast<T>(f.default_integer));
  }
  Result<std::vector<uint8_t>> Finish(uoffset_t root);

  uint64_t VectorAlignment(const FieldInfo& f) const {
    auto it = alignment_.find(f.field);
    return it != alignment_.end() ? it->second : f.force_align;
  }

  const SchemaData& d_;
  flatbuffers::FlatBufferBuilder fbb_{1024};
  // The input of the Build running, and its walk of a table: Table() for
  // a CopyEdits, which knows no input's type.
  void* in_ = nullptr;
  Result<uoffset_t> (*table_)(TableBuilder&, void*, int, Node) = nullptr;
  ErrorPath path_;  // its fields' names: schema or input text
  // Stacks shared by the recursion, so a table or vector costs no
  // allocation of its own: the scalars and the children's (vtable offset,
  // offset) of the tables under construction, and the vectors' items.
  std::vector<PendingScalar> scalars_;
  std::vector<std::pair<voffset_t, uoffset_t>> pending_;
  std::vector<uoffset_t> items_;
  std::unordered_map<const reflection::Field*, uint64_t> alignment_;
};

// Runs make_and_build(builder) on a TableBuilder of `schema` configured
// with `options`, turning running out of memory into an error: what each
// input's entry point does.
template <typename Fn>
Result<std::vector<uint8_t>> BuildGuarded(const SchemaData& schema, size_t initial_size,
                                          const BuildOptions& options, Fn make_and_build) {
  try {
    TableBuilder builder(schema, initial_size);
    ETPACK_RETURN_IF_ERROR(builder.Configure(options));
    return make_and_build(builder);
  } catch (const std::bad_alloc&) {
    return OutOfRange("out of memory while building the flatbuffer");
  }
}

}  // namespace etpack::fbs

#endif  // ETPACK_FLATBUFFER_TABLE_BUILDER_H_
