#include "etpack/layout.h"

#include <string>

namespace etpack {

Status CheckAlignment(uint64_t a, std::string_view what) {
  if (IsPowerOfTwo(a)) return Status::OK();
  return InvalidArgument(std::string(what) + " = " + std::to_string(a) +
                         " is not a power of two");
}

Result<uint64_t> AlignUp(uint64_t offset, uint64_t alignment) {
  const uint64_t mask = alignment - 1;
  if (offset > UINT64_MAX - mask) {
    return OutOfRange("offset " + std::to_string(offset) + " aligned up to " +
                      std::to_string(alignment) + " exceeds 2^64");
  }
  return (offset + mask) & ~mask;
}

Result<uint64_t> CheckedAdd(uint64_t a, uint64_t b, std::string_view what) {
  if (a > UINT64_MAX - b) {
    return OutOfRange(std::string(what) + ": " + std::to_string(a) + " + " +
                      std::to_string(b) + " exceeds 2^64");
  }
  return a + b;
}

Result<PackedBuffers> PackBuffers(const std::vector<uint64_t>& sizes,
                                  uint64_t alignment) {
  ETPACK_RETURN_IF_ERROR(CheckAlignment(alignment, "buffer alignment"));
  PackedBuffers out;
  out.offsets.reserve(sizes.size());
  uint64_t end = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    uint64_t start = end;
    // Padding goes after a buffer only when another follows it.
    if (i > 0) {
      ETPACK_ASSIGN_OR_RETURN(start, AlignUp(end, alignment));
    }
    out.offsets.push_back(start);
    if (sizes[i] > UINT64_MAX - start) {  // not CheckedAdd: no message per buffer
      return CheckedAdd(start, sizes[i], "buffer " + std::to_string(i) + " end").status();
    }
    end = start + sizes[i];
  }
  out.size = end;
  return out;
}

Result<SegmentLayout> LayoutSegments(const std::vector<SegmentSpec>& specs,
                                     uint64_t segment_alignment) {
  ETPACK_RETURN_IF_ERROR(CheckAlignment(segment_alignment, "segment_alignment"));
  SegmentLayout out;
  out.offsets.reserve(specs.size());
  uint64_t end = 0;
  for (size_t j = 0; j < specs.size(); ++j) {
    ETPACK_RETURN_IF_ERROR(CheckAlignment(
        specs[j].alignment, "segment " + std::to_string(j) + " alignment"));
    const uint64_t align = specs[j].alignment > segment_alignment
                               ? specs[j].alignment
                               : segment_alignment;
    ETPACK_ASSIGN_OR_RETURN(uint64_t start, AlignUp(end, align));
    out.offsets.push_back(start);
    if (specs[j].size > UINT64_MAX - start) {
      return CheckedAdd(start, specs[j].size, "segment " + std::to_string(j) + " end").status();
    }
    end = start + specs[j].size;
  }
  out.data_size = end;
  return out;
}

}  // namespace etpack
