// apps/sizes_report.h — `inspect --sizes` as text: the reports of
// etpack/sizes.h laid out as tables for people.

#ifndef ETPACK_APPS_SIZES_REPORT_H_
#define ETPACK_APPS_SIZES_REPORT_H_

#include "etpack/sizes.h"

namespace etpack::cli {

// Prints `sizes` to stdout: a table per file (every row when `all`, else
// rows under SmallRowBytes grouped per kind), its totals by kind and, for
// several files, the contents they hold alike.
void PrintSizes(const FileSizes& sizes, bool all);

}  // namespace etpack::cli

#endif  // ETPACK_APPS_SIZES_REPORT_H_
