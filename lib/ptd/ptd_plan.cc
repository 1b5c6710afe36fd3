// Pass one for .ptd: one segment per distinct buffer (plan/segments.h), a
// FlatTensor built with the generated builder, and the FH01 header put in
// by the assembler.

#include <new>
#include <string>
#include <vector>

#include "etpack/ptd.h"
#include "flat_tensor_etpack_generated.h"
#include "flatbuffer/scalar_type.h"
#include "flatbuffer/verifier_limits.h"
#include "integrity/table.h"
#include "plan/assembler.h"
#include "plan/named_store.h"
#include "plan/segments.h"
#include "ptd/ptd_header.h"
#include "ptd/ptd_selection.h"
#include "writer/input_files.h"

namespace etpack {

namespace {

namespace ftb = etpack::ptd_fb;
using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

// An entry whose key and layout have been checked, with its segment.
struct PlannedEntry {
  const PtdEntry* entry = nullptr;
  uint32_t segment_index = 0;
};

// The FlatTensor's own tables and vectors' framing (root offset, file
// identifier, root table and vtable, the two vectors' lengths) and padding
// take at most this much.
constexpr uint64_t kMaxBaseOverhead = 256;

}  // namespace

uint64_t FlatTensorBaseBound() { return kMaxBaseOverhead; }

uint64_t FlatTensorEntryBound(const PtdEntry& e, bool new_segment) {
  // What FlatBufferBuilder writes for one entry, each piece with its most
  // padding (a field of alignment A after up to A - 1 bytes of it) and its
  // vtable counted even where an identical earlier one is shared:
  //   key string: length 4 + bytes + NUL + 3                   len + 8
  //   NamedData: soffset, key, segment_index and tensor_layout
  //     (4 + 3 each), vtable 4 + 2 * 3                          38
  //   its slot in named_data                                    4
  //   TensorLayout: scalar_type (1 + 7 to spare), sizes and
  //     dim_order offsets and soffset (4 + 3 each), vtable 10;
  //     sizes 4 + 4n + 3, dim_order 4 + n + 3                   53 + 5n
  //   DataSegment: offset and size (8 + 7 each), soffset 4 + 3,
  //     vtable 4 + 2 * 2; its slot in segments                  49
  uint64_t n = e.key.size() + 8 + 38 + 4;
  if (e.layout) n += 53 + 5 * e.layout->sizes.size();
  if (new_segment) n += 49;
  return n;
}

uint64_t FlatTensorEntryLowerBound(const PtdEntry& e, bool new_segment) {
  // The key (length, bytes, NUL), its slot in named_data and a table of at
  // least its vtable offset and the key's; a layout's table of at least
  // three offsets and its two vectors; a segment's slot and a table of at
  // least its vtable offset (a field of value 0 is left out).
  uint64_t n = e.key.size() + 5 + 4 + 8;
  if (e.layout) n += 12 + 8 + 5 * e.layout->sizes.size();
  if (new_segment) n += 4 + 4;
  return n;
}

uint64_t FlatTensorTables(uint64_t entries, uint64_t segments, uint64_t layouts) {
  // A root, a table per segment, per entry and per tensor layout.
  return 1 + segments + entries + layouts;
}

namespace {

// FlatBufferBuilder aborts past 2 GiB, so the size is bounded before it
// starts.
Status CheckFlatbufferFits(const PtdInput& input, const std::vector<size_t>& selection) {
  uint64_t bound = FlatTensorBaseBound();
  for (const size_t i : selection) {
    bound += FlatTensorEntryBound(input.entries[i]);
    if (bound >= FLATBUFFERS_MAX_BUFFER_SIZE) {
      return OutOfRange("the FlatTensor of " + std::to_string(selection.size()) +
                        " entries would exceed the 2 GiB FlatBuffers limit");
    }
  }
  return Status::OK();
}

// The FlatTensor laid out byte for byte as the schema-driven builder
// (flatbuffer/table_builder_inl.h) would: a table's strings, vectors and subtables
// first in field order, then its scalars in field order, then its offsets.
// (The generated Create* functions add fields by size instead.)
std::vector<uint8_t> BuildFlatTensor(const std::vector<PlannedEntry>& entries,
                                     const std::vector<Segment>& segments,
                                     const SegmentOffsets& layout) {
  FlatBufferBuilder fbb(1024);
  std::vector<Offset<ftb::DataSegment>> table;
  table.reserve(segments.size());
  for (size_t j = 0; j < segments.size(); ++j) {
    ftb::DataSegmentBuilder b(fbb);
    b.add_offset(layout.offsets[j]);
    b.add_size(segments[j].size);
    table.push_back(b.Finish());
  }
  const auto segments_vec = fbb.CreateVector(table);

  std::vector<Offset<ftb::NamedData>> named;
  named.reserve(entries.size());
  for (const PlannedEntry& p : entries) {
    const PtdEntry& e = *p.entry;
    const auto key = fbb.CreateString(e.key);
    Offset<ftb::TensorLayout> tensor_layout;
    if (e.layout) {
      const auto sizes = fbb.CreateVector(e.layout->sizes);
      const auto dim_order = fbb.CreateVector(e.layout->dim_order);
      ftb::TensorLayoutBuilder b(fbb);
      b.add_scalar_type(static_cast<etpack::pte_fb::ScalarType>(e.layout->scalar_type));
      b.add_sizes(sizes);
      b.add_dim_order(dim_order);
      tensor_layout = b.Finish();
    }
    ftb::NamedDataBuilder b(fbb);
    b.add_segment_index(p.segment_index);
    b.add_key(key);
    if (e.layout) b.add_tensor_layout(tensor_layout);
    named.push_back(b.Finish());
  }
  const auto named_vec = fbb.CreateVector(named);

  ftb::FlatTensorBuilder b(fbb);
  b.add_version(0);
  b.add_segments(segments_vec);
  b.add_named_data(named_vec);
  ftb::FinishFlatTensorBuffer(fbb, b.Finish());
  // With room for the header the assembler inserts, so it moves nothing.
  std::vector<uint8_t> out;
  out.reserve(fbb.GetSize() + ptd::kPaddedHeaderLength);
  out.assign(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  return out;
}

}  // namespace

std::string EntryName(const PtdInput& input, size_t i) {
  const PtdEntry& e = input.entries[i];
  if (!e.what.empty()) return e.what;
  return "entries[" + std::to_string(i) + "] '" + e.key + "'";
}

Result<PtdPlan> PlanPtd(const PtdInput& input, const PtdOptions& options) {
  std::vector<size_t> all(input.entries.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  return PlanPtdSelection(input, all, options);
}

Result<PtdPlan> PlanPtdSelection(const PtdInput& input, const std::vector<size_t>& selection,
                                 const PtdOptions& options) {
  ETPACK_RETURN_IF_ERROR(CheckAlignment(options.segment_alignment, "segment_alignment"));
  ETPACK_RETURN_IF_ERROR(CheckFlatbufferFits(input, selection));

  auto name = [&input](size_t i) { return EntryName(input, i); };
  NamedDataStore store(
      options.strictest_shared_alignment ? SharedAlignment::kStrictest : SharedAlignment::kFirstKey,
      name);
  store.Reserve(selection.size());
  std::vector<PlannedEntry> entries;
  entries.reserve(selection.size());
  for (const size_t i : selection) {
    const PtdEntry& e = input.entries[i];
    ETPACK_RETURN_IF_ERROR(
        CheckDataKey(e.key, e.what.empty() ? "entries[" + std::to_string(i) + "]" : e.what));
    const std::string what = EntryName(input, i);
    if (e.buffer_index >= input.buffers.size()) {
      return InvalidArgument(what + ": buffer_index = " + std::to_string(e.buffer_index) +
                             " is out of range: there are " + std::to_string(input.buffers.size()) +
                             " buffers");
    }
    const SourcePtr& buffer = input.buffers[e.buffer_index];
    if (e.layout) {
      ETPACK_ASSIGN_OR_RETURN(uint64_t nbytes, LayoutNbytes(*e.layout, what));
      if (buffer->size() < nbytes) {
        // The runtime loads nbytes from the segment without comparing it
        // with the segment size; a short buffer would be read past its end.
        return InvalidArgument(what + ": tensor " + DescribeLayout(*e.layout) + " needs " +
                               std::to_string(nbytes) + " bytes but its buffer (" +
                               buffer->Describe() + ") holds " + std::to_string(buffer->size()));
      }
    }
    ETPACK_ASSIGN_OR_RETURN(NamedDataStore::Added added, store.Add(e.key, buffer, e.alignment, i));
    if (!added.fresh) {
      // The same key and bytes again is the same entry, unless it describes
      // them differently.
      const PtdEntry& first = *entries[added.key].entry;
      if (!(first.layout == e.layout)) {
        return InvalidArgument(what + ": repeats " + store.What(store.keys()[added.key]) +
                               " with the same bytes but tensor_layout " +
                               (e.layout ? DescribeLayout(*e.layout) : "none") + " instead of " +
                               (first.layout ? DescribeLayout(*first.layout) : "none"));
      }
      continue;
    }
    entries.push_back({&e, static_cast<uint32_t>(store.keys()[added.key].buffer)});
  }
  std::vector<Segment> segments = store.Segments();
  PtdEntry table_entry;
  if (options.integrity_table) {
    // The last segment, so that it can cover every other one.
    std::vector<std::string_view> names;
    for (const NamedDataStore::Key& k : store.keys()) names.push_back(k.key);
    table_entry.key = IntegrityKey("ptd", names);
    entries.push_back({&table_entry, static_cast<uint32_t>(segments.size())});
    segments.push_back(SourceSegment(IntegrityTablePlaceholder(segments.size() + 1)));
  }
  // Readers verify the FlatTensor with the verifier's default limits.
  uint64_t layouts = 0;
  for (const PlannedEntry& p : entries) layouts += p.entry->layout ? 1 : 0;
  ETPACK_RETURN_IF_ERROR(CheckTableCount(FlatTensorTables(entries.size(), segments.size(), layouts),
                                         std::to_string(entries.size()) + " entries in " +
                                             std::to_string(segments.size()) + " segments"));

  ETPACK_ASSIGN_OR_RETURN(SegmentOffsets layout,
                          LayoutSegments(segments, options.segment_alignment));
  std::vector<uint8_t> fb;
  try {
    fb = BuildFlatTensor(entries, segments, layout);
  } catch (const std::bad_alloc&) {
    return OutOfRange("out of memory building the FlatTensor flatbuffer");
  }
  ETPACK_ASSIGN_OR_RETURN(Assembly a, Assemble(std::move(fb), &ptd::kHeaderCodec,
                                               options.segment_alignment, segments, layout));
  if (options.max_shard_bytes != 0 && a.artifact.file_size > options.max_shard_bytes) {
    return InvalidArgument(
        "the .ptd of " + std::to_string(entries.size()) + " entries would be " +
        std::to_string(a.artifact.file_size) + " bytes, over max_shard_bytes = " +
        std::to_string(options.max_shard_bytes) + " (PlanPtdFiles splits it into shards)");
  }
  InputFiles inputs;
  inputs.Add(input.buffers);
  inputs.Add(input.read);
  PtdPlan plan;
  plan.artifact = FinishedArtifact(std::move(a.artifact), inputs.Take(), options.integrity_table);
  PtdSegmentMap& l = plan.layout;
  l.flatbuffer_offset = a.head.header_size;
  l.flatbuffer_size = a.head.flatbuffer_size;
  l.segment_base_offset = a.head.segment_base_offset;
  l.segment_data_size = a.head.segment_data_size;
  l.segments.reserve(segments.size());
  for (size_t j = 0; j < segments.size(); ++j) {
    l.segments.push_back({layout.offsets[j], segments[j].size});
  }
  return plan;
}

}  // namespace etpack
