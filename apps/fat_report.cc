#include "fat_report.h"

#include <set>

#include "etpack/inspect.h"

namespace etpack::cli {

Status VerifyFatDelegates(const PteFile& file, const std::vector<const PtdFile*>& data,
                          std::string* summary) {
  // Opening every container and program entry is the library's report.
  ETPACK_ASSIGN_OR_RETURN(json::Value fat, FatDelegatesJson(file));
  summary->clear();
  if (fat.items().empty()) return Status::OK();
  // A program entry's EXTERNAL keys are looked up in the delegate's named
  // data map: the outer program's named data merged with the .ptd files.
  std::set<std::string> keys;
  for (const PteNamedData& n : file.named_data()) keys.insert(n.key);
  for (const PtdFile* d : data) {
    for (const PtdFile::Entry& e : d->entries()) keys.insert(e.key);
  }
  uint64_t entries = 0, programs = 0, resolved = 0;
  for (const json::Value& f : fat.items()) {
    const auto& list = f.Find("entries")->items();
    for (size_t i = 0; i < list.size(); ++i) {
      const json::Value& e = list[i];
      ++entries;
      const json::Value* external = e.Find("external_keys");
      if (external == nullptr) continue;
      ++programs;
      for (const json::Value& key : external->items()) {
        if (keys.count(key.as_string()) == 0) {
          std::string where = "the outer program's named data";
          for (const PtdFile* d : data) where += ", " + d->name();
          return NotFound(DelegateName(file, f.Find("delegate")->as_uint()) + " entries[" +
                          std::to_string(i) + "] \"" + e.Find("backend_id")->as_string() +
                          "\": EXTERNAL key \"" + key.as_string() + "\" is not in " + where +
                          (data.empty() ? " (give .ptd files with --data)" : ""));
        }
        ++resolved;
      }
    }
  }
  *summary = "; " + std::to_string(fat.items().size()) + " fat delegates, " +
             std::to_string(entries) + " entries, " + std::to_string(programs) + " programs, " +
             std::to_string(resolved) + " entry external keys resolve";
  return Status::OK();
}

}  // namespace etpack::cli
