// The JSON rendering of an update's report (etpack/update.h,
// UpdateReportJson).

#include "etpack/update.h"

namespace etpack {

json::Value UpdateReportJson(const std::string& path, const UpdateReport& r) {
  using json::Value;
  return Value::Object({
      {"path", Value::String(path)},
      {"tensors_rewritten", Value::UInt(r.tensors_rewritten)},
      {"bytes_rewritten", Value::UInt(r.bytes_rewritten)},
      {"tensors_unchanged", Value::UInt(r.tensors_unchanged)},
      {"bytes_unchanged", Value::UInt(r.bytes_unchanged)},
      {"written", Value::Bool(r.written)},
      {"cloned", Value::Bool(r.cloned)},
      {"file_size", Value::UInt(r.file_size)},
      {"bytes_written", Value::UInt(r.bytes_written)},
      {"bytes_shared", Value::UInt(r.cloned ? r.file_size - r.bytes_written : 0)},
      {"other_links", Value::UInt(r.other_links)},
  });
}

}  // namespace etpack
