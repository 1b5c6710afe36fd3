// The fat (NFAT) delegates of a program, for inspect's report: which
// delegates hold a container, where each entry is, and for a program entry
// its methods and EXTERNAL keys. verify checks the same report.

#include <memory>
#include <optional>
#include <set>
#include <utility>

#include "etpack/inspect.h"
#include "etpack/nfat.h"
#include "etpack/plan.h"

namespace etpack {
namespace {

using json::Value;

// A program entry opened as a program: its identifier says .pte.
Result<bool> IsProgram(const Source& bytes) {
  ETPACK_ASSIGN_OR_RETURN(const std::optional<ArtifactKind> kind,
                          ArtifactKindOrNone("entry", bytes));
  return kind == ArtifactKind::kPte;
}

// The entry as a program: through the file when it is a file range, else
// from a 16-byte aligned copy (a program fits in 2 GiB).
Result<std::unique_ptr<PteFile>> OpenProgram(const std::string& name, const SourcePtr& bytes) {
  if (bytes->file_range() != nullptr) return PteFile::Open(name, bytes);
  ETPACK_ASSIGN_OR_RETURN(std::vector<uint8_t> copy, ReadAll(*bytes));
  auto owned = std::make_shared<std::vector<uint8_t>>(std::move(copy));  // new: 16-aligned
  return PteFile::FromMemory(name, owned->data(), owned->size(), owned);
}

Value Strings(const std::vector<std::string>& v) {
  std::vector<Value> items;
  for (const std::string& s : v) items.push_back(Value::String(s));
  return Value::Array(std::move(items));
}

// One entry of a container; a program entry is opened (validated) for its
// methods and EXTERNAL keys.
Result<FatEntryReport> EntryOf(const NfatContainer& c, size_t i, const SourcePtr& payload,
                               const std::string& delegate_name) {
  FatEntryReport r;
  r.entry = c.entries()[i];
  const NfatEntry& e = r.entry;
  if (const FileRange* range = payload->file_range()) {
    r.in_file = true;
    r.file_offset = range->offset + e.position;
    r.file_alignment = OffsetAlignment(r.file_offset);
  }
  SourcePtr bytes = c.EntrySource(i);
  ETPACK_ASSIGN_OR_RETURN(r.program, IsProgram(*bytes));
  if (!r.program) return r;
  const std::string name =
      delegate_name + " entries[" + std::to_string(i) + "] \"" + e.backend_id + "\"";
  Result<std::unique_ptr<PteFile>> p = OpenProgram(name, bytes);
  if (!p.ok()) return p.status().WithContext("the entry's bytes are not a valid program");
  for (const PteMethod& m : (*p)->methods()) r.methods.push_back(m.name);
  std::set<std::string> seen;
  for (const PteTensor& t : (*p)->Tensors()) {
    if (t.data == TensorData::kExternal && seen.insert(t.key).second) {
      r.external_keys.push_back(t.key);
    }
  }
  return r;
}

Value EntryJson(const FatEntryReport& r) {
  const NfatEntry& e = r.entry;
  Value v =
      Value::Object({{"backend_id", Value::String(e.backend_id)},
                     {"offset", Value::UInt(e.offset)},
                     {"position", Value::UInt(e.position)},
                     {"length", Value::UInt(e.length)},
                     {"alignment", Value::UInt(e.alignment)},
                     {"file_offset", r.in_file ? Value::UInt(r.file_offset) : Value::Null()},
                     {"file_alignment", r.in_file ? Value::UInt(r.file_alignment) : Value::Null()},
                     {"kind", Value::String(r.program ? "program" : "bytes")}});
  if (r.program) {
    v.Set("methods", Strings(r.methods));
    v.Set("external_keys", Strings(r.external_keys));
  }
  return v;
}

}  // namespace

std::vector<const PteDelegate*> AllDelegates(const PteFile& file) {
  std::vector<const PteDelegate*> out;
  for (const PteMethod& m : file.methods()) {
    for (const PteDelegate& d : m.delegates) out.push_back(&d);
  }
  return out;
}

std::string DelegateName(const PteFile& file, size_t n) {
  size_t k = 0;
  for (const PteMethod& m : file.methods()) {
    for (size_t i = 0; i < m.delegates.size(); ++i, ++k) {
      if (k == n) {
        return file.name() + ": delegate " + std::to_string(n) + " (" + m.name + "[" +
               std::to_string(i) + "] " + m.delegates[i].backend + ")";
      }
    }
  }
  return file.name() + ": delegate " + std::to_string(n);
}

Result<std::vector<FatDelegateReport>> FatDelegates(const PteFile& file) {
  std::vector<FatDelegateReport> list;
  const std::vector<const PteDelegate*> delegates = AllDelegates(file);
  for (size_t n = 0; n < delegates.size(); ++n) {
    SourcePtr payload = file.DelegateSource(*delegates[n]);
    ETPACK_ASSIGN_OR_RETURN(const bool nfat, HasNfatMagic(*payload));
    if (!nfat) continue;
    const std::string name = DelegateName(file, n);
    ETPACK_ASSIGN_OR_RETURN(NfatContainer c, NfatContainer::Open(payload, name));
    FatDelegateReport d;
    d.delegate = n;
    d.size = payload->size();
    for (size_t i = 0; i < c.entries().size(); ++i) {
      ETPACK_ASSIGN_OR_RETURN(FatEntryReport e, EntryOf(c, i, payload, name));
      d.entries.push_back(std::move(e));
    }
    list.push_back(std::move(d));
  }
  return list;
}

Value FatDelegatesJson(const std::vector<FatDelegateReport>& fat) {
  std::vector<Value> list;
  for (const FatDelegateReport& d : fat) {
    std::vector<Value> entries;
    for (const FatEntryReport& e : d.entries) entries.push_back(EntryJson(e));
    list.push_back(Value::Object({{"delegate", Value::UInt(d.delegate)},
                                  {"size", Value::UInt(d.size)},
                                  {"entries", Value::Array(std::move(entries))}}));
  }
  return Value::Array(std::move(list));
}

Result<Value> FatDelegatesJson(const PteFile& file) {
  ETPACK_ASSIGN_OR_RETURN(std::vector<FatDelegateReport> fat, FatDelegates(file));
  return FatDelegatesJson(fat);
}

}  // namespace etpack
