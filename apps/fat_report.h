// apps/fat_report.h — fat (NFAT) delegates of a .pte, for inspect, verify
// and extract: which delegates hold a container, where each entry is, and
// for a program entry its methods and EXTERNAL keys.

#ifndef ETPACK_APPS_FAT_REPORT_H_
#define ETPACK_APPS_FAT_REPORT_H_

#include <string>
#include <vector>

#include "etpack/json.h"
#include "etpack/ptd_file.h"
#include "etpack/pte_file.h"
#include "etpack/source.h"
#include "etpack/status.h"

namespace etpack::cli {

// The delegates of every method, in order: "delegate N" on the command
// line is an index into this list (the order `inspect` prints them in).
std::vector<const PteDelegate*> AllDelegates(const PteFile& file);

// How errors name delegate n: "model.pte: delegate 0 (forward[0] NativeBackend)".
std::string DelegateName(const PteFile& file, size_t n);

// "fat_delegates" for inspect --json: per delegate whose payload is an NFAT
// container, its entries (backend id, offset, length, alignment achieved;
// methods and external keys of a program entry). Fails (kCorrupt) on a
// malformed container, naming the delegate, the entry and the value.
Result<json::Value> FatDelegatesJson(const PteFile& file);
Status PrintFatDelegates(const PteFile& file);

// Checks every NFAT container (and its program entries as programs, their
// EXTERNAL keys against the outer named data and `data`). On success,
// `summary` is "" when there are none, else "; N fat delegates (...)".
Status VerifyFatDelegates(const PteFile& file, const std::vector<const PtdFile*>& data,
                          std::string* summary);

}  // namespace etpack::cli

#endif  // ETPACK_APPS_FAT_REPORT_H_
