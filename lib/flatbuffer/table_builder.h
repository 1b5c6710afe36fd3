// flatbuffer/table_builder.h (internal) — the one flatbuffer builder behind
// tree_builder.h, object_builder.h and table_copy.h. Its three kinds of input each have a
// file of their own: a JSON tree (tree_builder.cc, with what every kind
// shares), a verified flatbuffer copied with typed edits (table_copy.cc)
// and the caller's objects read through an ObjectReader (object_builder.cc).

#ifndef ETPACK_FLATBUFFER_TABLE_BUILDER_H_
#define ETPACK_FLATBUFFER_TABLE_BUILDER_H_

#include <flatbuffers/flatbuffer_builder.h>
#include <flatbuffers/reflection.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "etpack/error_path.h"
#include "etpack/json.h"
#include "etpack/object_reader.h"
#include "etpack/source.h"
#include "etpack/status.h"
#include "flatbuffer/schema_info.h"
#include "flatbuffer/table_copy.h"
#include "flatbuffer/tree_builder.h"

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

// Writes the low bytes of `bits` (an integer of type t, two's complement)
// little-endian at dst.
inline void WriteInt(BaseType t, uint8_t* dst, uint64_t bits) {
  switch (flatbuffers::GetTypeSize(t)) {
    case 1: flatbuffers::WriteScalar<uint8_t>(dst, static_cast<uint8_t>(bits)); break;
    case 2: flatbuffers::WriteScalar<uint16_t>(dst, static_cast<uint16_t>(bits)); break;
    case 4: flatbuffers::WriteScalar<uint32_t>(dst, static_cast<uint32_t>(bits)); break;
    default: flatbuffers::WriteScalar<uint64_t>(dst, bits); break;
  }
}

// Writes `d` as a float or double (t) little-endian at dst.
inline void WriteReal(BaseType t, uint8_t* dst, double d) {
  if (t == BaseType::Float) {
    flatbuffers::WriteScalar<float>(dst, static_cast<float>(d));
  } else {
    flatbuffers::WriteScalar<double>(dst, d);
  }
}

// One builder, three kinds of input: a JSON tree (Build), a verified
// flatbuffer copied with typed edits (Copy) and the caller's
// objects read through an ObjectReader (BuildFromObjects). Every kind builds
// a table the same way: its children in field order, then the table, so one
// structure gives the same bytes whichever way it came.
class TableBuilder {
 public:
  using Object = ObjectReader::Object;

  explicit TableBuilder(const SchemaData& data, size_t initial_size = 1024)
      : d_(data), fbb_(initial_size) {}

  Status Configure(const TreeBuildOptions& options);
  // What every input takes: the errors' root and [ubyte] alignments.
  Status ConfigureLayout(const std::string& root_path,
                         const std::vector<std::pair<std::string, uint64_t>>& vector_alignment);
  Result<std::vector<uint8_t>> Build(const json::Value& root);
  // `edits` may be nullptr; it must outlive the call.
  Result<std::vector<uint8_t>> Copy(const uint8_t* verified, CopyEdits* edits);
  Result<std::vector<uint8_t>> BuildFromObjects(ObjectReader& reader, Object root,
                                                const std::vector<std::string>& skip_root_fields);

  // The checked primitives, also for a CopyEdits building a replacement.
  // Each checks for room first (the 2 GiB limit), so nothing past it reaches
  // the flatbuffers builder.
  const SchemaData& schema() const { return d_; }
  flatbuffers::FlatBufferBuilder& fbb() { return fbb_; }
  Status Room(uint64_t bytes) const;
  // A string of the builder.
  Result<uoffset_t> StringOf(std::string_view s);
  Result<uoffset_t> OffsetVector(const std::vector<uoffset_t>& offsets);
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
  // A table of object obj_index copied from `t` with the edits applied;
  // t == nullptr: a table with no field of its own, filled by the edits.
  Result<uoffset_t> CopyTable(int obj_index, const flatbuffers::Table* t);
  // Where the build is, for errors (etpack/error_path.h).
  class Push : public ErrorPath::Push {
   public:
    Push(TableBuilder& b, std::string_view name) : ErrorPath::Push(b.path_, name) {}
    Push(TableBuilder& b, size_t index) : ErrorPath::Push(b.path_, index) {}
  };
  // An error at the current path.
  Status Fail(const std::string& message) const {
    return InvalidArgument(PathOf(Path()) + ": " + message);
  }

 private:
  // `index` >= 0 names a vector element.
  Status FailAt(int64_t index, const std::string& message) const {
    if (index < 0) return Fail(message);
    return InvalidArgument(PathOf(Path()) + "[" + std::to_string(index) + "]: " + message);
  }

  Result<uoffset_t> Table(int obj_index, const json::Value& v);
  Result<uoffset_t> Child(const FieldInfo& f, const json::Value& v);
  Result<uoffset_t> UnionMember(const FieldInfo& f, const FieldInfo& type_field,
                                const json::Value* type, const json::Value* value);
  Status AddScalar(const FieldInfo& f, const json::Value& v);
  // An integer field (bool, enum, union type) of two's complement `bits`;
  // a value equal to the default is left out, as flatc does.
  void AddIntElement(const FieldInfo& f, uint64_t bits);
  // A float or double field, left out when equal to its default.
  void AddRealElement(const FieldInfo& f, double d);
  Result<uoffset_t> String(const json::Value& v);
  Result<uoffset_t> Vector(const FieldInfo& f, const json::Value& v);
  Result<uoffset_t> ScalarVector(const FieldInfo& f, const json::Value& v);
  Result<std::vector<uint8_t>> Finish(uoffset_t root);

  // Copy: a vector or scalar field of the verified buffer, as it is.
  Result<uoffset_t> CopyVector(const FieldInfo& f, const flatbuffers::Table& t);
  void CopyScalar(const FieldInfo& f, const flatbuffers::Table& t);

  // BuildFromObjects.
  struct ObjectScalar {
    const FieldInfo* field;
    uint64_t bits;
    double real;
  };
  Result<uoffset_t> ObjectTable(int obj_index, Object o, bool root = false);
  Result<uoffset_t> ObjectVector(const FieldInfo& f, Object v);
  Result<uoffset_t> ObjectString(Object v);
  // A scalar of type t (enum `enum_index` or -1) as two's complement bits
  // or, for float and double, a real.
  Status ObjectScalarValue(BaseType t, int enum_index, Object v, uint64_t* bits, double* real);
  Result<Object> Attribute(Object o, int obj_index, size_t id);
  Status WrongType(Object found, const std::string& expected);
  Status Invalid(const std::string& message) const { return Fail(message); }
  std::string TypeOf(BaseType t, int index) const;
  std::string Expected(const FieldInfo& f) const;

  // An integer (or enum) value of type t as two's complement bits.
  Result<uint64_t> Integer(BaseType t, int enum_index, const json::Value& v,
                           int64_t index = -1) const;
  Result<double> Real(BaseType t, const json::Value& v, int64_t index = -1) const;
  // The union member code named by a "<field>_type" value.
  Result<uint8_t> UnionCode(const EnumInfo& e, const json::Value& v) const;

  uint64_t VectorAlignment(const FieldInfo& f) const {
    auto it = alignment_.find(f.field);
    return it != alignment_.end() ? it->second : f.force_align;
  }

  std::string Path() const { return path_.Text(); }

  const SchemaData& d_;
  flatbuffers::FlatBufferBuilder fbb_{1024};
  ErrorPath path_;  // its fields' names: schema or tree text
  // Stacks shared by the recursion, so a table costs no allocation of its
  // own: the tree member of each field (by id) of the tables under
  // construction, and their children's (vtable offset, offset) pairs.
  std::vector<const json::Value*> slots_;
  std::vector<std::pair<voffset_t, uoffset_t>> pending_;
  std::unordered_map<const reflection::Field*, uint64_t> alignment_;
  // Copy: the edits, and by object index whether they edit its tables.
  CopyEdits* edits_ = nullptr;
  std::vector<bool> edited_;
  // BuildFromObjects: the reader, each field's key (by object, field id;
  // made on first use) and the scalars of the tables under construction.
  ObjectReader* reader_ = nullptr;
  std::vector<std::vector<ObjectReader::Key>> keys_;
  std::vector<ObjectScalar> scalars_;
  std::vector<bool> skip_root_;  // by field id of the root table
};

}  // namespace etpack::fbs

#endif  // ETPACK_FLATBUFFER_TABLE_BUILDER_H_
