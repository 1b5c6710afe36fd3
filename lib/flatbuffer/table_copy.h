// flatbuffer/table_copy.h (internal) — a verified flatbuffer copied table by
// table as an input of the one builder (table_builder.h), with typed
// edits: a CopyEdits is asked, per field of the tables it edits, whether to
// copy the field, leave it out or take a replacement it builds at the
// field's turn with the builder's checked primitives. How a planner fills
// the fields it decides and how a program is re-pointed, without a tree.

#ifndef ETPACK_FLATBUFFER_TABLE_COPY_H_
#define ETPACK_FLATBUFFER_TABLE_COPY_H_

#include <flatbuffers/flatbuffer_builder.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "etpack/status.h"
#include "flatbuffer/build_options.h"
#include "flatbuffer/schema_info.h"

namespace etpack::fbs {

class TableBuilder;

// What the copy does with one non-scalar field of a table.
struct FieldEdit {
  enum class Kind : uint8_t { kCopy, kDrop, kReplace };
  Kind kind = Kind::kCopy;
  uoffset_t offset = 0;  // kReplace: the object built for the field

  static FieldEdit Copy() { return {}; }
  static FieldEdit Drop() { return {Kind::kDrop, 0}; }
  static FieldEdit Replace(uoffset_t o) { return {Kind::kReplace, o}; }
};

// The edits a copy applies. Tables of an object for which Edits() is false
// are copied without asking (a copy costs one check per table then).
// For a table of an edited object: Begin, then for each field of the
// schema in id order (present in the source or not), Child for a
// non-scalar one at its turn and Scalar for a scalar one; a union's type is
// not asked (it is the source's, so it names the member copied). A
// replacement is built inside Child with the TableBuilder's primitives
// (TableBuilder::Room, StringOf, OffsetVector, UninitializedVector,
// BytesOf, StartTable, Table), which keep the 2 GiB limit and the vector
// alignment.
class CopyEdits {
 public:
  virtual ~CopyEdits() = default;
  // `obj_index` indexes SchemaData::objects.
  virtual bool Edits(int obj_index) const = 0;
  // `src` is the table copied; nullptr for a table the edits create
  // (TableBuilder::Table(obj, nullptr) during the copy).
  virtual Status Begin(int obj_index, const flatbuffers::Table* src) {
    (void)obj_index;
    (void)src;
    return Status::OK();
  }
  virtual Result<FieldEdit> Child(int obj_index, const FieldInfo& f, const flatbuffers::Table* src,
                                  TableBuilder& b) {
    (void)obj_index;
    (void)f;
    (void)src;
    (void)b;
    return FieldEdit::Copy();
  }
  // True with *bits (two's complement, the field's width) to write the
  // integer field f (bool, enum, integer) as bits instead of src's value;
  // a value equal to the default is left out, as always.
  virtual bool Scalar(int obj_index, const FieldInfo& f, const flatbuffers::Table* src,
                      uint64_t* bits) {
    (void)obj_index;
    (void)f;
    (void)src;
    (void)bits;
    return false;
  }
};

// A copy of `verified` (a flatbuffer of `schema` that passed its verifier,
// `size` bytes) with `edits` applied (nullptr: none). Tables are built in
// the order BuildFlatbuffer builds them, so a copy without edits gives the
// bytes a build of the same structure gives. The result is below 2 GiB or
// an error naming the path.
Result<std::vector<uint8_t>> CopyFlatbuffer(SchemaId schema, const uint8_t* verified, uint64_t size,
                                            CopyEdits* edits, const BuildOptions& options = {});

}  // namespace etpack::fbs

#endif  // ETPACK_FLATBUFFER_TABLE_COPY_H_
