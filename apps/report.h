// apps/report.h — `inspect` as text: the report of etpack/inspect.h (the
// document `inspect --json` prints), laid out for people.

#ifndef ETPACK_APPS_REPORT_H_
#define ETPACK_APPS_REPORT_H_

#include <string>

#include "etpack/env.h"
#include "etpack/status.h"

namespace etpack::cli {

// Inspects `path` and prints its report as text to stdout as the report is
// produced (etpack/inspect.h InspectSink); nothing is printed when the file
// cannot be opened.
Status PrintReport(const std::string& path, const Env& env);

}  // namespace etpack::cli

#endif  // ETPACK_APPS_REPORT_H_
