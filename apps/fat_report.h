// apps/fat_report.h — verify's check of fat (NFAT) delegates: every
// container and program entry valid, every program entry's EXTERNAL keys
// found. inspect reports them through the library (etpack/inspect.h).

#ifndef ETPACK_APPS_FAT_REPORT_H_
#define ETPACK_APPS_FAT_REPORT_H_

#include <string>
#include <vector>

#include "etpack/ptd_file.h"
#include "etpack/pte_file.h"
#include "etpack/status.h"

namespace etpack::cli {

// Checks every NFAT container (and its program entries as programs, their
// EXTERNAL keys against the outer named data and `data`). On success,
// `summary` is "" when there are none, else "; N fat delegates (...)".
Status VerifyFatDelegates(const PteFile& file, const std::vector<const PtdFile*>& data,
                          std::string* summary);

}  // namespace etpack::cli

#endif  // ETPACK_APPS_FAT_REPORT_H_
