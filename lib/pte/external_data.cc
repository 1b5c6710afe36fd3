#include "etpack/external_data.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>

#include "etpack/json.h"
#include "flatbuffer/scalar_type.h"
#include "plan/segments.h"
#include "program_etpack_generated.h"
#include "pte/external_refs.h"
#include "pte/program_checks.h"
#include "pte/program_walk.h"

namespace etpack {

namespace fb = etpack::pte_fb;

namespace {

constexpr int kExternal = static_cast<int>(fb::TensorDataLocation::EXTERNAL);

std::string Quote(const std::string& s) { return "'" + s + "'"; }

// The tensor's layout as a .ptd entry would state it. A missing sizes or
// dim_order reads as empty (for dim_order that matches only a 0-dim
// layout, as at runtime).
TensorLayout LayoutOf(const fb::Tensor& t) {
  TensorLayout l;
  l.scalar_type = static_cast<int>(t.scalar_type());
  if (t.sizes() != nullptr) l.sizes.assign(t.sizes()->begin(), t.sizes()->end());
  if (t.dim_order() != nullptr) l.dim_order.assign(t.dim_order()->begin(), t.dim_order()->end());
  return l;
}

// The same, refusing a tensor without sizes (of a file being read).
Result<TensorLayout> LayoutOf(const fb::Tensor& t, const std::string& what) {
  if (t.sizes() == nullptr) return Corrupt(what + ".sizes is missing");
  return LayoutOf(t);
}

}  // namespace

namespace {

// The runtime merges the keys of a program's data files into one map,
// which refuses duplicates: which file would win is not defined. Reading
// (MergeKeys) and writing (PlanProgramWithData) refuse them alike.
Status KeyInTwoFiles(const std::string& key, const std::string& first, const std::string& second) {
  return InvalidArgument("key " + Quote(key) + " is in both " + first + " and " + second);
}

struct Where {
  const PtdFile* file;
  size_t entry;
};

// Every key of `data` and where it is; a key in two files is an error.
Result<std::unordered_map<std::string, Where>> MergeKeys(const std::vector<const PtdFile*>& data) {
  std::unordered_map<std::string, Where> keys;
  for (const PtdFile* f : data) {
    for (size_t i = 0; i < f->entries().size(); ++i) {
      const std::string& key = f->entries()[i].key;
      const auto [it, fresh] = keys.emplace(key, Where{f, i});
      if (!fresh) return KeyInTwoFiles(key, it->second.file->name(), f->name());
    }
  }
  return keys;
}

}  // namespace

Status CheckDataSet(const std::vector<const PtdFile*>& data) { return MergeKeys(data).status(); }

Result<std::vector<ExternalRef>> ResolveExternalTensors(const PteFile& pte,
                                                        const std::vector<const PtdFile*>& data) {
  ETPACK_ASSIGN_OR_RETURN(const auto keys, MergeKeys(data));
  std::string file_list;
  for (const PtdFile* f : data) file_list += (file_list.empty() ? "" : ", ") + f->name();

  std::vector<ExternalRef> refs;
  ETPACK_RETURN_IF_ERROR(
      ForEachTensor(pte.program(), [&](uint32_t p, uint32_t v, const fb::Tensor& t) -> Status {
        if (!IsExternal(t)) return Status::OK();
        const std::string what = pte.name() + ": " + TensorPath(p, v);
        const flatbuffers::String* fqn = t.extra_tensor_info()->fully_qualified_name();
        if (fqn == nullptr || fqn->size() == 0) {
          return InvalidArgument(what + " is EXTERNAL but has no fully_qualified_name");
        }
        const std::string key = fqn->str();
        auto it = keys.find(key);
        if (it == keys.end()) {
          return NotFound(what + ": EXTERNAL key " + Quote(key) + " is not in " +
                          (data.empty() ? std::string("any data file (none given)") : file_list));
        }
        const PtdFile& f = *it->second.file;
        const PtdFile::Entry& e = f.entries()[it->second.entry];
        const std::string theirs = "key " + Quote(key) + " in " + f.name();
        if (!e.layout) {
          return InvalidArgument(what + ": " + theirs + " is an opaque blob without tensor_layout");
        }
        ETPACK_ASSIGN_OR_RETURN(TensorLayout mine, LayoutOf(t, what));
        if (mine != *e.layout) {
          return InvalidArgument(what + ": tensor " + DescribeLayout(mine) + " but " + theirs +
                                 " is " + DescribeLayout(*e.layout));
        }
        ETPACK_ASSIGN_OR_RETURN(uint64_t nbytes, TensorNbytes(mine.scalar_type, mine.sizes, what));
        const uint64_t have = f.layout().segments[e.segment_index].size;
        if (have < nbytes) {
          return Corrupt(what + ": tensor " + DescribeLayout(mine) + " needs " +
                         std::to_string(nbytes) + " bytes but the segment of " + theirs +
                         " holds " + std::to_string(have));
        }
        refs.push_back({p, v, &f, it->second.entry});
        return Status::OK();
      }));
  return refs;
}

Status CheckExternalReferences(const PteFile& pte, const std::vector<const PtdFile*>& data,
                               uint64_t* resolved) {
  ETPACK_ASSIGN_OR_RETURN(const std::vector<ExternalRef> refs, ResolveExternalTensors(pte, data));
  if (resolved != nullptr) *resolved = refs.size();
  return Status::OK();
}

std::string ConstantKeyBase(const fb::Program& program, uint32_t p, uint32_t v) {
  const auto* method = program.execution_plan()->Get(p)->name();
  return "constant." + (method ? method->str() : std::to_string(p)) + "." + std::to_string(v);
}

bool IsMadeUpKey(const fb::Program& program, uint32_t p, uint32_t v, std::string_view key) {
  if (key.substr(0, kContentKeyPrefix.size()) == kContentKeyPrefix) return true;
  const std::string base = ConstantKeyBase(program, p, v);
  if (key.substr(0, base.size()) != base) return false;
  // Exactly the base, or the base and "." and a positive count.
  const std::string_view rest = key.substr(base.size());
  if (rest.empty()) return true;
  if (rest.size() < 2 || rest[0] != '.' || rest[1] == '0') return false;
  return rest.find_first_not_of("0123456789", 1) == std::string_view::npos;
}

namespace {

// What differs between a tensor (`layout`, `bytes`) and the one (`first`,
// `first_bytes`) that already holds its key (LayoutDifferences' form, then
// the bytes): empty when they are the same tensor.
Result<std::string> Differences(const TensorLayout& first, const Source& first_bytes,
                                const TensorLayout& layout, const Source& bytes) {
  std::string text = LayoutDifferences(first, layout);
  std::string diff;
  if (first_bytes.size() != bytes.size()) {
    diff = "bytes: " + std::to_string(first_bytes.size()) + " there, " +
           std::to_string(bytes.size()) + " here";
  } else if (&first_bytes != &bytes) {
    ETPACK_ASSIGN_OR_RETURN(const std::optional<uint64_t> at, FirstDifference(first_bytes, bytes));
    if (at) {
      uint8_t there = 0, here = 0;
      ETPACK_RETURN_IF_ERROR(first_bytes.ReadAt(*at, &there, 1));
      ETPACK_RETURN_IF_ERROR(bytes.ReadAt(*at, &here, 1));
      diff = "bytes: " + std::to_string(bytes.size()) + " each, first different at byte " +
             std::to_string(*at) + " (" + std::to_string(there) + " there, " +
             std::to_string(here) + " here)";
    }
  }
  if (!diff.empty()) text += (text.empty() ? "" : "; ") + diff;
  return text;
}

// The split itself, for `in` (program in tree form) and `prog`, the same
// program verified, whose tensors' data_buffer_idx index in.constants.
// `name` starts errors.
Result<std::pair<PteInput, PtdInput>> Externalize(const fb::Program& prog, const std::string& name,
                                                  PteInput in, uint64_t alignment) {
  const size_t nbuffers = in.constants.size();
  json::Value* plans = in.program.tree().Find("execution_plan");

  // Generated keys must not collide with a name the exporter gave, whether
  // for a constant here or for data already in another .ptd.
  std::set<std::string> taken;
  ETPACK_RETURN_IF_ERROR(ForEachTensor(prog, [&](uint32_t, uint32_t, const fb::Tensor& t) {
    const auto* extra = t.extra_tensor_info();
    if (extra != nullptr && extra->fully_qualified_name() != nullptr) {
      taken.insert(extra->fully_qualified_name()->str());
    }
    return Status::OK();
  }));

  PtdInput ptd;
  // Tensors sharing a constant (one source) share its .ptd buffer.
  SourceIndex ptd_buffers(&ptd.buffers);
  struct KeyInfo {
    size_t entry;      // into ptd.entries, = the key's position
    std::string path;  // the first tensor that used it
  };
  std::map<std::string, KeyInfo> key_info;

  ETPACK_RETURN_IF_ERROR(
      ForEachTensor(prog, [&](uint32_t p, uint32_t v, const fb::Tensor& t) -> Status {
        if (!IsConstantTensor(t)) return Status::OK();
        const std::string path = TensorPath(p, v);
        const std::string what = name + ": " + path;
        ETPACK_ASSIGN_OR_RETURN(TensorLayout layout, LayoutOf(t, what));

        std::string key;
        const auto* extra = t.extra_tensor_info();
        if (extra != nullptr && extra->fully_qualified_name() != nullptr &&
            extra->fully_qualified_name()->size() > 0) {
          key = extra->fully_qualified_name()->str();
        } else {
          const std::string base = ConstantKeyBase(prog, p, v);
          key = base;
          for (uint64_t n = 1; taken.count(key) != 0; ++n) key = base + "." + std::to_string(n);
          taken.insert(key);
        }

        const uint32_t idx = t.data_buffer_idx();
        if (idx >= nbuffers) {
          return Corrupt(what + ".data_buffer_idx = " + std::to_string(idx) +
                         " is out of range: constant_buffer has " + std::to_string(nbuffers) +
                         " entries");
        }
        auto it = key_info.find(key);
        if (it == key_info.end()) {
          it = key_info.emplace(key, KeyInfo{ptd.entries.size(), path}).first;
          ptd.entries.push_back({key, ptd_buffers.Add(in.constants[idx]), alignment, layout});
        } else {
          // One key names one tensor's data: a second tensor may use it only
          // for the same layout and the same bytes (from any buffer).
          const PtdEntry& e = ptd.entries[it->second.entry];
          ETPACK_ASSIGN_OR_RETURN(
              const std::string differences,
              Differences(*e.layout, *ptd.buffers[e.buffer_index], layout, *in.constants[idx]));
          if (!differences.empty()) {
            return InvalidArgument(what + ": fully_qualified_name " + Quote(key) +
                                   " is also the name of " + it->second.path +
                                   ", a different tensor (" + differences +
                                   "); a .ptd key holds one tensor");
          }
        }

        json::Value* values = plans->items()[p].Find("values");
        json::Value* val_ptr = values ? values->items()[v].Find("val") : nullptr;
        if (val_ptr == nullptr) return Corrupt(what + ": not found in the program tree");
        json::Value& val = *val_ptr;
        json::Value* info = val.Find("extra_tensor_info");
        if (info == nullptr || info->is_null()) {
          val.Set("extra_tensor_info",
                  json::Value::Object({{"mutable_data_segments_idx", json::Value::Int(0)},
                                       {"fully_qualified_name", json::Value::String(key)},
                                       {"location", json::Value::Int(kExternal)},
                                       {"device_type", json::Value::Int(0)},
                                       {"device_index", json::Value::Int(0)}}));
        } else {
          info->Set("fully_qualified_name", json::Value::String(key));
          info->Set("location", json::Value::Int(kExternal));
        }
        val.Set("data_buffer_idx", json::Value::UInt(it->second.entry));
        return Status::OK();
      }));

  if (nbuffers > 0) in.constants = {OwnedSource({})};
  return std::make_pair(std::move(in), std::move(ptd));
}

}  // namespace

Result<std::pair<PteInput, PtdInput>> ExternalizeConstants(const PteFile& pte, uint64_t alignment) {
  ETPACK_RETURN_IF_ERROR(CheckAlignment(alignment, "external constant alignment"));
  ETPACK_ASSIGN_OR_RETURN(PteInput in, pte.ToInput());
  return Externalize(pte.program(), pte.name(), std::move(in), alignment);
}

Result<std::pair<PteInput, PtdInput>> ExternalizeConstants(PteInput input, uint64_t alignment) {
  ETPACK_RETURN_IF_ERROR(CheckAlignment(alignment, "external constant alignment"));
  ETPACK_ASSIGN_OR_RETURN(json::Value tree, std::move(input.program).TakeTree());
  // The walk needs the program verified, as the planner builds and checks
  // it. Planning a copy of the structure reads no bulk bytes: constants and
  // mutable values count by size; named data plays no part (and blobs of
  // equal size would be compared); delegates stand in empty, kept inline,
  // which also takes references exactly as given.
  PteInput probe;
  probe.program = ProgramStructure::FromTree(tree);
  probe.constants = input.constants;
  probe.mutable_data = input.mutable_data;
  probe.delegates.assign(input.delegates.size(), OwnedSource({}));
  PteOptions probe_options;
  probe_options.extract_delegate_segments = false;
  ETPACK_ASSIGN_OR_RETURN(PtePlan plan, PlanPte(std::move(probe), probe_options));
  ETPACK_ASSIGN_OR_RETURN(
      CheckedPte checked,
      CheckPte(plan.artifact.head.data(), plan.artifact.head.size(), plan.artifact.file_size));
  input.program = ProgramStructure::FromTree(std::move(tree));
  return Externalize(*checked.program, "program", std::move(input), alignment);
}

Result<std::map<std::string, TensorLayout>> ExternalTensorLayouts(const ProgramStructure& program) {
  ETPACK_ASSIGN_OR_RETURN(SourcePtr bytes, ProgramStructure(program).TakeFlatbuffer());
  std::map<std::string, TensorLayout> layouts;
  ETPACK_RETURN_IF_ERROR(ForEachTensor(
      *pte_fb::GetProgram(bytes->contiguous()), [&](uint32_t, uint32_t, const fb::Tensor& t) {
        if (IsExternal(t) && t.extra_tensor_info()->fully_qualified_name() != nullptr) {
          layouts[t.extra_tensor_info()->fully_qualified_name()->str()] = LayoutOf(t);
        }
        return Status::OK();
      }));
  return layouts;
}

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
