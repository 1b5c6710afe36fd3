#include "flatbuffer/verifier_limits.h"

#include <flatbuffers/reflection.h>

#include <algorithm>

namespace etpack {

using namespace fbs;  // NOLINT: the schema tables are this file's vocabulary

Status CheckTableCount(uint64_t tables, const std::string& what) {
  if (tables <= kVerifierMaxTables) return Status::OK();
  return OutOfRange(what + " need " + std::to_string(tables) +
                    " flatbuffer tables; the runtime's verifier accepts at most " +
                    std::to_string(kVerifierMaxTables));
}

namespace {

// Counts like the verifier: every table once, depth 1 at the root.
class Counter {
 public:
  explicit Counter(const SchemaData& d) : d_(d) {}

  void Table(int obj_index, const flatbuffers::Table& t, uint64_t depth) {
    ++count_.tables;
    count_.depth = std::max(count_.depth, depth);
    const ObjectInfo& obj = d_.objects[static_cast<size_t>(obj_index)];
    for (const FieldInfo& f : obj.fields) {
      if (!f.present || t.GetAddressOf(f.offset) == nullptr) continue;
      if (f.type == BaseType::Obj && !f.is_struct) {
        Table(f.index, *t.GetPointer<const flatbuffers::Table*>(f.offset), depth + 1);
      } else if (f.type == BaseType::Union) {
        const FieldInfo& tf = obj.fields[static_cast<size_t>(f.union_type_id)];
        const EnumValue* ev =
            d_.enums[static_cast<size_t>(f.index)].ByValue(t.GetField<uint8_t>(tf.offset, 0));
        if (ev != nullptr && ev->object >= 0) {
          Table(ev->object, *t.GetPointer<const flatbuffers::Table*>(f.offset), depth + 1);
        }
      } else if (f.type == BaseType::Vector && f.element == BaseType::Obj && !f.is_struct) {
        const auto* tables =
            t.GetPointer<const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::Table>>*>(
                f.offset);
        for (uoffset_t i = 0; i < tables->size(); ++i) Table(f.index, *tables->Get(i), depth + 1);
      }
    }
  }
  TableCount count() const { return count_; }

 private:
  const SchemaData& d_;
  TableCount count_;
};

}  // namespace

TableCount CountTables(SchemaId schema, const uint8_t* data, uint64_t size) {
  (void)size;
  const SchemaData& d = Decoded(schema);
  Counter c(d);
  c.Table(d.root, *flatbuffers::GetAnyRoot(data), 1);
  return c.count();
}

Status VerifyFailure(SchemaId schema, bool passes_lifted, const uint8_t* data, uint64_t size,
                     const std::string& name, const std::string& broken) {
  const std::string what = name + " (bytes [0, " + std::to_string(size) + "))";
  if (!passes_lifted) return Corrupt(what + " fails verification: " + broken);
  const TableCount n = CountTables(schema, data, size);
  if (n.tables > kVerifierMaxTables) {
    return Corrupt(what + " has " + std::to_string(n.tables) +
                   " tables; the verifier of the runtime and of etpack's readers accepts at most " +
                   std::to_string(kVerifierMaxTables));
  }
  return Corrupt(what + " nests tables " + std::to_string(n.depth) +
                 " deep; the verifier of the runtime and of etpack's readers accepts at most " +
                 std::to_string(kVerifierMaxDepth));
}

}  // namespace etpack
