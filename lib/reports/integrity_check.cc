// Reading side of the integrity table: which parts a file has, which of
// them is the table, and whether the bytes still match it.

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "etpack/integrity.h"
#include "integrity/hash.h"
#include "integrity/table.h"

namespace etpack {
namespace {

std::string Hex64(uint64_t v) {
  char s[19];
  std::snprintf(s, sizeof s, "0x%016" PRIx64, v);
  return s;
}

std::string Quoted(const std::vector<std::string>& keys) {
  std::string s;
  for (const std::string& k : keys) s += (s.empty() ? "'" : ", '") + k + "'";
  return s;
}

// Parts: the head, then segment j described by `kind` and its keys.
std::vector<ArtifactPart> Parts(uint64_t head_size, uint64_t base,
                                const std::vector<std::pair<uint64_t, uint64_t>>& segments,
                                const std::vector<std::string>& kinds,
                                const std::map<uint32_t, std::vector<std::string>>& keys) {
  std::vector<ArtifactPart> parts;
  parts.push_back({"head", 0, head_size, false});
  for (size_t j = 0; j < segments.size(); ++j) {
    std::string name = "segment " + std::to_string(j) + " (" + kinds[j];
    bool table = false;
    if (auto it = keys.find(static_cast<uint32_t>(j)); it != keys.end()) {
      name += " " + Quoted(it->second);
      table = it->second.size() == 1 && IsIntegrityKey(it->second[0]);
    }
    parts.push_back({name + ")", base + segments[j].first, segments[j].second, table});
  }
  return parts;
}

Result<uint64_t> Xxh3Of(const ArtifactFile& file, const ArtifactPart& part) {
  ETPACK_ASSIGN_OR_RETURN(
      std::vector<uint8_t> d,
      HashSource(*file.RangeSource(part.offset, part.size), HashKind::kXxh3_64));
  return Xxh3Value(d);
}

Result<IntegrityCheck> Check(const ArtifactFile& file, std::vector<ArtifactPart> parts, bool deep) {
  IntegrityCheck out;
  // The table is the last segment; a table anywhere else is not ours.
  const ArtifactPart* table = nullptr;
  for (const ArtifactPart& p : parts) {
    if (p.is_table)
      table = &p;
    else
      out.parts.push_back(p);
  }
  out.has_table = table != nullptr;
  std::vector<IntegrityEntry> recorded;
  if (table != nullptr) {
    if (table != &parts.back()) {
      return Corrupt(table->name + ": an integrity table must be the last segment");
    }
    if (table->size != IntegrityTableSize(out.parts.size())) {
      return Corrupt(table->name + ": an integrity table of " + std::to_string(table->size) +
                     " bytes, but one for " + std::to_string(out.parts.size()) + " parts has " +
                     std::to_string(IntegrityTableSize(out.parts.size())));
    }
    ETPACK_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes,
                            ReadAll(*file.RangeSource(table->offset, table->size)));
    Result<std::vector<IntegrityEntry>> decoded = DecodeIntegrityTable(bytes);
    if (!decoded.ok()) return decoded.status().WithContext(table->name);
    recorded = std::move(*decoded);
    if (recorded.size() != out.parts.size()) {
      return Corrupt(table->name + ": the integrity table has " + std::to_string(recorded.size()) +
                     " entries for " + std::to_string(out.parts.size()) + " parts");
    }
    for (size_t i = 0; i < recorded.size(); ++i) {
      const ArtifactPart& p = out.parts[i];
      if (recorded[i].offset != p.offset || recorded[i].size != p.size) {
        return Corrupt(table->name + ": the integrity table records [" +
                       std::to_string(recorded[i].offset) + ", +" +
                       std::to_string(recorded[i].size) + ") for " + p.name + ", which is [" +
                       std::to_string(p.offset) + ", +" + std::to_string(p.size) + ")");
      }
    }
  } else if (!deep) {
    out.parts.clear();
    return out;
  }
  for (size_t i = 0; i < out.parts.size(); ++i) {
    const ArtifactPart& p = out.parts[i];
    ETPACK_ASSIGN_OR_RETURN(uint64_t h, Xxh3Of(file, p));
    if (table != nullptr && h != recorded[i].xxh3) {
      return Corrupt(p.name + " [" + std::to_string(p.offset) + ", +" + std::to_string(p.size) +
                     "): XXH3-64 is " + Hex64(h) + " but the integrity table records " +
                     Hex64(recorded[i].xxh3));
    }
    out.xxh3.push_back(h);
  }
  return out;
}

}  // namespace

std::vector<ArtifactPart> PartsOf(const PteFile& file) {
  const PteSegmentMap& l = file.layout();
  std::vector<std::pair<uint64_t, uint64_t>> segments;
  std::vector<std::string> kinds;
  for (const PteSegmentMap::Segment& s : l.segments) {
    segments.push_back({s.offset, s.size});
    kinds.push_back(SegmentRoleName(s.role));
  }
  std::map<uint32_t, std::vector<std::string>> keys;
  for (const PteNamedData& n : file.named_data()) keys[n.segment_index].push_back(n.key);
  for (const PteMethod& m : file.methods()) {
    for (const PteDelegate& d : m.delegates) {
      if (d.in_segment && d.index < kinds.size() && kinds[d.index] == "delegate") {
        kinds[d.index] += " " + d.backend;
      }
    }
  }
  return Parts(l.program_size, l.segment_base_offset, segments, kinds, keys);
}

std::vector<ArtifactPart> PartsOf(const PtdFile& file) {
  const PtdSegmentMap& l = file.layout();
  std::vector<std::pair<uint64_t, uint64_t>> segments;
  for (const PtdSegmentMap::Segment& s : l.segments) segments.push_back({s.offset, s.size});
  std::vector<std::string> kinds(segments.size(), "entry");
  std::map<uint32_t, std::vector<std::string>> keys;
  for (const PtdFile::Entry& e : file.entries()) keys[e.segment_index].push_back(e.key);
  return Parts(l.flatbuffer_offset + l.flatbuffer_size, l.segment_base_offset, segments, kinds,
               keys);
}

// Without --deep a file none of whose keys names a table is not read:
// its parts (a named string per segment) need not exist either.
Result<IntegrityCheck> CheckIntegrity(const PteFile& file, bool deep) {
  if (!deep && std::none_of(file.named_data().begin(), file.named_data().end(),
                            [](const PteNamedData& n) { return IsIntegrityKey(n.key); })) {
    return IntegrityCheck{};
  }
  return Check(file, PartsOf(file), deep);
}

Result<IntegrityCheck> CheckIntegrity(const PtdFile& file, bool deep) {
  if (!deep && std::none_of(file.entries().begin(), file.entries().end(),
                            [](const PtdFile::Entry& e) { return IsIntegrityKey(e.key); })) {
    return IntegrityCheck{};
  }
  return Check(file, PartsOf(file), deep);
}

Result<std::vector<std::string>> Sha256OfParts(const ArtifactFile& file,
                                               const std::vector<ArtifactPart>& parts) {
  std::vector<std::string> out;
  for (const ArtifactPart& p : parts) {
    ETPACK_ASSIGN_OR_RETURN(std::vector<uint8_t> d,
                            HashSource(*file.RangeSource(p.offset, p.size), HashKind::kSha256));
    out.push_back(HexDigest(d));
  }
  return out;
}

std::string ToHex(const std::vector<uint8_t>& digest) { return HexDigest(digest); }

}  // namespace etpack
