// Where every byte of a .bpte goes (etpack/sizes.h): its header and
// flatbuffer, the embedded program broken down as a .pte, and the test
// values.

#include <algorithm>
#include <utility>

#include "bpte/bpte_header.h"
#include "bpte/bpte_values.h"
#include "etpack/bpte_file.h"
#include "etpack/sizes.h"
#include "flatbuffer/layout_of.h"
#include "reports/size_partition.h"

namespace etpack {

Result<SizeReport> SizesOf(const BpteFile& file) {
  SizeLayout out;
  const bpte_fb::BundledProgram& root = file.bundled();
  // Validated on open, so the header parses as it did then.
  ETPACK_ASSIGN_OR_RETURN(const bpte::Header h, bpte::ParseHeader(file.head(), file.head_size()));
  const uint64_t fb_end = h.present ? h.flatbuffer_size : file.size();
  SizeRow header;
  header.kind = SizeKind::kHeader;
  header.size = 8 + (h.present ? h.length : 0);
  header.name = h.present ? "BP08 bh00" : "BP08";
  out.claims.push_back(header);
  // The embedded program: its own rows, moved to where it lies. Outer
  // regions stop at its bounds, so it is only ever its own rows.
  const uint64_t po = file.program_offset(), pe = po + file.program_size();
  auto region = [&](uint64_t from, uint64_t to, SizeKind kind, const std::string& name,
                    std::optional<uint32_t> segment) {
    if (std::min(to, po) > from)
      out.regions.push_back({from, std::min(to, po) - from, kind, name, segment});
    if (to > std::max(from, pe)) {
      out.regions.push_back({std::max(from, pe), to - std::max(from, pe), kind, name, segment});
    }
  };
  region(header.size, fb_end, SizeKind::kFlatbuffer, "BundledProgram", std::nullopt);
  ETPACK_ASSIGN_OR_RETURN(SizeReport program, SizesOf(file.program()));
  for (SizeRow& r : program.rows) {
    r.offset += po;
    r.in_program = true;
    out.claims.push_back(std::move(r));
  }
  // Test values, and which segments they use.
  const uint32_t nseg = root.segments() ? root.segments()->size() : 0;
  std::vector<bool> used(nseg, false);
  if (root.program_segment() >= 0) used[static_cast<uint32_t>(root.program_segment())] = true;
  ETPACK_RETURN_IF_ERROR(
      bpte::ForEachValue(root, [&](const bpte_fb::Value& v, const std::string& path) -> Status {
        const bpte_fb::Tensor* t = v.val_as_Tensor();
        if (t == nullptr) return Status::OK();
        SizeRow r;
        r.kind = SizeKind::kTestData;
        r.name = path;
        r.tensor_layout = LayoutOf(*t);
        if (t->data_segment() < 0) {
          if (t->data() == nullptr) return Status::OK();
          r.offset = static_cast<uint64_t>(t->data()->data() - file.head());
          r.size = t->data()->size();
        } else {
          const uint32_t ds = static_cast<uint32_t>(t->data_segment());
          used[ds] = true;
          r.offset = h.segment_base_offset + root.segments()->Get(ds)->offset();
          r.size = root.segments()->Get(ds)->size();
          r.segment = ds;
        }
        out.claims.push_back(std::move(r));
        return Status::OK();
      }));
  if (h.present) {
    for (uint32_t i = 0; i < nseg; ++i) {
      const auto* seg = root.segments()->Get(i);
      region(h.segment_base_offset + seg->offset(),
             h.segment_base_offset + seg->offset() + seg->size(),
             used[i] ? SizeKind::kPadding : SizeKind::kUnreferenced,
             used[i] ? std::string() : "segment " + std::to_string(i), i);
    }
  }
  return FinishSizes(file, ArtifactKind::kBpte, std::move(out));
}

}  // namespace etpack
