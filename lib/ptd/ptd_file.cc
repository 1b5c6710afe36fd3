// Reading a .ptd: map, validate all of it once, then hand out views.
//
// The runtime runs no FlatBuffers verifier on .ptd files and loads a
// tensor's nbytes without comparing them with its segment (docs/formats.md
// §3.4), so this reader is where a bad file gets caught.

#include <algorithm>
#include <cstring>

#include "etpack/ptd_file.h"
#include "flat_tensor_etpack_generated.h"
#include "flatbuffer/layout_of.h"
#include "flatbuffer/tree_reader.h"
#include "flatbuffer/verifier_limits.h"
#include "plan/header_insert.h"
#include "plan/named_store.h"
#include "plan/segment_table.h"
#include "ptd/ptd_format.h"
#include "ptd/ptd_header.h"

namespace etpack {

namespace ftb = etpack::ptd_fb;

// Validate() reads the FH01 header and the flatbuffer up to its end;
// segments go through the file.
uint64_t PtdFile::MappedPrefix(const uint8_t* peek, uint64_t peek_size, uint64_t file_size) const {
  Result<FlatTensorHeader> h = ptd::ParseHeader(peek, peek_size);
  if (!h.ok() || h->flatbuffer_offset > file_size ||
      h->flatbuffer_size > file_size - h->flatbuffer_offset) {
    return peek_size;
  }
  return h->flatbuffer_offset + h->flatbuffer_size;
}

PtdFile::~PtdFile() = default;

Status PtdFile::Validate() {
  ETPACK_ASSIGN_OR_RETURN(header_, ptd::ParseHeader(head(), size()));
  if (std::memcmp(head() + 4, ptd::kFileIdentifier, 4) != 0) {
    return Corrupt("file identifier is not 'FT01' (not a .ptd file)");
  }
  const FlatTensorHeader& h = header_;
  // As for a .pte's header (program_checks.cc): a length past the file is
  // the length's fault, not the flatbuffer's.
  const uint64_t header_end = kInsertedHeaderOffset + h.length;
  if (header_end > size()) {
    return Corrupt("FH01 header length = " + std::to_string(h.length) +
                   " would end the header at byte " + std::to_string(header_end) +
                   ", past the end of the " + std::to_string(size()) + "-byte file");
  }
  if (h.flatbuffer_offset < header_end || h.flatbuffer_offset > size() ||
      h.flatbuffer_size > size() - h.flatbuffer_offset) {
    return Corrupt("FH01 flatbuffer [" + std::to_string(h.flatbuffer_offset) + ", +" +
                   std::to_string(h.flatbuffer_size) + ") does not fit the file (" +
                   std::to_string(size()) + " bytes)");
  }
  const uint64_t fb_end = h.flatbuffer_offset + h.flatbuffer_size;
  if (h.segment_base_offset < fb_end || h.segment_base_offset > size() ||
      h.segment_data_size > size() - h.segment_base_offset) {
    return Corrupt("segment data [" + std::to_string(h.segment_base_offset) + ", +" +
                   std::to_string(h.segment_data_size) + ") is not between the flatbuffer end (" +
                   std::to_string(fb_end) + ") and the file end (" + std::to_string(size()) +
                   "); the file is truncated or corrupt");
  }
  if (fb_end >= FLATBUFFERS_MAX_BUFFER_SIZE) {
    return Corrupt("flatbuffer region of " + std::to_string(fb_end) +
                   " bytes exceeds the 2 GiB FlatBuffers limit");
  }
  ETPACK_RETURN_IF_ERROR(CheckInHead(fb_end));
  ETPACK_RETURN_IF_ERROR(VerifyFlatbuffer(
      SchemaId::kFlatTensor,
      [](flatbuffers::Verifier& v) { return ftb::VerifyFlatTensorBuffer(v); }, head(), fb_end,
      "the FlatTensor flatbuffer", "truncated or corrupt"));
  root_ = ftb::GetFlatTensor(head());
  if (root_->segments() == nullptr) return Corrupt("segments is missing");
  if (root_->named_data() == nullptr) return Corrupt("named_data is missing");
  ETPACK_RETURN_IF_ERROR(
      CheckSegmentTable(root_->segments(), h.segment_base_offset, h.segment_data_size));

  layout_.flatbuffer_offset = h.flatbuffer_offset;
  layout_.flatbuffer_size = h.flatbuffer_size;
  layout_.segment_base_offset = h.segment_base_offset;
  layout_.segment_data_size = h.segment_data_size;
  for (const auto* s : *root_->segments()) layout_.segments.push_back({s->offset(), s->size()});

  const uint32_t nseg = root_->segments()->size();
  entries_.reserve(root_->named_data()->size());
  for (uint32_t i = 0; i < root_->named_data()->size(); ++i) {
    const auto* nd = root_->named_data()->Get(i);
    std::string what = "named_data[" + std::to_string(i) + "]";
    if (nd->key() == nullptr || nd->key()->size() == 0) return Corrupt(what + ": missing key");
    Entry e;
    e.key = nd->key()->str();
    if (Status s = CheckKeyText(e.key, what); !s.ok()) return Corrupt(s.message());
    what += " '" + e.key + "'";
    e.segment_index = nd->segment_index();
    if (e.segment_index >= nseg) {
      return Corrupt(what + ".segment_index = " + std::to_string(e.segment_index) +
                     " is out of range: " + std::to_string(nseg) + " segments");
    }
    if (const auto* tl = nd->tensor_layout()) {
      if (tl->sizes() == nullptr || tl->dim_order() == nullptr) {
        return Corrupt(what + ".tensor_layout: sizes or dim_order is missing");
      }
      TensorLayout l = LayoutOf(*tl);
      Result<uint64_t> nbytes = LayoutNbytes(l, what);
      if (!nbytes.ok()) return Corrupt(nbytes.status().message());
      const uint64_t have = layout_.segments[e.segment_index].size;
      if (*nbytes > have) {
        return Corrupt(what + ": tensor " + DescribeLayout(l) + " needs " +
                       std::to_string(*nbytes) + " bytes but segment " +
                       std::to_string(e.segment_index) + " holds " + std::to_string(have));
      }
      e.layout = std::move(l);
    }
    entries_.push_back(std::move(e));
  }
  // Entries by key (then position): Find's index, and any key repeated.
  by_key_.resize(entries_.size());
  for (uint32_t i = 0; i < by_key_.size(); ++i) by_key_[i] = i;
  std::sort(by_key_.begin(), by_key_.end(), [this](uint32_t a, uint32_t b) {
    return entries_[a].key != entries_[b].key ? entries_[a].key < entries_[b].key : a < b;
  });
  size_t repeated = entries_.size();  // the first entry whose key an earlier one has
  for (size_t j = 1; j < by_key_.size(); ++j) {
    if (entries_[by_key_[j]].key == entries_[by_key_[j - 1]].key) {
      repeated = std::min<size_t>(repeated, by_key_[j]);
    }
  }
  if (repeated < entries_.size()) {
    return Corrupt("named_data[" + std::to_string(repeated) + "] '" + entries_[repeated].key +
                   "': duplicate key (the runtime would only ever find the first)");
  }
  return Status::OK();
}

int64_t PtdFile::Find(const std::string& key) const {
  auto it =
      std::lower_bound(by_key_.begin(), by_key_.end(), key,
                       [this](uint32_t i, const std::string& k) { return entries_[i].key < k; });
  if (it == by_key_.end() || entries_[*it].key != key) return -1;
  return *it;
}

SourcePtr PtdFile::EntrySource(size_t i) const {
  const auto& s = layout_.segments[entries_[i].segment_index];
  return RangeSource(layout_.segment_base_offset + s.offset, s.size);
}

Result<std::string> PtdFile::ToFlatcJson() const {
  return FlatbufferToFlatcJson(SchemaId::kFlatTensor, head(),
                               layout_.flatbuffer_offset + layout_.flatbuffer_size);
}

}  // namespace etpack
