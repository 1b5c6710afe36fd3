// apps/report.h — `inspect` as text: the report of etpack/inspect.h (the
// document `inspect --json` prints), laid out for people.

#ifndef ETPACK_APPS_REPORT_H_
#define ETPACK_APPS_REPORT_H_

#include "etpack/json.h"

namespace etpack::cli {

// REQUIRES: `report` came from InspectJson (or Pte/Ptd/BpteReportJson).
void PrintReport(const json::Value& report);

}  // namespace etpack::cli

#endif  // ETPACK_APPS_REPORT_H_
