#include "plan/segments.h"

#include <algorithm>
#include <string>
#include <utility>

namespace etpack {

Status CheckAlignment(uint64_t a, std::string_view what, uint64_t max) {
  if (a == 0) return InvalidArgument(std::string(what) + " = 0 is not a positive alignment");
  if (a > max) {
    static const char* const kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int unit = 0;
    uint64_t n = max;
    while (n >= 1024) n >>= 10, ++unit;  // exact: max is a power of two
    return InvalidArgument(std::string(what) + " = " + std::to_string(a) +
                           " exceeds the maximum of " + std::to_string(max) + " (" +
                           std::to_string(n) + " " + kUnits[unit] + ")");
  }
  return Status::OK();
}

Status CheckPowerOfTwo(uint64_t a, std::string_view what, uint64_t max) {
  if (!IsPowerOfTwo(a)) {
    return InvalidArgument(std::string(what) + " = " + std::to_string(a) +
                           " is not a power of two");
  }
  return CheckAlignment(a, what, max);
}

Result<uint64_t> Lcm(uint64_t a, uint64_t b, std::string_view what) {
  uint64_t x = a, y = b;  // Euclid: gcd(a, b) ends in x
  while (y != 0) x = std::exchange(y, x % y);
  const uint64_t q = a / x;
  if (q > UINT64_MAX / b) {
    return OutOfRange(std::string(what) + ": lcm(" + std::to_string(a) + ", " + std::to_string(b) +
                      ") exceeds 2^64");
  }
  return q * b;
}

Result<uint64_t> AlignUp(uint64_t offset, uint64_t alignment) {
  const uint64_t rest = offset % alignment;
  const uint64_t pad = rest == 0 ? 0 : alignment - rest;
  if (offset > UINT64_MAX - pad) {
    return OutOfRange("offset " + std::to_string(offset) + " aligned up to " +
                      std::to_string(alignment) + " exceeds 2^64");
  }
  return offset + pad;
}

Result<uint64_t> CheckedAdd(uint64_t a, uint64_t b, std::string_view what) {
  if (a > UINT64_MAX - b) {
    return OutOfRange(std::string(what) + ": " + std::to_string(a) + " + " + std::to_string(b) +
                      " exceeds 2^64");
  }
  return a + b;
}

Segment SourceSegment(SourcePtr source, uint64_t alignment) {
  const uint64_t size = source->size();
  return Segment{size, alignment, {Piece{0, 1, std::move(source)}}};
}

Result<SegmentOffsets> LayoutSegments(const std::vector<Segment>& segments, uint64_t alignment,
                                      std::string_view item) {
  const std::string name(item);
  ETPACK_RETURN_IF_ERROR(CheckAlignment(alignment, name + "_alignment"));
  SegmentOffsets out;
  out.offsets.reserve(segments.size());
  out.alignments.reserve(segments.size());
  uint64_t end = 0;
  for (size_t j = 0; j < segments.size(); ++j) {
    const Segment& s = segments[j];
    if (s.alignment == 0) {  // the message is built only on failure
      return CheckAlignment(s.alignment, name + " " + std::to_string(j) + " alignment");
    }
    ETPACK_ASSIGN_OR_RETURN(const uint64_t align,
                            Lcm(s.alignment, alignment, name + " " + std::to_string(j)));
    ETPACK_ASSIGN_OR_RETURN(uint64_t start, AlignUp(end, align));
    if (s.size > UINT64_MAX - start) {
      return CheckedAdd(start, s.size, name + " " + std::to_string(j) + " end").status();
    }
    out.offsets.push_back(start);
    out.alignments.push_back(AlignmentOf(align));
    end = start + s.size;
  }
  out.data_size = end;
  return out;
}

Result<Segment> PackSegment(std::vector<SourcePtr> sources, uint64_t alignment) {
  // Each source is a one-piece segment of a nested layout: the same
  // arithmetic, one level down.
  std::vector<Segment> items;
  items.reserve(sources.size());
  for (SourcePtr& s : sources) items.push_back(Segment{s->size(), 1, {}});
  ETPACK_ASSIGN_OR_RETURN(SegmentOffsets packed, LayoutSegments(items, alignment, "buffer"));
  Segment out{packed.data_size, 1, {}};
  out.pieces.reserve(sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    out.pieces.push_back(Piece{packed.offsets[i], AlignmentOf(alignment), std::move(sources[i])});
  }
  return out;
}

uint64_t ReadBackAlignment(uint64_t segment_offset) {
  return segment_offset == 0 ? 1 : OffsetAlignment(segment_offset);
}

uint64_t OffsetAlignment(uint64_t offset) {
  // Capped: pages beyond 64 KiB are not in use.
  constexpr uint64_t kCap = 65536;
  return std::min(AlignmentOf(offset), kCap);
}

}  // namespace etpack
