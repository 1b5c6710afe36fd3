// Pass one for .ptd: the same segment arithmetic as .pte (layout.h), a
// FlatTensor built through the schema-driven tree, and the FH01 header.

#include <map>
#include <set>
#include <string>

#include "etpack/json.h"
#include "etpack/layout.h"
#include "etpack/ptd.h"
#include "flatbuffer/tree_builder.h"
#include "layout/header_insert.h"
#include "ptd/ptd_format.h"
#include "flatbuffer/scalar_type.h"

namespace etpack {

namespace {

template <typename Ints>
std::string Join(const Ints& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

std::string DescribeLayout(const TensorLayout& l) {
  return ScalarTypeName(l.scalar_type) + Join(l.sizes) + " dim_order " + Join(l.dim_order);
}

Result<uint64_t> LayoutNbytes(const TensorLayout& layout, const std::string& what) {
  if (layout.dim_order.size() != layout.sizes.size()) {
    return InvalidArgument(what + ": dim_order has " + std::to_string(layout.dim_order.size()) +
                           " entries for " + std::to_string(layout.sizes.size()) + " dimensions");
  }
  std::vector<bool> seen(layout.sizes.size(), false);
  for (uint8_t d : layout.dim_order) {
    if (d >= seen.size() || seen[d]) {
      return InvalidArgument(what + ": dim_order " + Join(layout.dim_order) +
                             " is not a permutation of 0.." +
                             std::to_string(static_cast<int>(layout.sizes.size()) - 1));
    }
    seen[d] = true;
  }
  Result<uint64_t> n = TensorNbytes(layout.scalar_type, layout.sizes, what);
  if (!n.ok()) return InvalidArgument(n.status().message());
  return n;
}

namespace {

json::Value IntArray(const std::vector<int32_t>& v) {
  std::vector<json::Value> items;
  items.reserve(v.size());
  for (int32_t x : v) items.push_back(json::Value::Int(x));
  return json::Value::Array(std::move(items));
}

json::Value ByteArray(const std::vector<uint8_t>& v) {
  std::vector<json::Value> items;
  items.reserve(v.size());
  for (uint8_t x : v) items.push_back(json::Value::Int(x));
  return json::Value::Array(std::move(items));
}

}  // namespace

Result<PtdPlan> PlanPtd(const PtdInput& input, const PtdOptions& options) {
  ETPACK_RETURN_IF_ERROR(CheckAlignment(options.segment_alignment, "segment_alignment"));

  std::set<std::string_view> keys;
  std::map<uint32_t, size_t> segment_of_buffer;
  std::vector<SegmentSpec> specs;
  std::vector<SourcePtr> segment_sources;
  std::vector<json::Value> named;
  named.reserve(input.entries.size());
  for (size_t i = 0; i < input.entries.size(); ++i) {
    const PtdEntry& e = input.entries[i];
    const std::string what = "entries[" + std::to_string(i) + "] '" + e.key + "'";
    if (e.key.empty()) return InvalidArgument("entries[" + std::to_string(i) + "]: empty key");
    if (!keys.insert(e.key).second) return InvalidArgument(what + ": duplicate key");
    if (e.buffer_index >= input.buffers.size() || input.buffers[e.buffer_index] == nullptr) {
      return InvalidArgument(what + ": buffer_index = " + std::to_string(e.buffer_index) +
                             " is out of range: there are " +
                             std::to_string(input.buffers.size()) + " buffers");
    }
    ETPACK_RETURN_IF_ERROR(CheckAlignment(e.alignment, what + " alignment"));
    const SourcePtr& buffer = input.buffers[e.buffer_index];
    json::Value entry = json::Value::Object({{"key", json::Value::String(e.key)}});
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
    auto it = segment_of_buffer.find(e.buffer_index);
    if (it == segment_of_buffer.end()) {
      // As in the reference writer, the first key of a buffer decides its
      // alignment.
      it = segment_of_buffer.emplace(e.buffer_index, specs.size()).first;
      specs.push_back({buffer->size(), e.alignment});
      segment_sources.push_back(buffer);
    }
    entry.Set("segment_index", json::Value::UInt(it->second));
    if (e.layout) {
      entry.Set("tensor_layout",
                json::Value::Object({{"scalar_type", json::Value::Int(e.layout->scalar_type)},
                                     {"sizes", IntArray(e.layout->sizes)},
                                     {"dim_order", ByteArray(e.layout->dim_order)}}));
    }
    named.push_back(std::move(entry));
  }

  ETPACK_ASSIGN_OR_RETURN(SegmentLayout seg_layout,
                          LayoutSegments(specs, options.segment_alignment));
  std::vector<json::Value> table;
  table.reserve(specs.size());
  PtdPlan plan;
  for (size_t j = 0; j < specs.size(); ++j) {
    table.push_back(json::Value::Object({{"offset", json::Value::UInt(seg_layout.offsets[j])},
                                         {"size", json::Value::UInt(specs[j].size)}}));
    plan.layout.segments.push_back({seg_layout.offsets[j], specs[j].size});
  }
  json::Value root = json::Value::Object({{"version", json::Value::Int(0)},
                                          {"segments", json::Value::Array(std::move(table))},
                                          {"named_data", json::Value::Array(std::move(named))}});
  ETPACK_ASSIGN_OR_RETURN(std::vector<uint8_t> fb, BuildFlatbuffer(SchemaId::kFlatTensor, root));

  PtdLayout& l = plan.layout;
  l.flatbuffer_size = fb.size();
  l.flatbuffer_offset = ptd::kPaddedHeaderLength;
  ETPACK_RETURN_IF_ERROR(InsertAfterIdentifier(fb, ptd::kPaddedHeaderLength));
  ETPACK_ASSIGN_OR_RETURN(l.segment_base_offset, AlignUp(fb.size(), options.segment_alignment));
  l.segment_data_size = seg_layout.data_size;
  ETPACK_ASSIGN_OR_RETURN(plan.artifact.file_size,
                          CheckedAdd(l.segment_base_offset, l.segment_data_size, "file size"));
  ptd::WriteHeader(fb.data(), l);
  plan.artifact.head = std::move(fb);
  for (size_t j = 0; j < specs.size(); ++j) {
    if (specs[j].size == 0) continue;
    plan.artifact.placements.push_back({l.segment_base_offset + seg_layout.offsets[j],
                                        options.segment_alignment, segment_sources[j]});
  }
  return plan;
}

Status WritePtd(const std::string& path, const PtdInput& input, const PtdOptions& options,
                const ProgressFn& progress) {
  ETPACK_ASSIGN_OR_RETURN(PtdPlan plan, PlanPtd(input, options));
  return WriteArtifactFile(path, plan.artifact, FileSinkOptions{}, progress);
}

}  // namespace etpack
