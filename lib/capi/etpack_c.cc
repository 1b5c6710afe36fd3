// The C API (etpack/etpack_c.h) over the C++ one. Each handle is a struct
// holding the C++ input it describes; each entry point's body is a lambda
// run by Guard(), so no exception (std::bad_alloc above all) and no C++ type
// leaves the library, and every failure lands in the thread's last error.

#include "etpack/etpack_c.h"

#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "etpack/bpte.h"
#include "etpack/external_data.h"
#include "etpack/json.h"
#include "etpack/plan.h"
#include "etpack/ptd.h"
#include "etpack/pte.h"
#include "etpack/share.h"
#include "etpack/source.h"
#include "etpack/status.h"
#include "etpack/verify.h"
#include "etpack/writer.h"

struct etpack_source {
  etpack::SourcePtr source;
};

struct etpack_plan {
  etpack::ArtifactPlan artifact;
};

struct etpack_ptd_files {
  std::vector<std::string> paths;
  std::vector<etpack_plan> plans;
};

struct etpack_pte {
  etpack::PteInput input;
  etpack::PteOptions options;
  bool has_program = false;
};

struct etpack_ptd {
  etpack::PtdInput input;
  etpack::PtdOptions options;
  // A source given for several keys is one buffer (one segment).
  etpack::SourceIndex buffers{&input.buffers};
};

struct etpack_bpte {
  etpack::BpteInput input;
  etpack::BpteOptions options;
  etpack::BundledTestCase* current = nullptr;  // where values go
};

namespace {

using etpack::Code;
using etpack::Status;

// The C codes are the library's codes; FFI bindings rely on it.
static_assert(ETPACK_OK == static_cast<int>(Code::kOk));
static_assert(ETPACK_INVALID_ARGUMENT == static_cast<int>(Code::kInvalidArgument));
static_assert(ETPACK_NOT_FOUND == static_cast<int>(Code::kNotFound));
static_assert(ETPACK_CORRUPT == static_cast<int>(Code::kCorrupt));
static_assert(ETPACK_OUT_OF_RANGE == static_cast<int>(Code::kOutOfRange));
static_assert(ETPACK_IO_ERROR == static_cast<int>(Code::kIoError));
static_assert(ETPACK_UNIMPLEMENTED == static_cast<int>(Code::kUnimplemented));

// A preallocated fallback keeps etpack_last_error() meaningful when storing
// the real message is what ran out of memory.
thread_local std::string last_error;
const char kOutOfMemory[] = "out of memory";
thread_local const char* last_error_override = nullptr;

etpack_status Fail(etpack_status code, const char* message) noexcept {
  try {
    last_error = message;
    last_error_override = nullptr;
  } catch (...) {
    last_error_override = kOutOfMemory;
  }
  return code;
}

etpack_status Report(const Status& status) noexcept {
  if (status.ok()) return ETPACK_OK;
  return Fail(static_cast<etpack_status>(status.code()), status.message().c_str());
}

// Runs the body of the entry point `fn`, which names it in its messages.
template <typename F>
etpack_status Guard(const char* fn, F&& body) noexcept {
  try {
    return Report(body(fn));
  } catch (const std::bad_alloc&) {
    last_error_override = kOutOfMemory;
    return ETPACK_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    return Fail(ETPACK_INTERNAL, (std::string("internal error: ") + e.what()).c_str());
  } catch (...) {
    return Fail(ETPACK_INTERNAL, "internal error: unknown exception");
  }
}

Status Null(const char* function, const std::string& argument) {
  return etpack::InvalidArgument(std::string(function) + ": " + argument + " is NULL");
}

#define ETPACK_C_REQUIRE(arg) \
  if ((arg) == nullptr) return Null(fn, #arg)

// Starts every constructor: *out is NULL unless the call succeeds.
#define ETPACK_C_OUT(out)                      \
  if ((out) == nullptr) return Null(fn, #out); \
  *(out) = nullptr

// Write options that report to `progress` and ask `cancel` (each left
// empty when null).
etpack::WriteOptions WithCallbacks(etpack_progress_fn progress, etpack_cancel_fn cancel,
                                   void* user) {
  etpack::WriteOptions options;
  if (progress != nullptr) {
    options.progress = [progress, user](uint64_t done, uint64_t total) {
      progress(user, done, total);
    };
  }
  if (cancel != nullptr) options.cancel = [cancel, user] { return cancel(user) != 0; };
  return options;
}

etpack::Result<etpack::TensorLayout> LayoutOf(const char* function, int32_t dtype, size_t rank,
                                              const int32_t* sizes, const uint8_t* dim_order) {
  if (rank > 0 && sizes == nullptr) return Null(function, "sizes");
  // Before the arrays are read: `rank` says how long they are.
  ETPACK_RETURN_IF_ERROR(etpack::CheckRank(rank, std::string(function) + " layout"));
  etpack::TensorLayout layout;
  layout.scalar_type = dtype;
  layout.sizes.assign(sizes, sizes + rank);
  for (size_t i = 0; i < rank; ++i) {
    layout.dim_order.push_back(dim_order ? dim_order[i] : static_cast<uint8_t>(i));
  }
  // Checked here so the error comes from the call that added it.
  auto nbytes = etpack::LayoutNbytes(layout, std::string(function) + " layout");
  if (!nbytes.ok()) return nbytes.status();
  return layout;
}

// The body of etpack_pte_add_constant/_mutable/_delegate (`function`):
// appends `data` to the program's `list`, whose entry 0 is the format's
// empty placeholder when `placeholder`.
etpack_status AddIndexed(const char* function, etpack_pte* pte,
                         std::vector<etpack::SourcePtr> etpack::PteInput::*list, bool placeholder,
                         const etpack_source* data, uint32_t* index) {
  return Guard(function, [&](const char* fn) -> Status {
    ETPACK_C_REQUIRE(pte);
    ETPACK_C_REQUIRE(data);
    std::vector<etpack::SourcePtr>& items = pte->input.*list;
    if (placeholder && items.empty()) items.push_back(etpack::OwnedSource({}));
    if (items.size() >= UINT32_MAX) return etpack::OutOfRange("more than 2^32 - 1 data items");
    items.push_back(data->source);
    if (index) *index = static_cast<uint32_t>(items.size() - 1);
    return Status::OK();
  });
}

// The `count` paths at `paths` (the argument `name`), none of them NULL.
etpack::Result<std::vector<std::string>> PathsOf(const char* fn, const char* name, size_t count,
                                                 const char* const* paths) {
  if (count > 0 && paths == nullptr) return Null(fn, name);
  std::vector<std::string> out;
  for (size_t i = 0; i < count; ++i) {
    if (paths[i] == nullptr) return Null(fn, std::string(name) + "[" + std::to_string(i) + "]");
    out.emplace_back(paths[i]);
  }
  return out;
}

// What etpack_share's arguments ask for (etpack_c.h).
struct ShareCall {
  std::vector<std::string> inputs;
  etpack::ShareOptions options;
  bool dry_run = false;
  etpack::WriteOptions write;  // its callbacks
};

etpack::Result<ShareCall> ShareCallOf(const char* fn, size_t count, const char* const* inputs,
                                      const char* out_dir, const char* data_name,
                                      uint64_t max_shard_bytes, uint64_t alignment,
                                      uint64_t min_bytes, uint32_t flags,
                                      etpack_progress_fn progress, etpack_cancel_fn cancel,
                                      void* user) {
  ShareCall call;
  ETPACK_ASSIGN_OR_RETURN(call.inputs, PathsOf(fn, "inputs", count, inputs));
  ETPACK_C_REQUIRE(out_dir);
  if ((flags & ~uint32_t{ETPACK_SHARE_DRY_RUN | ETPACK_SHARE_INTEGRITY}) != 0) {
    return etpack::InvalidArgument(std::string(fn) + ": unknown flags " + std::to_string(flags));
  }
  call.options.out_dir = out_dir;
  if (data_name != nullptr) call.options.data_name = data_name;
  call.options.max_shard_bytes = max_shard_bytes;
  call.options.alignment = alignment;
  call.options.min_bytes = min_bytes;
  call.options.integrity_table = (flags & ETPACK_SHARE_INTEGRITY) != 0;
  call.dry_run = (flags & ETPACK_SHARE_DRY_RUN) != 0;
  call.write = WithCallbacks(progress, cancel, user);
  return call;
}

// `text` as a NUL-terminated string the caller frees (etpack_string_free).
char* CopyOut(const std::string& text) {
  char* copy = static_cast<char*>(std::malloc(text.size() + 1));
  if (copy == nullptr) throw std::bad_alloc();
  std::memcpy(copy, text.c_str(), text.size() + 1);
  return copy;
}

Status NewPlan(etpack::ArtifactPlan artifact, etpack_plan** out) {
  *out = new etpack_plan{std::move(artifact)};
  return Status::OK();
}

Status AddPtdEntry(etpack_ptd* ptd, const char* key, const etpack_source* data, uint64_t alignment,
                   std::optional<etpack::TensorLayout> layout) {
  ptd->input.entries.push_back({key, ptd->buffers.Add(data->source), alignment, std::move(layout)});
  return Status::OK();
}

Status AddBundledValue(etpack_bpte* bpte, int where, etpack::BundledValue value) {
  if (bpte->current == nullptr) {
    return etpack::InvalidArgument(
        "etpack_bpte_add_*: no test case yet (call etpack_bpte_add_case)");
  }
  if (where != ETPACK_BPTE_INPUT && where != ETPACK_BPTE_EXPECTED_OUTPUT) {
    return etpack::InvalidArgument("etpack_bpte_add_*: where = " + std::to_string(where) +
                                   " is neither ETPACK_BPTE_INPUT nor ETPACK_BPTE_EXPECTED_OUTPUT");
  }
  auto& values =
      where == ETPACK_BPTE_INPUT ? bpte->current->inputs : bpte->current->expected_outputs;
  values.push_back(std::move(value));
  return Status::OK();
}

// The body of etpack_bpte_add_int/_bool/_double (`function`).
etpack_status AddScalar(const char* function, etpack_bpte* bpte, int where,
                        etpack::BundledValue value) {
  return Guard(function, [&](const char* fn) -> Status {
    ETPACK_C_REQUIRE(bpte);
    return AddBundledValue(bpte, where, std::move(value));
  });
}

// ---- options and planning, by handle kind ----------------------------------
//
// Every builder handle (etpack_pte, etpack_ptd, etpack_bpte) sets its options
// and plans through the same two paths below; what differs per kind is the
// table in its Kind<> specialization: the argument's name, its options (C
// constant -> setter) and its planner.

template <typename Options>
struct OptionRow {
  int option;
  void (*set)(Options& options, uint64_t value);
  // Refuses a value the option cannot take (null: every value is taken);
  // its message is prefixed with the entry point's name.
  Status (*check)(uint64_t value) = nullptr;
};

template <typename Handle>
struct Kind;

Status HasProgram(const char* fn, const etpack_pte& pte) {
  if (pte.has_program) return Status::OK();
  return etpack::InvalidArgument(std::string(fn) +
                                 ": no program structure (call etpack_pte_set_program_json or "
                                 "etpack_pte_set_program_flatbuffer first)");
}

template <typename Plan>
etpack::Result<etpack::ArtifactPlan> ArtifactOf(etpack::Result<Plan> plan) {
  if (!plan.ok()) return plan.status();
  return std::move(plan->artifact);
}

template <>
struct Kind<etpack_pte> {
  static constexpr const char* kArgument = "pte";
  static inline const OptionRow<etpack::PteOptions> kOptions[] = {
      {ETPACK_PTE_SEGMENT_ALIGNMENT,
       [](etpack::PteOptions& o, uint64_t v) { o.segment_alignment = v; }},
      {ETPACK_PTE_CONSTANT_ALIGNMENT,
       [](etpack::PteOptions& o, uint64_t v) { o.constant_tensor_alignment = v; }},
      {ETPACK_PTE_DELEGATE_ALIGNMENT,
       [](etpack::PteOptions& o, uint64_t v) { o.delegate_alignment = v; }},
      {ETPACK_PTE_EXTRACT_DELEGATES,
       [](etpack::PteOptions& o, uint64_t v) { o.extract_delegate_segments = v != 0; }},
      {ETPACK_PTE_DEDUP_CONSTANTS,
       [](etpack::PteOptions& o, uint64_t v) { o.dedup_constants = v != 0; }},
  };
  static etpack::Result<etpack::ArtifactPlan> Plan(const char* fn, const etpack_pte& pte) {
    ETPACK_RETURN_IF_ERROR(HasProgram(fn, pte));
    // PlanPte edits its input in place; the builder keeps its own.
    return ArtifactOf(etpack::PlanPte(pte.input, pte.options));
  }
};

template <>
struct Kind<etpack_ptd> {
  static constexpr const char* kArgument = "ptd";
  static inline const OptionRow<etpack::PtdOptions> kOptions[] = {
      {ETPACK_PTD_SEGMENT_ALIGNMENT,
       [](etpack::PtdOptions& o, uint64_t v) { o.segment_alignment = v; }},
      {ETPACK_PTD_MAX_SHARD_BYTES,
       [](etpack::PtdOptions& o, uint64_t v) { o.max_shard_bytes = v; }},
  };
  static etpack::Result<etpack::ArtifactPlan> Plan(const char*, const etpack_ptd& ptd) {
    return ArtifactOf(etpack::PlanPtd(ptd.input, ptd.options));
  }
};

template <>
struct Kind<etpack_bpte> {
  static constexpr const char* kArgument = "bpte";
  static inline const OptionRow<etpack::BpteOptions> kOptions[] = {
      {ETPACK_BPTE_LAYOUT,
       [](etpack::BpteOptions& o, uint64_t v) {
         o.layout = v == ETPACK_BPTE_SEGMENTED ? etpack::BpteLayout::kSegmented
                                               : etpack::BpteLayout::kStandard;
       },
       [](uint64_t v) {
         if (v == ETPACK_BPTE_STANDARD || v == ETPACK_BPTE_SEGMENTED) return Status::OK();
         return etpack::InvalidArgument("ETPACK_BPTE_LAYOUT = " + std::to_string(v) +
                                        " is neither ETPACK_BPTE_STANDARD nor "
                                        "ETPACK_BPTE_SEGMENTED");
       }},
      {ETPACK_BPTE_PROGRAM_ALIGNMENT,
       [](etpack::BpteOptions& o, uint64_t v) { o.program_alignment = v; }},
      {ETPACK_BPTE_TENSOR_SEGMENT_THRESHOLD,
       [](etpack::BpteOptions& o, uint64_t v) { o.tensor_segment_threshold = v; }},
  };
  static etpack::Result<etpack::ArtifactPlan> Plan(const char*, const etpack_bpte& bpte) {
    return ArtifactOf(etpack::PlanBpte(bpte.input, bpte.options));
  }
};

// The body of etpack_<kind>_set_option (`fn`).
template <typename Handle>
etpack_status SetOption(const char* function, Handle* handle, int option, uint64_t value) {
  return Guard(function, [&](const char* fn) -> Status {
    if (handle == nullptr) return Null(fn, Kind<Handle>::kArgument);
    for (const auto& row : Kind<Handle>::kOptions) {
      if (row.option != option) continue;
      if (row.check != nullptr) ETPACK_RETURN_IF_ERROR(row.check(value).WithContext(fn));
      row.set(handle->options, value);
      return Status::OK();
    }
    return etpack::InvalidArgument(std::string(fn) + ": unknown option " + std::to_string(option));
  });
}

// The body of etpack_<kind>_plan (`fn`).
template <typename Handle>
etpack_status PlanOf(const char* function, const Handle* handle, etpack_plan** out) {
  return Guard(function, [&](const char* fn) -> Status {
    ETPACK_C_OUT(out);
    if (handle == nullptr) return Null(fn, Kind<Handle>::kArgument);
    ETPACK_ASSIGN_OR_RETURN(etpack::ArtifactPlan artifact, Kind<Handle>::Plan(fn, *handle));
    return NewPlan(std::move(artifact), out);
  });
}

}  // namespace

extern "C" {

const char* etpack_last_error(void) {
  return last_error_override ? last_error_override : last_error.c_str();
}

const char* etpack_status_name(int status) {
  switch (status) {
    case ETPACK_OUT_OF_MEMORY: return "out of memory";
    case ETPACK_INTERNAL: return "internal error";
    default:
      if (status >= ETPACK_OK && status <= ETPACK_UNIMPLEMENTED) {
        return etpack::CodeName(static_cast<Code>(status));
      }
      return "unknown status";
  }
}

// ETPACK_VERSION: the project version, defined by lib/meson.build.
const char* etpack_version(void) { return ETPACK_VERSION; }

// ---- sources ----------------------------------------------------------------

etpack_status etpack_source_memory(const void* data, uint64_t size, etpack_source** out) {
  return Guard(__func__, [&](const char* fn) -> Status {
    ETPACK_C_OUT(out);
    if (data == nullptr && size != 0) return Null(fn, "data");
    *out = new etpack_source{etpack::MemorySource(data, size)};
    return Status::OK();
  });
}

etpack_status etpack_source_file(const char* path, uint64_t offset, uint64_t length,
                                 etpack_source** out) {
  return Guard(__func__, [&](const char* fn) -> Status {
    ETPACK_C_OUT(out);
    ETPACK_C_REQUIRE(path);
    auto source = length == ETPACK_TO_END ? etpack::FileSource(path, offset)
                                          : etpack::FileSource(path, offset, length);
    if (!source.ok()) return source.status();
    *out = new etpack_source{std::move(source).value()};
    return Status::OK();
  });
}

etpack_status etpack_source_callback(const char* name, uint64_t size, etpack_fill_fn fill,
                                     void* user, etpack_source** out) {
  return Guard(__func__, [&](const char* fn) -> Status {
    ETPACK_C_OUT(out);
    ETPACK_C_REQUIRE(name);
    if (fill == nullptr) return Null(fn, "fill");
    auto call = [fill, user](uint64_t offset, uint8_t* dst, size_t n) -> Status {
      const etpack_status s = fill(user, offset, dst, n);
      if (s == ETPACK_OK) return Status::OK();
      const bool known = s > ETPACK_OK && s <= ETPACK_UNIMPLEMENTED;
      return Status(
          known ? static_cast<Code>(s) : Code::kIoError,
          "the fill callback returned " + std::to_string(s) + " (" + etpack_status_name(s) + ")");
    };
    *out = new etpack_source{etpack::GeneratorSource(name, size, call)};
    return Status::OK();
  });
}

uint64_t etpack_source_size(const etpack_source* source) {
  return source ? source->source->size() : 0;
}

void etpack_source_free(etpack_source* source) { delete source; }

// ---- plans ------------------------------------------------------------------

uint64_t etpack_plan_file_size(const etpack_plan* plan) {
  return plan ? plan->artifact.file_size : 0;
}

etpack_status etpack_plan_write(const etpack_plan* plan, const char* path,
                                etpack_progress_fn progress, etpack_cancel_fn cancel, void* user) {
  return Guard(__func__, [&](const char* fn) -> Status {
    ETPACK_C_REQUIRE(plan);
    ETPACK_C_REQUIRE(path);
    return etpack::WriteArtifactFile(path, plan->artifact, WithCallbacks(progress, cancel, user));
  });
}

etpack_status etpack_plan_write_files(size_t count, const char* const* paths,
                                      const etpack_plan* const* plans, etpack_progress_fn progress,
                                      etpack_cancel_fn cancel, void* user) {
  return Guard(__func__, [&](const char* fn) -> Status {
    if (count > 0) {
      ETPACK_C_REQUIRE(paths);
      ETPACK_C_REQUIRE(plans);
    }
    etpack::ArtifactFiles files;
    for (size_t i = 0; i < count; ++i) {
      const std::string at = "[" + std::to_string(i) + "]";
      if (paths[i] == nullptr) return Null(fn, "paths" + at);
      if (plans[i] == nullptr) return Null(fn, "plans" + at);
      files.emplace_back(paths[i], &plans[i]->artifact);
    }
    return etpack::WriteArtifactFiles(files, WithCallbacks(progress, cancel, user));
  });
}

etpack_status etpack_plan_of_source(const etpack_source* source, etpack_plan** out) {
  return Guard(__func__, [&](const char* fn) -> Status {
    ETPACK_C_OUT(out);
    ETPACK_C_REQUIRE(source);
    return NewPlan(etpack::WholeSourcePlan(source->source), out);
  });
}

void etpack_plan_free(etpack_plan* plan) { delete plan; }

// ---- .pte -------------------------------------------------------------------

etpack_status etpack_pte_create(etpack_pte** out) {
  return Guard(__func__, [&](const char* fn) -> Status {
    ETPACK_C_OUT(out);
    *out = new etpack_pte();
    // Constant 0, the format's empty placeholder, is there from the start
    // (etpack_c.h): a program given no constant still has its constant
    // segment, as the reference writes one for the placeholder alone.
    (*out)->input.constants.push_back(etpack::OwnedSource({}));
    return Status::OK();
  });
}

etpack_status etpack_pte_set_program_json(etpack_pte* pte, const char* json, size_t json_size) {
  return Guard(__func__, [&](const char* fn) -> Status {
    ETPACK_C_REQUIRE(pte);
    ETPACK_C_REQUIRE(json);
    auto tree = etpack::json::Parse(std::string_view(json, json_size), "program JSON");
    if (!tree.ok()) return tree.status();
    pte->input.program = etpack::ProgramStructure::FromTree(std::move(tree).value());
    pte->has_program = true;
    return Status::OK();
  });
}

etpack_status etpack_pte_set_program_flatbuffer(etpack_pte* pte, const void* bytes, size_t size) {
  return Guard(__func__, [&](const char* fn) -> Status {
    ETPACK_C_REQUIRE(pte);
    ETPACK_C_REQUIRE(bytes);
    const auto* begin = static_cast<const uint8_t*>(bytes);
    pte->input.program = etpack::ProgramStructure::FromFlatbuffer(
        etpack::OwnedSource(std::vector<uint8_t>(begin, begin + size)));
    pte->has_program = true;
    return Status::OK();
  });
}

etpack_status etpack_pte_add_constant(etpack_pte* pte, const etpack_source* data, uint32_t* index) {
  return AddIndexed(__func__, pte, &etpack::PteInput::constants, true, data, index);
}

etpack_status etpack_pte_add_mutable(etpack_pte* pte, const etpack_source* data, uint32_t* index) {
  return AddIndexed(__func__, pte, &etpack::PteInput::mutable_data, true, data, index);
}

etpack_status etpack_pte_add_delegate(etpack_pte* pte, const etpack_source* data, uint32_t* index) {
  return AddIndexed(__func__, pte, &etpack::PteInput::delegates, false, data, index);
}

etpack_status etpack_pte_add_named_data(etpack_pte* pte, const char* key, const etpack_source* data,
                                        uint64_t alignment) {
  return Guard(__func__, [&](const char* fn) -> Status {
    ETPACK_C_REQUIRE(pte);
    ETPACK_C_REQUIRE(key);
    ETPACK_C_REQUIRE(data);
    ETPACK_RETURN_IF_ERROR(etpack::CheckDataKey(key, fn));
    pte->input.named_data.push_back({key, data->source, alignment});
    return Status::OK();
  });
}

etpack_status etpack_pte_set_option(etpack_pte* pte, int option, uint64_t value) {
  return SetOption(__func__, pte, option, value);
}

etpack_status etpack_pte_plan(const etpack_pte* pte, etpack_plan** out) {
  return PlanOf(__func__, pte, out);
}

void etpack_pte_free(etpack_pte* pte) { delete pte; }

etpack_status etpack_pte_write_with_data(const etpack_pte* pte, const char* path, size_t count,
                                         const char* const* data_paths,
                                         const etpack_ptd* const* data, etpack_progress_fn progress,
                                         etpack_cancel_fn cancel, void* user) {
  return Guard(__func__, [&](const char* fn) -> Status {
    ETPACK_C_REQUIRE(pte);
    ETPACK_C_REQUIRE(path);
    if (count > 0) {
      ETPACK_C_REQUIRE(data_paths);
      ETPACK_C_REQUIRE(data);
    }
    ETPACK_RETURN_IF_ERROR(HasProgram(fn, *pte));
    std::vector<etpack::ExternalDataFile> files;
    for (size_t i = 0; i < count; ++i) {
      const std::string at = "[" + std::to_string(i) + "]";
      if (data_paths[i] == nullptr) return Null(fn, "data_paths" + at);
      if (data[i] == nullptr) return Null(fn, "data" + at);
      files.push_back({data_paths[i], data[i]->input});
    }
    // The builders keep their inputs: the planner takes copies.
    ETPACK_ASSIGN_OR_RETURN(
        etpack::ProgramWithDataPlan plan,
        etpack::PlanProgramWithData(path, pte->input, pte->options, std::move(files)));
    return etpack::WriteArtifactFiles(plan.files(), WithCallbacks(progress, cancel, user));
  });
}

// ---- .ptd -------------------------------------------------------------------

etpack_status etpack_ptd_create(etpack_ptd** out) {
  return Guard(__func__, [&](const char* fn) -> Status {
    ETPACK_C_OUT(out);
    *out = new etpack_ptd();
    return Status::OK();
  });
}

etpack_status etpack_ptd_add_tensor(etpack_ptd* ptd, const char* key, const etpack_source* data,
                                    int32_t dtype, size_t rank, const int32_t* sizes,
                                    const uint8_t* dim_order, uint64_t alignment) {
  return Guard(__func__, [&](const char* fn) -> Status {
    ETPACK_C_REQUIRE(ptd);
    ETPACK_C_REQUIRE(key);
    ETPACK_C_REQUIRE(data);
    ETPACK_RETURN_IF_ERROR(etpack::CheckDataKey(key, fn));
    auto layout = LayoutOf(fn, dtype, rank, sizes, dim_order);
    if (!layout.ok()) return layout.status().WithContext(key);
    return AddPtdEntry(ptd, key, data, alignment, std::move(layout).value());
  });
}

etpack_status etpack_ptd_add_blob(etpack_ptd* ptd, const char* key, const etpack_source* data,
                                  uint64_t alignment) {
  return Guard(__func__, [&](const char* fn) -> Status {
    ETPACK_C_REQUIRE(ptd);
    ETPACK_C_REQUIRE(key);
    ETPACK_C_REQUIRE(data);
    ETPACK_RETURN_IF_ERROR(etpack::CheckDataKey(key, fn));
    return AddPtdEntry(ptd, key, data, alignment, std::nullopt);
  });
}

etpack_status etpack_ptd_set_option(etpack_ptd* ptd, int option, uint64_t value) {
  return SetOption(__func__, ptd, option, value);
}

etpack_status etpack_ptd_plan(const etpack_ptd* ptd, etpack_plan** out) {
  return PlanOf(__func__, ptd, out);
}

etpack_status etpack_ptd_plan_files(const etpack_ptd* ptd, const char* path,
                                    etpack_ptd_files** out) {
  return Guard(__func__, [&](const char* fn) -> Status {
    ETPACK_C_OUT(out);
    ETPACK_C_REQUIRE(ptd);
    ETPACK_C_REQUIRE(path);
    auto plans = etpack::PlanPtdFiles(path, ptd->input, ptd->options);
    if (!plans.ok()) return plans.status();
    auto files = std::make_unique<etpack_ptd_files>();
    for (etpack::PtdFilePlan& f : *plans) {
      files->paths.push_back(std::move(f.path));
      files->plans.push_back({std::move(f.plan.artifact)});
    }
    *out = files.release();
    return Status::OK();
  });
}

size_t etpack_ptd_files_count(const etpack_ptd_files* files) {
  return files == nullptr ? 0 : files->paths.size();
}

const char* etpack_ptd_files_path(const etpack_ptd_files* files, size_t i) {
  return i < etpack_ptd_files_count(files) ? files->paths[i].c_str() : nullptr;
}

const etpack_plan* etpack_ptd_files_plan(const etpack_ptd_files* files, size_t i) {
  return i < etpack_ptd_files_count(files) ? &files->plans[i] : nullptr;
}

void etpack_ptd_files_free(etpack_ptd_files* files) { delete files; }

void etpack_ptd_free(etpack_ptd* ptd) { delete ptd; }

// ---- .bpte ------------------------------------------------------------------

etpack_status etpack_bpte_create(const etpack_plan* program, etpack_bpte** out) {
  return Guard(__func__, [&](const char* fn) -> Status {
    ETPACK_C_OUT(out);
    ETPACK_C_REQUIRE(program);
    auto* bpte = new etpack_bpte();
    bpte->input.program = program->artifact;
    *out = bpte;
    return Status::OK();
  });
}

etpack_status etpack_bpte_add_case(etpack_bpte* bpte, const char* method_name) {
  return Guard(__func__, [&](const char* fn) -> Status {
    ETPACK_C_REQUIRE(bpte);
    ETPACK_C_REQUIRE(method_name);
    std::vector<etpack::BundledTestSuite>& suites = bpte->input.suites;
    auto suite = suites.begin();
    while (suite != suites.end() && suite->method_name != method_name) ++suite;
    if (suite == suites.end()) {
      suites.push_back({method_name, {}});
      suite = suites.end() - 1;
    }
    // Pointers into the suites stay valid: only the current suite grows
    // until the next add_case, which sets `current` again.
    suite->test_cases.emplace_back();
    bpte->current = &suite->test_cases.back();
    return Status::OK();
  });
}

etpack_status etpack_bpte_add_tensor(etpack_bpte* bpte, int where, int32_t dtype, size_t rank,
                                     const int32_t* sizes, const uint8_t* dim_order,
                                     const etpack_source* data) {
  return Guard(__func__, [&](const char* fn) -> Status {
    ETPACK_C_REQUIRE(bpte);
    ETPACK_C_REQUIRE(data);
    auto layout = LayoutOf(fn, dtype, rank, sizes, dim_order);
    if (!layout.ok()) return layout.status();
    etpack::BundledValue value;
    value.kind = etpack::BundledValue::Kind::kTensor;
    value.layout = std::move(layout).value();
    value.data = data->source;
    return AddBundledValue(bpte, where, std::move(value));
  });
}

etpack_status etpack_bpte_add_int(etpack_bpte* bpte, int where, int64_t value) {
  etpack::BundledValue v;
  v.kind = etpack::BundledValue::Kind::kInt;
  v.int_val = value;
  return AddScalar(__func__, bpte, where, std::move(v));
}

etpack_status etpack_bpte_add_bool(etpack_bpte* bpte, int where, int value) {
  etpack::BundledValue v;
  v.kind = etpack::BundledValue::Kind::kBool;
  v.bool_val = value != 0;
  return AddScalar(__func__, bpte, where, std::move(v));
}

etpack_status etpack_bpte_add_double(etpack_bpte* bpte, int where, double value) {
  etpack::BundledValue v;
  v.kind = etpack::BundledValue::Kind::kDouble;
  v.double_val = value;
  return AddScalar(__func__, bpte, where, std::move(v));
}

etpack_status etpack_bpte_set_option(etpack_bpte* bpte, int option, uint64_t value) {
  return SetOption(__func__, bpte, option, value);
}

etpack_status etpack_bpte_plan(const etpack_bpte* bpte, etpack_plan** out) {
  return PlanOf(__func__, bpte, out);
}

void etpack_bpte_free(etpack_bpte* bpte) { delete bpte; }

// ---- verifying --------------------------------------------------------------

etpack_status etpack_verify(size_t count, const char* const* paths) {
  return Guard(__func__, [&](const char* fn) -> Status {
    ETPACK_ASSIGN_OR_RETURN(std::vector<std::string> files, PathsOf(fn, "paths", count, paths));
    ETPACK_ASSIGN_OR_RETURN(etpack::VerifyReport report, etpack::Verify(files));
    return report.verdict;
  });
}

// ---- sharing a family's data ------------------------------------------------

etpack_status etpack_share(size_t count, const char* const* inputs, const char* out_dir,
                           const char* data_name, uint64_t max_shard_bytes, uint64_t alignment,
                           uint64_t min_bytes, uint32_t flags, etpack_progress_fn progress,
                           etpack_cancel_fn cancel, void* user, char** report) {
  if (report != nullptr) *report = nullptr;
  return Guard(__func__, [&](const char* fn) -> Status {
    ETPACK_ASSIGN_OR_RETURN(ShareCall call,
                            ShareCallOf(fn, count, inputs, out_dir, data_name, max_shard_bytes,
                                        alignment, min_bytes, flags, progress, cancel, user));
    ETPACK_ASSIGN_OR_RETURN(etpack::ShareResult done,
                            etpack::Share(call.inputs, call.options, call.dry_run, call.write));
    if (report != nullptr) *report = CopyOut(etpack::json::Print(etpack::ShareReportJson(done)));
    return Status::OK();
  });
}

void etpack_string_free(char* s) { std::free(s); }

}  // extern "C"
