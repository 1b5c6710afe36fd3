#include "fat_report.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <utility>

#include "etpack/inspect.h"
#include "etpack/nfat.h"
#include "units.h"

namespace etpack::cli {
namespace {

// A program entry opened as a program: bytes 4..7 are its identifier.
Result<bool> IsProgram(const Source& bytes) {
  if (bytes.size() < 8) return false;
  char id[4];
  ETPACK_RETURN_IF_ERROR(bytes.ReadAt(4, id, sizeof(id)));
  return std::memcmp(id, "ET12", 4) == 0;
}

struct EntryInfo {
  NfatEntry where;
  // In the file, when the payload is a file range (where a loader that maps
  // the file finds it): the offset and the alignment it achieves there.
  bool in_file = false;
  uint64_t file_offset = 0, file_alignment = 0;
  std::unique_ptr<PteFile> program;  // a program entry, validated
  std::vector<std::string> methods;
  std::vector<std::string> external_keys;  // distinct, in order of first use
};

// The entry as a program: through the file when it is a file range, else
// from a 16-byte aligned copy (a program fits in 2 GiB).
Result<std::unique_ptr<PteFile>> OpenProgram(const std::string& name, const SourcePtr& bytes) {
  if (bytes->file_range() != nullptr) return PteFile::Open(name, bytes);
  ETPACK_ASSIGN_OR_RETURN(std::vector<uint8_t> copy, ReadAll(*bytes));
  auto owned = std::make_shared<std::vector<uint8_t>>(std::move(copy));  // new: 16-aligned
  return PteFile::FromMemory(name, owned->data(), owned->size(), owned);
}

struct FatInfo {
  size_t delegate = 0;
  std::string name;  // DelegateName
  uint64_t size = 0;
  std::vector<EntryInfo> entries;
};

// Opens every container and program entry. Every failure names the
// delegate; the container's and the program's own errors name the entry.
Result<std::vector<FatInfo>> ReadFat(const PteFile& file) {
  std::vector<FatInfo> out;
  const std::vector<const PteDelegate*> delegates = AllDelegates(file);
  for (size_t n = 0; n < delegates.size(); ++n) {
    SourcePtr payload = file.DelegateSource(*delegates[n]);
    ETPACK_ASSIGN_OR_RETURN(const bool nfat, HasNfatMagic(*payload));
    if (!nfat) continue;
    FatInfo info;
    info.delegate = n;
    info.name = DelegateName(file, n);
    info.size = payload->size();
    ETPACK_ASSIGN_OR_RETURN(NfatContainer c, NfatContainer::Open(payload, info.name));
    for (size_t i = 0; i < c.entries().size(); ++i) {
      EntryInfo e;
      e.where = c.entries()[i];
      if (const FileRange* r = payload->file_range()) {
        e.in_file = true;
        e.file_offset = r->offset + e.where.position;
        e.file_alignment = OffsetAlignment(e.file_offset);
      }
      SourcePtr bytes = c.EntrySource(i);
      ETPACK_ASSIGN_OR_RETURN(const bool program, IsProgram(*bytes));
      if (program) {
        const std::string name =
            info.name + " entries[" + std::to_string(i) + "] \"" + e.where.backend_id + "\"";
        Result<std::unique_ptr<PteFile>> p = OpenProgram(name, bytes);
        if (!p.ok()) return p.status().WithContext("the entry's bytes are not a valid program");
        for (const PteMethod& m : (*p)->methods()) e.methods.push_back(m.name);
        std::set<std::string> seen;
        for (const PteTensor& t : (*p)->Tensors()) {
          if (t.data == TensorData::kExternal && seen.insert(t.key).second) {
            e.external_keys.push_back(t.key);
          }
        }
        e.program = std::move(p).value();
      }
      info.entries.push_back(std::move(e));
    }
    out.push_back(std::move(info));
  }
  return out;
}

json::Value Strings(const std::vector<std::string>& v) {
  std::vector<json::Value> items;
  for (const std::string& s : v) items.push_back(json::Value::String(s));
  return json::Value::Array(std::move(items));
}

std::string Joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
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

Result<json::Value> FatDelegatesJson(const PteFile& file) {
  using json::Value;
  ETPACK_ASSIGN_OR_RETURN(std::vector<FatInfo> fat, ReadFat(file));
  std::vector<Value> list;
  for (const FatInfo& f : fat) {
    std::vector<Value> entries;
    for (const EntryInfo& e : f.entries) {
      Value v = Value::Object(
          {{"backend_id", Value::String(e.where.backend_id)},
           {"offset", Value::UInt(e.where.offset)},
           {"position", Value::UInt(e.where.position)},
           {"length", Value::UInt(e.where.length)},
           {"alignment", Value::UInt(e.where.alignment)},
           {"file_offset", e.in_file ? Value::UInt(e.file_offset) : Value::Null()},
           {"file_alignment", e.in_file ? Value::UInt(e.file_alignment) : Value::Null()},
           {"kind", Value::String(e.program ? "program" : "bytes")}});
      if (e.program) {
        v.Set("methods", Strings(e.methods));
        v.Set("external_keys", Strings(e.external_keys));
      }
      entries.push_back(std::move(v));
    }
    list.push_back(Value::Object({{"delegate", Value::UInt(f.delegate)},
                                  {"size", Value::UInt(f.size)},
                                  {"entries", Value::Array(std::move(entries))}}));
  }
  return Value::Array(std::move(list));
}

Status PrintFatDelegates(const PteFile& file) {
  ETPACK_ASSIGN_OR_RETURN(std::vector<FatInfo> fat, ReadFat(file));
  if (fat.empty()) return Status::OK();
  std::printf("\nfat delegates (%zu):\n", fat.size());
  for (const FatInfo& f : fat) {
    std::printf("  delegate %zu: NFAT container, %zu entries, %" PRIu64 " bytes\n", f.delegate,
                f.entries.size(), f.size);
    std::printf("    %-32s %12s %12s %14s %9s\n", "backend id", "offset", "length", "file offset",
                "alignment");
    for (const EntryInfo& e : f.entries) {
      // Alignment achieved: in the file when known, else in the container.
      std::printf("    %-32s %12" PRIu64 " %12" PRIu64 " %14s %9" PRIu64 "\n",
                  e.where.backend_id.c_str(), e.where.offset, e.where.length,
                  e.in_file ? std::to_string(e.file_offset).c_str() : "-",
                  e.in_file ? e.file_alignment : e.where.alignment);
      if (e.program) {
        std::printf("      program: methods %s; %zu external keys%s%s\n", Joined(e.methods).c_str(),
                    e.external_keys.size(), e.external_keys.empty() ? "" : ": ",
                    Joined(e.external_keys).c_str());
      }
    }
  }
  return Status::OK();
}

Status VerifyFatDelegates(const PteFile& file, const std::vector<const PtdFile*>& data,
                          std::string* summary) {
  ETPACK_ASSIGN_OR_RETURN(std::vector<FatInfo> fat, ReadFat(file));
  summary->clear();
  if (fat.empty()) return Status::OK();
  // A program entry's EXTERNAL keys are looked up in the delegate's named
  // data map: the outer program's named data merged with the .ptd files.
  std::set<std::string> keys;
  for (const PteNamedData& n : file.named_data()) keys.insert(n.key);
  for (const PtdFile* d : data) {
    for (const PtdFile::Entry& e : d->entries()) keys.insert(e.key);
  }
  uint64_t entries = 0, programs = 0, resolved = 0;
  for (const FatInfo& f : fat) {
    for (size_t i = 0; i < f.entries.size(); ++i) {
      const EntryInfo& e = f.entries[i];
      ++entries;
      if (!e.program) continue;
      ++programs;
      for (const std::string& key : e.external_keys) {
        if (keys.count(key) == 0) {
          std::string where = "the outer program's named data";
          for (const PtdFile* d : data) where += ", " + d->name();
          return NotFound(f.name + " entries[" + std::to_string(i) + "] \"" + e.where.backend_id +
                          "\": EXTERNAL key \"" + key + "\" is not in " + where +
                          (data.empty() ? " (give .ptd files with --data)" : ""));
        }
        ++resolved;
      }
    }
  }
  *summary = "; " + std::to_string(fat.size()) + " fat delegates, " + std::to_string(entries) +
             " entries, " + std::to_string(programs) + " programs, " + std::to_string(resolved) +
             " entry external keys resolve";
  return Status::OK();
}

}  // namespace etpack::cli
