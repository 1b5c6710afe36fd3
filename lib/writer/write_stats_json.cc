// The JSON rendering of WriteStats (etpack/writer.h, SetWriteStatsJson).

#include "etpack/writer.h"

namespace etpack {

void SetWriteStatsJson(const std::vector<std::string>& paths, const WriteStats& stats,
                       json::Value* report) {
  json::Value written = json::Value::Array();
  for (const std::string& path : paths) written.items().push_back(json::Value::String(path));
  report->Set("written", std::move(written));
  report->Set("bytes_written", json::Value::UInt(stats.bytes));
  report->Set("bytes_shared", json::Value::UInt(stats.bytes_shared));
  report->Set("bytes_copied", json::Value::UInt(stats.bytes_copied()));
}

}  // namespace etpack
