// The program-with-data planner (PlanProgramWithData): a program and the
// .ptd files that hold its external data, planned together to be written
// as one unit.

#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "etpack/external_data.h"
#include "pte/external_refs.h"

namespace etpack {

PtdOptions DataOptionsOf(const PteOptions& options) {
  PtdOptions ptd;
  ptd.segment_alignment = options.segment_alignment;
  ptd.integrity_table = options.integrity_table;
  ptd.strictest_shared_alignment = options.strictest_shared_alignment;
  return ptd;
}

ArtifactFiles ProgramWithDataPlan::files() const {
  ArtifactFiles files;
  for (const Data& d : data) files.emplace_back(d.name, &d.plan.artifact);
  files.emplace_back(program_name, &program.artifact);
  return files;
}

Result<ProgramWithDataPlan> PlanProgramWithData(std::string program_name, PteInput program,
                                                const PteOptions& options,
                                                std::vector<ExternalDataFile> data,
                                                const std::string& program_context) {
  std::set<std::string> names = {program_name};
  for (const ExternalDataFile& d : data) {
    if (!names.insert(d.name).second) {
      return InvalidArgument("'" + d.name + "' is named for two of the files written together");
    }
  }
  // Each key in exactly one of the files, as CheckDataSet asks of them
  // once written (a key twice in one file is that file's planning error).
  std::unordered_map<std::string_view, const std::string*> file_of_key;
  for (const ExternalDataFile& d : data) {
    for (const PtdEntry& e : d.input.entries) {
      const auto [it, fresh] = file_of_key.emplace(e.key, &d.name);
      if (!fresh && it->second != &d.name) return KeyInTwoFiles(e.key, *it->second, d.name);
    }
  }
  ProgramWithDataPlan plan;
  plan.program_name = std::move(program_name);
  plan.program_options = options;
  Result<PtePlan> pte = PlanPte(std::move(program), options);
  if (!pte.ok()) {
    return pte.status().WithContext(program_context.empty() ? plan.program_name : program_context);
  }
  plan.program = std::move(pte).value();
  for (ExternalDataFile& d : data) {
    PtdOptions ptd_options = DataOptionsOf(options);
    ptd_options.max_shard_bytes = d.max_shard_bytes;
    Result<std::vector<PtdFilePlan>> files = PlanPtdFiles(d.name, d.input, ptd_options);
    if (!files.ok()) return files.status().WithContext(d.name);
    for (PtdFilePlan& f : *files) {
      if (d.max_shard_bytes != 0 && !names.insert(f.path).second) {
        return InvalidArgument("'" + f.path + "' is named for two of the files written together");
      }
      plan.data.push_back({std::move(f.path), std::move(f.plan), ptd_options, f.entries});
    }
  }
  return plan;
}

}  // namespace etpack
