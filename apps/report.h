// apps/report.h — what `inspect` shows of a .pte, .ptd or .bpte, as text
// or as one JSON object (the same content either way).

#ifndef ETPACK_APPS_REPORT_H_
#define ETPACK_APPS_REPORT_H_

#include "etpack/bpte_file.h"
#include "etpack/json.h"
#include "etpack/ptd_file.h"
#include "etpack/pte_file.h"
#include "etpack/tensor_layout.h"

namespace etpack::cli {

// Header, methods, segments, constants, delegates, named data and external
// tensors.
void PrintPteReport(const PteFile& file);
json::Value PteReportJson(const PteFile& file);

// FH01 header, segments, entries with their layouts.
void PrintPtdReport(const PtdFile& file);
json::Value PtdReportJson(const PtdFile& file);

// Layout, test suites, and the embedded program's report. Fails only when
// the test suites cannot be read.
Status PrintBpteReport(const BpteFile& file);
Result<json::Value> BpteReportJson(const BpteFile& file);

// {"scalar_type", "sizes", "dim_order", "text": DescribeLayout(...)}.
json::Value LayoutJson(const TensorLayout& layout);

}  // namespace etpack::cli

#endif  // ETPACK_APPS_REPORT_H_
