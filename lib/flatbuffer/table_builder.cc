// TableBuilder (flatbuffer/table_builder.h): the checked primitives that
// its walk (table_builder_inl.h) and a CopyEdits build with.

#include "flatbuffer/table_builder.h"

#include <algorithm>
#include <cassert>
#include <string>
#include <vector>

namespace etpack::fbs {

Status TableBuilder::Configure(const BuildOptions& options) {
  path_.root() = options.root_path;
  for (const auto& [name, align] : options.vector_alignment) {
    const FieldInfo* found = FindField(d_, name);
    if (found == nullptr || found->type != BaseType::Vector) {
      return InvalidArgument("vector_alignment: \"" + name +
                             "\" is not a vector field (Table.field) of the schema");
    }
    if (align == 0 || (align & (align - 1)) != 0 || align > kMaxVectorAlignment) {
      return InvalidArgument("vector_alignment: " + name + " = " + std::to_string(align) +
                             " is not a power of two up to " + std::to_string(kMaxVectorAlignment));
    }
    alignment_[found->field] = align;
  }
  return Status::OK();
}

Status TableBuilder::Room(uint64_t bytes) const {
  const uint64_t have = fbb_.GetSize();
  if (bytes > kMaxFlatbufferSize || have + bytes > kMaxFlatbufferSize - kFinishReserve) {
    return OutOfRange(Where() + ": adding " + std::to_string(bytes) + " bytes to " +
                      std::to_string(have) +
                      " would exceed the 2 GiB flatbuffer limit; move bulk data to segments");
  }
  return Status::OK();
}

Result<uoffset_t> TableBuilder::StringOf(std::string_view s) {
  ETPACK_RETURN_IF_ERROR(Room(uint64_t{s.size()} + 8));
  return fbb_.CreateString(s.data(), s.size()).o;
}

Result<uoffset_t> TableBuilder::OffsetVector(const uoffset_t* offsets, size_t n) {
  ETPACK_RETURN_IF_ERROR(Room(uint64_t{n} * sizeof(uoffset_t) + 8));
#if FLATBUFFERS_VERSION_MAJOR >= 23  // names the alignment 2.0 took to be the element size
  fbb_.StartVector(n, sizeof(uoffset_t), sizeof(uoffset_t));
#else
  fbb_.StartVector(n, sizeof(uoffset_t));
#endif
  for (size_t i = n; i > 0; --i) fbb_.PushElement(flatbuffers::Offset<void>(offsets[i - 1]));
  return fbb_.EndVector(n);
}

// Room for n elements of elem_size bytes, aligned as f asks
// (VectorAlignment, at least the element size).
Result<uoffset_t> TableBuilder::UninitializedVector(const FieldInfo& f, uint64_t n,
                                                    size_t elem_size, uint8_t** dst) {
  const uint64_t align = std::max<uint64_t>(VectorAlignment(f), elem_size);
  ETPACK_RETURN_IF_ERROR(Room(n * elem_size + align + 8));
  if (align > elem_size) {
    fbb_.PreAlign(static_cast<size_t>(n * elem_size), static_cast<size_t>(align));
  }
#if FLATBUFFERS_VERSION_MAJOR >= 23  // as in OffsetVector
  const uoffset_t off =
      fbb_.CreateUninitializedVector(static_cast<size_t>(n), elem_size, elem_size, dst);
#else
  const uoffset_t off = fbb_.CreateUninitializedVector(static_cast<size_t>(n), elem_size, dst);
#endif
  // The data's distance from the buffer end is a multiple of the
  // alignment, and Finish pads the whole buffer to the largest one.
  assert(n == 0 || (fbb_.GetSize() - sizeof(uoffset_t)) % align == 0);
  return off;
}

Result<uoffset_t> TableBuilder::BytesOf(const FieldInfo& f, const Source& src) {
  const uint64_t n = src.size();
  uint8_t* dst = nullptr;
  ETPACK_ASSIGN_OR_RETURN(const uoffset_t off, UninitializedVector(f, n, 1, &dst));
  if (n > 0) {
    if (const uint8_t* p = src.contiguous()) {
      std::memcpy(dst, p, static_cast<size_t>(n));
    } else {
      Status st = src.ReadAt(0, dst, static_cast<size_t>(n));
      if (!st.ok()) return st.WithContext(Where());
    }
  }
  return off;
}

Result<uoffset_t> TableBuilder::StartTable(int obj_index) {
  ETPACK_RETURN_IF_ERROR(
      Room(uint64_t{d_.objects[static_cast<size_t>(obj_index)].fields.size()} * 16 + 64));
  return fbb_.StartTable();
}

void TableBuilder::AddScalar(const FieldInfo& f, uint64_t bits) {
  const voffset_t off = f.offset;
  switch (f.type) {
    case BaseType::Bool:
    case BaseType::UType:
    case BaseType::UByte: return AddInt<uint8_t>(off, bits, f);
    case BaseType::Byte: return AddInt<int8_t>(off, bits, f);
    case BaseType::Short: return AddInt<int16_t>(off, bits, f);
    case BaseType::UShort: return AddInt<uint16_t>(off, bits, f);
    case BaseType::Int: return AddInt<int32_t>(off, bits, f);
    case BaseType::UInt: return AddInt<uint32_t>(off, bits, f);
    case BaseType::Long: return AddInt<int64_t>(off, bits, f);
    case BaseType::Float: {
      // Compared with the default as a float: a NaN is never left out.
      float x = 0;
      const uint32_t u = static_cast<uint32_t>(bits);
      std::memcpy(&x, &u, sizeof x);
      fbb_.AddElement<float>(off, x, static_cast<float>(f.default_real));
      return;
    }
    case BaseType::Double: {
      double x = 0;
      std::memcpy(&x, &bits, sizeof x);
      fbb_.AddElement<double>(off, x, f.default_real);
      return;
    }
    default: return AddInt<uint64_t>(off, bits, f);
  }
}

Result<std::vector<uint8_t>> TableBuilder::Finish(uoffset_t root_off) {
  const bool has_ident = d_.file_ident.size() == flatbuffers::kFileIdentifierLength;
  fbb_.Finish(flatbuffers::Offset<void>(root_off), has_ident ? d_.file_ident.c_str() : nullptr);
  const uint8_t* p = fbb_.GetBufferPointer();
  return std::vector<uint8_t>(p, p + fbb_.GetSize());
}

}  // namespace etpack::fbs
