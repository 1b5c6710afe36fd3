// NfatContainer: validation reads the preamble and the entry table through
// the payload source, in bounded chunks, after checking that they lie inside
// it; entries' bytes are only ever handed out as slices of the payload.

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "etpack/nfat.h"
#include "nfat/nfat_format.h"
#include "plan/header_insert.h"
#include "plan/segments.h"

namespace etpack {
namespace {

std::string Range(uint64_t offset, uint64_t length) {
  return "[" + std::to_string(offset) + ", +" + std::to_string(length) + ")";
}

std::string Hex(uint8_t c) {
  char hex[8];
  std::snprintf(hex, sizeof(hex), "0x%02x", c);
  return hex;
}

// Table rows read per ReadAt: a corrupt count cannot make validation
// allocate more than the rows it has already accepted.
constexpr uint64_t kRowsPerRead = 1024;

}  // namespace

Result<bool> HasNfatMagic(const Source& payload) {
  if (payload.size() < sizeof(nfat::kMagic)) return false;
  uint8_t magic[sizeof(nfat::kMagic)];
  ETPACK_RETURN_IF_ERROR(payload.ReadAt(0, magic, sizeof(magic)));
  return std::memcmp(magic, nfat::kMagic, sizeof(magic)) == 0;
}

Result<NfatContainer> NfatContainer::Open(SourcePtr payload, std::string name) {
  if (payload == nullptr) return InvalidArgument(name + ": payload source is null");
  auto corrupt = [&](const std::string& message) { return Corrupt(name + ": " + message); };
  const uint64_t size = payload->size();
  if (size < nfat::kPreambleSize) {
    return corrupt("the payload is " + std::to_string(size) + " bytes, shorter than the " +
                   std::to_string(nfat::kPreambleSize) + "-byte NFAT preamble");
  }
  uint8_t pre[nfat::kPreambleSize];
  ETPACK_RETURN_IF_ERROR(payload->ReadAt(0, pre, sizeof(pre)).WithContext(name));
  if (std::memcmp(pre, nfat::kMagic, sizeof(nfat::kMagic)) != 0) {
    return corrupt(
        "magic = " + nfat::ShownId(std::string_view(reinterpret_cast<const char*>(pre), 4)) +
        " is not \"NFAT\"");
  }
  const uint32_t version = LoadLE32(pre + 4);
  if (version != kNfatVersion) {
    return corrupt("version = " + std::to_string(version) + " is not " +
                   std::to_string(kNfatVersion) + ", the only NFAT version");
  }
  const uint64_t count = LoadLE32(pre + 8);
  if (count == 0) return corrupt("count = 0: a container holds at least one entry");
  if (count > (size - nfat::kPreambleSize) / nfat::kEntrySize) {
    return corrupt("count = " + std::to_string(count) + " needs a table ending at " +
                   std::to_string(nfat::kPreambleSize + nfat::kEntrySize * count) +
                   " but the payload is " + std::to_string(size) + " bytes");
  }

  NfatContainer c;
  c.name_ = name;  // `corrupt` keeps using `name`
  c.data_offset_ = nfat::kPreambleSize + nfat::kEntrySize * count;
  const uint64_t data_size = size - c.data_offset_;
  std::vector<uint8_t> rows;
  for (uint64_t i = 0; i < count; ++i) {
    if (i % kRowsPerRead == 0) {
      const uint64_t n = std::min(kRowsPerRead, count - i);
      rows.resize(n * nfat::kEntrySize);
      ETPACK_RETURN_IF_ERROR(
          payload->ReadAt(nfat::kPreambleSize + nfat::kEntrySize * i, rows.data(), rows.size())
              .WithContext(c.name_));
    }
    const uint8_t* row = rows.data() + nfat::kEntrySize * (i % kRowsPerRead);
    const auto* chars = reinterpret_cast<const char*>(row);
    const uint64_t id_len = std::find(chars, chars + nfat::kIdSize, '\0') - chars;
    NfatEntry e;
    e.backend_id.assign(chars, id_len);
    auto what = [&] { return "entries[" + std::to_string(i) + "] " + nfat::ShownId(e.backend_id); };
    for (uint64_t k = id_len; k < nfat::kIdSize; ++k) {
      if (row[k] != 0) {
        return corrupt(what() + ": backend id is not NUL-padded: byte " + Hex(row[k]) + " at " +
                       std::to_string(k) + " follows the NUL at " + std::to_string(id_len));
      }
    }
    const std::string problem = nfat::BackendIdProblem(e.backend_id);
    if (!problem.empty()) return corrupt(what() + ": backend id " + problem);
    e.offset = LoadLE64(row + nfat::kIdSize);
    e.length = LoadLE64(row + nfat::kIdSize + 8);
    if (e.offset > data_size || e.length > data_size - e.offset) {
      return corrupt(what() + ": " + Range(e.offset, e.length) +
                     " runs past the data section, which holds " + std::to_string(data_size) +
                     " bytes (payload " + std::to_string(size) + " bytes, data from " +
                     std::to_string(c.data_offset_) + ")");
    }
    e.position = c.data_offset_ + e.offset;
    e.alignment = AlignmentOf(e.position);
    c.entries_.push_back(std::move(e));
  }

  // Payloads may come in any order (readers go by offset); sorted by
  // position, each non-empty one must end before the next begins.
  std::vector<size_t> order;
  for (size_t i = 0; i < c.entries_.size(); ++i) {
    if (c.entries_[i].length > 0) order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return c.entries_[a].position < c.entries_[b].position ||
           (c.entries_[a].position == c.entries_[b].position && a < b);
  });
  for (size_t k = 1; k < order.size(); ++k) {
    const NfatEntry& prev = c.entries_[order[k - 1]];
    const NfatEntry& cur = c.entries_[order[k]];
    if (cur.offset < prev.offset + prev.length) {  // both inside the data: no wrap
      auto shown = [&](size_t i) {
        const NfatEntry& e = c.entries_[i];
        return "entries[" + std::to_string(i) + "] " + nfat::ShownId(e.backend_id) + " " +
               Range(e.offset, e.length);
      };
      return corrupt(shown(order[k]) + " overlaps " + shown(order[k - 1]));
    }
  }
  c.payload_ = std::move(payload);
  return c;
}

Result<NfatContainer> NfatContainer::FromMemory(const uint8_t* data, uint64_t size,
                                                std::shared_ptr<const void> keep_alive,
                                                std::string name) {
  SourcePtr payload =
      keep_alive ? MemorySource(data, size, std::move(keep_alive)) : MemorySource(data, size);
  return Open(std::move(payload), std::move(name));
}

Result<size_t> NfatContainer::Find(std::string_view backend_id) const {
  std::string ids;
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].backend_id == backend_id) return i;
    ids += (i == 0 ? "" : ", ") + nfat::ShownId(entries_[i].backend_id);
  }
  return NotFound(name_ + ": no entry " + nfat::ShownId(backend_id) + "; the entries are " + ids);
}

SourcePtr NfatContainer::EntrySource(size_t i) const {
  assert(i < entries_.size());
  const NfatEntry& e = entries_[i];
  return SliceSource(payload_, e.position, e.length);
}

}  // namespace etpack
