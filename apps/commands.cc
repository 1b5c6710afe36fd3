#include "commands.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <iterator>
#include <set>
#include <utility>

#include "etpack/external_data.h"
#include "etpack/json.h"
#include "layout/layout.h"
#include "etpack/manifest.h"
#include "etpack/ptd.h"
#include "etpack/pte.h"
#include "etpack/pte_reader.h"
#include "etpack/writer.h"
#include "flatbuffer/unaligned_vector.h"
#include "program_etpack_generated.h"
#include "progress.h"

namespace etpack::cli {

const char kUsage[] =
    "usage: etpack COMMAND [ARGS]\n"
    "\n"
    "Commands:\n"
    "  inspect FILE [--json]       show the layout of a .pte (header, methods,\n"
    "                              segments, constants, delegates, named data,\n"
    "                              external tensors) or a .ptd (header,\n"
    "                              segments, entries with their layouts)\n"
    "  verify FILE [--data X.ptd ...]\n"
    "                              validate a .pte or .ptd completely; with\n"
    "                              --data, also check that every EXTERNAL\n"
    "                              tensor of the .pte resolves in the .ptd\n"
    "                              files with identical dtype, sizes, dim_order\n"
    "  repack IN.pte -o OUT.pte [--external-constants OUT.ptd]\n"
    "         [--segment-alignment N] [--constant-alignment N]\n"
    "                              lay a .pte out again with new alignments;\n"
    "                              --external-constants moves every constant\n"
    "                              into OUT.ptd and marks it EXTERNAL\n"
    "  pack MANIFEST.json -o OUT [--segment-alignment N] [--constant-alignment N]\n"
    "                              write a .pte or .ptd from a JSON manifest\n"
    "                              (docs/manifest.md); flags override the\n"
    "                              manifest's serializer_options\n"
    "  ptd WEIGHTS.safetensors [MORE.safetensors | model.safetensors.index.json ...]\n"
    "      -o OUT.ptd [--align N]\n"
    "                              convert a (sharded) safetensors checkpoint\n"
    "                              to a .ptd, streaming file to file; --align\n"
    "                              places every tensor at a multiple of N\n"
    "                              in the file (e.g. 4096 for page-aligned mmap)\n"
    "  bundle IN.pte --cases CASES.json -o OUT.bpte [--layout standard|segmented]\n"
    "         [--program-alignment N]\n"
    "                              write a bundled program: IN.pte plus the test\n"
    "                              cases of CASES.json (docs/bundle-cases.md);\n"
    "                              segmented (no 2 GiB limit) places the program\n"
    "                              N-aligned (power of two >= 128)\n"
    "  unbundle IN.bpte -o OUT.pte  extract the program of a bundled program\n"
    "  demo [--size BYTES] [-o DIR]\n"
    "                              write, verify and summarise an LLM-shaped\n"
    "                              program with BYTES of weights (default\n"
    "                              512MiB; suffixes K M G KiB MiB GiB) as\n"
    "                              DIR/demo.pte (default DIR: .)\n"
    "\n"
    "Alignments are powers of two; defaults: segment 128, constant 16.\n"
    "Exit status: 0 success, 1 failure, 2 usage error.\n";

int UsageError(const std::string& message) {
  std::fprintf(stderr, "etpack: %s\n\n%s", message.c_str(), kUsage);
  return kExitUsage;
}

int Failure(const Status& status) {
  std::fprintf(stderr, "etpack: %s\n", status.message().c_str());
  return kExitFailure;
}

bool Args::Has(const std::string& flag) const {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

const std::string* Args::Value(const std::string& option) const {
  auto it = values.find(option);
  return it == values.end() ? nullptr : &it->second;
}

std::vector<std::string> Args::Values(const std::string& option) const {
  std::vector<std::string> out;
  for (const auto& [name, value] : all_values) {
    if (name == option) out.push_back(value);
  }
  return out;
}

Result<Args> ParseArgs(const std::vector<std::string>& argv,
                       const std::vector<std::string>& value_options,
                       const std::vector<std::string>& flag_options) {
  auto known = [](const std::vector<std::string>& list, const std::string& s) {
    return std::find(list.begin(), list.end(), s) != list.end();
  };
  Args args;
  bool options_done = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (options_done || a.size() < 2 || a[0] != '-') {
      args.positional.push_back(a);
      continue;
    }
    if (a == "--") {
      options_done = true;
      continue;
    }
    std::string name = a;
    std::optional<std::string> inline_value;
    if (a.compare(0, 2, "--") == 0) {
      const size_t eq = a.find('=');
      if (eq != std::string::npos) {
        name = a.substr(0, eq);
        inline_value = a.substr(eq + 1);
      }
    }
    if (known(value_options, name)) {
      if (inline_value) {
        args.values[name] = *inline_value;
      } else if (i + 1 < argv.size()) {
        args.values[name] = argv[++i];
      } else {
        return InvalidArgument("option " + name + " needs a value");
      }
      args.all_values.emplace_back(name, args.values[name]);
    } else if (known(flag_options, name)) {
      if (inline_value) return InvalidArgument("option " + name + " takes no value");
      args.flags.push_back(name);
    } else {
      return InvalidArgument("unknown option '" + a + "'");
    }
  }
  return args;
}

Result<uint64_t> ParseByteSize(std::string_view text, std::string_view what) {
  auto bad = [&] {
    return InvalidArgument(std::string(what) + " = '" + std::string(text) +
                           "' is not a byte count (e.g. 4096, 64K, 512MiB, 6GiB)");
  };
  size_t digits = 0;
  uint64_t value = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
    const uint64_t d = static_cast<uint64_t>(text[digits] - '0');
    if (value > (UINT64_MAX - d) / 10) return bad();
    value = value * 10 + d;
    ++digits;
  }
  if (digits == 0) return bad();
  std::string suffix(text.substr(digits));
  for (char& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::pair<const char*, int> kSuffixes[] = {
      {"", 0},   {"b", 0},    {"k", 10},   {"kib", 10}, {"m", 20},
      {"mib", 20}, {"g", 30}, {"gib", 30}, {"t", 40},   {"tib", 40}};
  for (const auto& [name, shift] : kSuffixes) {
    if (suffix != name) continue;
    if (shift > 0 && value > (UINT64_MAX >> shift)) {
      return OutOfRange(std::string(what) + " = '" + std::string(text) +
                        "' does not fit in 64 bits");
    }
    return value << shift;
  }
  return bad();
}

std::string BytesText(uint64_t bytes) {
  std::string text = std::to_string(bytes) + " bytes";
  if (bytes >= 1024) text += " (" + HumanBytes(bytes) + ")";
  return text;
}

std::string HumanBytes(uint64_t bytes) {
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  char buf[48];
  if (bytes < 1024) {
    std::snprintf(buf, sizeof buf, "%" PRIu64 " bytes", bytes);
    return buf;
  }
  double v = static_cast<double>(bytes) / 1024.0;
  size_t unit = 0;
  while (v >= 1024.0 && unit + 1 < std::size(kUnits)) {
    v /= 1024.0;
    ++unit;
  }
  std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[unit]);
  return buf;
}

Result<FileKind> DetectFileKind(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError(path, errno);
  uint8_t head[8];
  size_t got = 0;
  while (got < sizeof head) {
    const ssize_t n = read(fd, head + got, sizeof head - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      return IoError(path, err);
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  if (got < sizeof head) {
    return Corrupt(path + ": " + std::to_string(got) +
                   " bytes is too short for a .pte, .ptd or .bpte file");
  }
  if (std::memcmp(head + 4, "ET12", 4) == 0) return FileKind::kPte;
  if (std::memcmp(head + 4, "FT01", 4) == 0) return FileKind::kPtd;
  if (std::memcmp(head + 4, "BP08", 4) == 0) return FileKind::kBpte;
  std::string id;
  for (int i = 4; i < 8; ++i) {
    const char c = static_cast<char>(head[i]);
    id += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return Corrupt(path + ": file identifier '" + id +
                 "' at bytes 4..7 is none of ET12 (.pte), FT01 (.ptd), BP08 (.bpte)");
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double PeakRssMiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

namespace {

namespace fb = etpack::pte_fb;

// ---------------------------------------------------------------- inspect

struct MethodInfo {
  std::string name;
  uint64_t values = 0, inputs = 0, outputs = 0, instructions = 0, delegates = 0;
};

struct SegmentInfo {
  uint64_t index = 0;
  std::string role;
  uint64_t offset = 0, absolute = 0, size = 0, alignment = 0;
};

struct DelegateInfo {
  std::string method;
  uint64_t index = 0;
  std::string backend;
  std::string location;
  uint64_t size = 0;
};

struct NamedInfo {
  std::string key;
  uint64_t segment = 0;
  uint64_t size = 0;
};

struct ExternalInfo {
  std::string method;
  uint64_t value = 0;
  std::string key;
  TensorLayout layout;
};

struct Report {
  std::string file;
  uint64_t file_size = 0;
  std::string identifier;
  ExtendedHeader header;
  std::vector<MethodInfo> methods;
  std::vector<SegmentInfo> segments;
  uint64_t constant_tensors = 0;
  uint64_t constant_bytes = 0;
  std::vector<DelegateInfo> delegates;
  std::vector<NamedInfo> named;
  std::vector<ExternalInfo> external;
};

template <typename V>
uint64_t Count(const V* v) {
  return v ? v->size() : 0;
}

std::string Str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

// The largest power of two dividing `offset` (offset 0 divides by all),
// capped: what a zero-copy loader can count on for data placed there.
uint64_t OffsetAlignment(uint64_t offset) {
  constexpr uint64_t kCap = 65536;
  if (offset == 0) return kCap;
  return std::min(offset & (~offset + 1), kCap);
}

uint64_t SegmentSize(const fb::Program& p, uint64_t index) {
  const auto* segs = p.segments();
  if (!segs || index >= segs->size()) return 0;
  return segs->Get(static_cast<flatbuffers::uoffset_t>(index))->size();
}

// Bytes reserved for constant buffer `idx`: its span in the constant
// segment (up to the next offset, or the segment end for the last), or its
// inline storage in files that predate the constant segment.
uint64_t ConstantBufferBytes(const fb::Program& p, uint32_t idx) {
  const auto* cs = p.constant_segment();
  if (cs && cs->offsets() && cs->offsets()->size() > 1) {
    const auto* offs = cs->offsets();
    if (idx >= offs->size()) return 0;
    const uint64_t start = UnalignedAt(*offs, idx);
    const uint64_t end = idx + 1 < offs->size() ? UnalignedAt(*offs, idx + 1)
                                                : SegmentSize(p, cs->segment_index());
    return end > start ? end - start : 0;
  }
  const auto* cb = p.constant_buffer();
  if (cb && idx < cb->size() && cb->Get(idx)->storage()) {
    return cb->Get(idx)->storage()->size();
  }
  return 0;
}

Report BuildReport(const PteFile& file) {
  Report r;
  const fb::Program& p = file.program();
  r.file = file.name();
  r.file_size = file.size();
  for (size_t i = 4; i < 8 && i < file.size(); ++i) {
    const char c = static_cast<char>(file.data()[i]);
    r.identifier += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  r.header = file.header();

  std::set<uint32_t> constant_buffers;
  if (const auto* plans = p.execution_plan()) {
    for (const fb::ExecutionPlan* plan : *plans) {
      MethodInfo m;
      m.name = Str(plan->name());
      m.values = Count(plan->values());
      m.inputs = Count(plan->inputs());
      m.outputs = Count(plan->outputs());
      m.delegates = Count(plan->delegates());
      if (const auto* chains = plan->chains()) {
        for (const fb::Chain* chain : *chains) m.instructions += Count(chain->instructions());
      }
      r.methods.push_back(m);

      if (const auto* values = plan->values()) {
        for (flatbuffers::uoffset_t vi = 0; vi < values->size(); ++vi) {
          const fb::Tensor* t = values->Get(vi)->val_as_Tensor();
          if (!t) continue;
          const fb::ExtraTensorInfo* extra = t->extra_tensor_info();
          if (extra && extra->location() == fb::TensorDataLocation::EXTERNAL) {
            ExternalInfo e;
            e.method = m.name;
            e.value = vi;
            e.key = Str(extra->fully_qualified_name());
            e.layout.scalar_type = static_cast<int>(t->scalar_type());
            if (t->sizes()) e.layout.sizes.assign(t->sizes()->begin(), t->sizes()->end());
            if (t->dim_order()) {
              e.layout.dim_order.assign(t->dim_order()->begin(), t->dim_order()->end());
            }
            r.external.push_back(std::move(e));
            continue;
          }
          if (t->data_buffer_idx() == 0 || t->allocation_info()) continue;
          ++r.constant_tensors;
          constant_buffers.insert(t->data_buffer_idx());
        }
      }
      if (const auto* delegates = plan->delegates()) {
        for (flatbuffers::uoffset_t i = 0; i < delegates->size(); ++i) {
          const fb::BackendDelegate* d = delegates->Get(i);
          DelegateInfo info;
          info.method = m.name;
          info.index = i;
          info.backend = Str(d->id());
          if (const auto* ref = d->processed()) {
            if (ref->location() == fb::DataLocation::SEGMENT) {
              info.location = "segment " + std::to_string(ref->index());
              info.size = SegmentSize(p, ref->index());
            } else {
              info.location = "inline " + std::to_string(ref->index());
              const auto* inl = p.backend_delegate_data();
              if (inl && ref->index() < inl->size() && inl->Get(ref->index())->data()) {
                info.size = inl->Get(ref->index())->data()->size();
              }
            }
          }
          r.delegates.push_back(info);
        }
      }
    }
  }
  for (uint32_t idx : constant_buffers) r.constant_bytes += ConstantBufferBytes(p, idx);

  const PteLayout& layout = file.layout();
  for (size_t i = 0; i < layout.segments.size(); ++i) {
    const PteLayout::Segment& s = layout.segments[i];
    SegmentInfo info;
    info.index = i;
    info.role = SegmentRoleName(s.role);
    info.offset = s.offset;
    info.absolute = r.header.segment_base_offset + s.offset;
    info.size = s.size;
    info.alignment = OffsetAlignment(info.absolute);
    r.segments.push_back(info);
  }

  if (const auto* named = p.named_data()) {
    for (const fb::NamedData* n : *named) {
      r.named.push_back({Str(n->key()), n->segment_index(), SegmentSize(p, n->segment_index())});
    }
  }
  return r;
}

json::Value ReportJson(const Report& r) {
  using json::Value;
  auto U = [](uint64_t v) { return Value::UInt(v); };
  std::vector<Value> methods, segments, delegates, named;
  for (const MethodInfo& m : r.methods) {
    methods.push_back(Value::Object({{"name", Value::String(m.name)},
                                     {"values", U(m.values)},
                                     {"inputs", U(m.inputs)},
                                     {"outputs", U(m.outputs)},
                                     {"instructions", U(m.instructions)},
                                     {"delegates", U(m.delegates)}}));
  }
  for (const SegmentInfo& s : r.segments) {
    segments.push_back(Value::Object({{"index", U(s.index)},
                                      {"role", Value::String(s.role)},
                                      {"offset", U(s.offset)},
                                      {"absolute_offset", U(s.absolute)},
                                      {"size", U(s.size)},
                                      {"alignment", U(s.alignment)}}));
  }
  for (const DelegateInfo& d : r.delegates) {
    delegates.push_back(Value::Object({{"method", Value::String(d.method)},
                                       {"index", U(d.index)},
                                       {"backend", Value::String(d.backend)},
                                       {"location", Value::String(d.location)},
                                       {"size", U(d.size)}}));
  }
  for (const NamedInfo& n : r.named) {
    named.push_back(Value::Object({{"key", Value::String(n.key)},
                                   {"segment", U(n.segment)},
                                   {"size", U(n.size)}}));
  }
  std::vector<Value> external;
  for (const ExternalInfo& e : r.external) {
    external.push_back(Value::Object({{"method", Value::String(e.method)},
                                      {"value", U(e.value)},
                                      {"key", Value::String(e.key)},
                                      {"tensor_layout", LayoutJson(e.layout)}}));
  }
  return Value::Object({
      {"kind", Value::String("pte")},
      {"file", Value::String(r.file)},
      {"file_size", U(r.file_size)},
      {"identifier", Value::String(r.identifier)},
      {"extended_header",
       Value::Object({{"present", Value::Bool(r.header.present)},
                      {"length", U(r.header.length)},
                      {"program_size", U(r.header.program_size)},
                      {"segment_base_offset", U(r.header.segment_base_offset)},
                      {"segment_data_size", U(r.header.segment_data_size)}})},
      {"methods", Value::Array(std::move(methods))},
      {"segments", Value::Array(std::move(segments))},
      {"constants", Value::Object({{"tensors", U(r.constant_tensors)},
                                   {"bytes", U(r.constant_bytes)}})},
      {"delegates", Value::Array(std::move(delegates))},
      {"named_data", Value::Array(std::move(named))},
      {"external_tensors", Value::Array(std::move(external))},
  });
}

void PrintReport(const Report& r) {
  std::printf("file:                %s\n", r.file.c_str());
  std::printf("file size:           %s\n", BytesText(r.file_size).c_str());
  std::printf("identifier:          %s\n", r.identifier.c_str());
  if (r.header.present) {
    std::printf("extended header:     present, length %" PRIu32 "\n", r.header.length);
    std::printf("  program_size:        %" PRIu64 "\n", r.header.program_size);
    std::printf("  segment_base_offset: %" PRIu64 "\n", r.header.segment_base_offset);
    std::printf("  segment_data_size:   %" PRIu64 "\n", r.header.segment_data_size);
  } else {
    std::printf("extended header:     absent (the whole file is the flatbuffer)\n");
  }

  std::printf("\nmethods (%zu):\n", r.methods.size());
  std::printf("  %-24s %8s %7s %8s %13s %10s\n", "name", "values", "inputs", "outputs",
              "instructions", "delegates");
  for (const MethodInfo& m : r.methods) {
    std::printf("  %-24s %8" PRIu64 " %7" PRIu64 " %8" PRIu64 " %13" PRIu64 " %10" PRIu64 "\n",
                m.name.c_str(), m.values, m.inputs, m.outputs, m.instructions, m.delegates);
  }

  std::printf("\nsegments (%zu):\n", r.segments.size());
  if (!r.segments.empty()) {
    std::printf("  %5s  %-10s %14s %14s %14s %9s\n", "index", "role", "offset", "absolute",
                "size", "alignment");
    for (const SegmentInfo& s : r.segments) {
      std::printf("  %5" PRIu64 "  %-10s %14" PRIu64 " %14" PRIu64 " %14" PRIu64 " %9" PRIu64
                  "\n",
                  s.index, s.role.c_str(), s.offset, s.absolute, s.size, s.alignment);
    }
  }

  std::printf("\nconstants:           %" PRIu64 " tensors, %s\n", r.constant_tensors,
              BytesText(r.constant_bytes).c_str());

  std::printf("\ndelegates (%zu):\n", r.delegates.size());
  for (const DelegateInfo& d : r.delegates) {
    std::printf("  %s[%" PRIu64 "]  %-24s %-12s %" PRIu64 " bytes\n", d.method.c_str(),
                d.index, d.backend.c_str(), d.location.c_str(), d.size);
  }

  std::printf("\nnamed data (%zu):\n", r.named.size());
  for (const NamedInfo& n : r.named) {
    std::printf("  %-32s segment %-4" PRIu64 " %" PRIu64 " bytes\n", n.key.c_str(), n.segment,
                n.size);
  }

  std::printf("\nexternal tensors (%zu):\n", r.external.size());
  for (const ExternalInfo& e : r.external) {
    std::printf("  %s.values[%" PRIu64 "]  %-32s %s\n", e.method.c_str(), e.value,
                e.key.empty() ? "(no fully_qualified_name)" : e.key.c_str(),
                DescribeLayout(e.layout).c_str());
  }
}

// ------------------------------------------------------- repack and pack

// Reads "--segment-alignment" / "--constant-alignment" into `options`.
// A bad value is a usage error: the message is returned.
Status ApplyAlignmentFlags(const Args& args, PteOptions* options) {
  const std::pair<const char*, uint64_t*> flags[] = {
      {"--segment-alignment", &options->segment_alignment},
      {"--constant-alignment", &options->constant_tensor_alignment}};
  for (const auto& [name, field] : flags) {
    const std::string* text = args.Value(name);
    if (!text) continue;
    ETPACK_ASSIGN_OR_RETURN(uint64_t value, ParseByteSize(*text, name));
    ETPACK_RETURN_IF_ERROR(CheckAlignment(value, name));
    *field = value;
  }
  return Status::OK();
}

// Splits the arguments of repack/pack: one input, -o, alignment flags and
// the command's `extra` value options.
struct WriteJob {
  std::string input;
  std::string output;
  Args args;
};

Result<WriteJob> ParseWriteJob(const std::vector<std::string>& argv, const char* what,
                               const char* output_name,
                               const std::vector<std::string>& extra = {}) {
  std::vector<std::string> options = {"-o", "--output", "--segment-alignment",
                                      "--constant-alignment"};
  options.insert(options.end(), extra.begin(), extra.end());
  ETPACK_ASSIGN_OR_RETURN(Args args, ParseArgs(argv, options, {}));
  if (args.positional.size() != 1) {
    return InvalidArgument(std::string("expected exactly one ") + what + ", got " +
                           std::to_string(args.positional.size()));
  }
  const std::string* out = args.Value("-o");
  if (!out) out = args.Value("--output");
  if (!out || out->empty()) return InvalidArgument(std::string("missing -o ") + output_name);
  WriteJob job;
  job.input = args.positional[0];
  job.output = *out;
  job.args = std::move(args);
  return job;
}

Status WritePlanned(const std::string& output, const ArtifactPlan& plan) {
  ProgressLine progress("writing " + output);
  return WriteArtifactFile(output, plan, OutputOptions{}, progress.callback());
}

void ReportPte(const std::string& output, const PtePlan& plan, const PteOptions& options) {
  std::printf("wrote %s (%" PRIu64 " bytes, %zu segments, segment alignment %" PRIu64
              ", constant alignment %" PRIu64 ")\n",
              output.c_str(), plan.artifact.file_size, plan.layout.segments.size(),
              options.segment_alignment, options.constant_tensor_alignment);
}

void ReportPtd(const std::string& output, const PtdPlan& plan, const PtdInput& input,
               const PtdOptions& options) {
  std::printf("wrote %s (%" PRIu64 " bytes, %zu entries, %zu segments, segment alignment %" PRIu64
              ")\n",
              output.c_str(), plan.artifact.file_size, input.entries.size(),
              plan.layout.segments.size(), options.segment_alignment);
}

Status PlanAndWrite(const std::string& output, const PteInput& input,
                    const PteOptions& options) {
  ETPACK_ASSIGN_OR_RETURN(PtePlan plan, PlanPte(input, options));
  ETPACK_RETURN_IF_ERROR(WritePlanned(output, plan.artifact));
  ReportPte(output, plan, options);
  return Status::OK();
}

// `verify` prints library messages after the file name; drop the name
// when the message already starts with it.
std::string WithoutPrefix(std::string message, const std::string& path) {
  const std::string prefix = path + ": ";
  if (message.compare(0, prefix.size(), prefix) == 0) message.erase(0, prefix.size());
  return message;
}


}  // namespace

int Invalid(const std::string& path, const Status& status) {
  // A file that cannot be read is not an invalid file: say which it is.
  if (status.code() == Code::kIoError) {
    std::fprintf(stderr, "etpack: cannot read %s: %s\n", path.c_str(),
                 WithoutPrefix(status.message(), path).c_str());
    return kExitFailure;
  }
  std::fprintf(stderr, "%s: invalid: %s\n", path.c_str(),
               WithoutPrefix(status.message(), path).c_str());
  return kExitFailure;
}

void PrintPteReport(const PteFile& file) { PrintReport(BuildReport(file)); }

json::Value PteReportJson(const PteFile& file) { return ReportJson(BuildReport(file)); }

json::Value LayoutJson(const TensorLayout& layout) {
  using json::Value;
  std::vector<Value> sizes, order;
  for (int32_t d : layout.sizes) sizes.push_back(Value::Int(d));
  for (uint8_t d : layout.dim_order) order.push_back(Value::Int(d));
  return Value::Object({{"scalar_type", Value::Int(layout.scalar_type)},
                        {"sizes", Value::Array(std::move(sizes))},
                        {"dim_order", Value::Array(std::move(order))},
                        {"text", Value::String(DescribeLayout(layout))}});
}

int Inspect(const std::vector<std::string>& argv) {
  Result<Args> args = ParseArgs(argv, {}, {"--json"});
  if (!args.ok()) return UsageError(args.status().message());
  if (args->positional.size() != 1) return UsageError("inspect takes exactly one FILE");
  const std::string& path = args->positional[0];
  Result<FileKind> kind = DetectFileKind(path);
  if (!kind.ok()) return Failure(kind.status());
  if (*kind == FileKind::kPtd) return InspectPtd(path, args->Has("--json"));
  if (*kind == FileKind::kBpte) return InspectBpte(path, args->Has("--json"));
  Result<std::unique_ptr<PteFile>> file = PteFile::Open(path);
  if (!file.ok()) return Failure(file.status());
  const Report report = BuildReport(**file);
  if (args->Has("--json")) {
    std::printf("%s\n", json::Print(ReportJson(report), 2).c_str());
  } else {
    PrintReport(report);
  }
  return kExitOk;
}

int Verify(const std::vector<std::string>& argv) {
  Result<Args> args = ParseArgs(argv, {"--data"}, {});
  if (!args.ok()) return UsageError(args.status().message());
  if (args->positional.size() != 1) return UsageError("verify takes exactly one FILE");
  const std::string& path = args->positional[0];
  const std::vector<std::string> data_paths = args->Values("--data");
  Result<FileKind> kind = DetectFileKind(path);
  if (!kind.ok()) return Invalid(path, kind.status());
  if (*kind == FileKind::kPtd) {
    if (!data_paths.empty()) {
      return UsageError("verify: --data goes with a .pte; " + path + " is a .ptd");
    }
    return VerifyPtd(path);
  }
  if (*kind == FileKind::kBpte) {
    if (!data_paths.empty()) {
      return UsageError("verify: --data goes with a .pte; " + path + " is a .bpte");
    }
    return VerifyBpte(path);
  }

  Result<std::unique_ptr<PteFile>> file = PteFile::Open(path);
  if (!file.ok()) return Invalid(path, file.status());
  const PteFile& f = **file;

  std::vector<std::unique_ptr<PtdFile>> data;
  std::vector<const PtdFile*> views;
  for (const std::string& d : data_paths) {
    Result<FileKind> dk = DetectFileKind(d);
    if (!dk.ok()) return Invalid(d, dk.status());
    if (*dk != FileKind::kPtd) {
      return Invalid(d, Corrupt("--data expects a .ptd file; this is a .pte"));
    }
    Result<std::unique_ptr<PtdFile>> ptd = PtdFile::Open(d);
    if (!ptd.ok()) return Invalid(d, ptd.status());
    views.push_back(ptd->get());
    data.push_back(std::move(ptd).value());
  }

  std::string external;
  if (!data_paths.empty()) {
    uint64_t resolved = 0;
    if (Status s = CheckExternalReferences(f, views, &resolved); !s.ok()) return Invalid(path, s);
    std::string files;
    for (const std::string& d : data_paths) files += (files.empty() ? "" : ", ") + d;
    external = "; " + std::to_string(resolved) + " external tensors resolve in " + files;
  } else {
    uint64_t count = 0;
    for (const fb::ExecutionPlan* plan : *f.program().execution_plan()) {
      if (!plan->values()) continue;
      for (const fb::EValue* v : *plan->values()) {
        const fb::Tensor* t = v->val_as_Tensor();
        if (t && t->extra_tensor_info() &&
            t->extra_tensor_info()->location() == fb::TensorDataLocation::EXTERNAL) {
          ++count;
        }
      }
    }
    if (count > 0) {
      external = "; " + std::to_string(count) +
                 " external tensors not checked: give their .ptd files with --data";
    }
  }
  std::printf("%s: ok (%" PRIu64 " methods, %zu segments, %" PRIu64 " bytes%s)\n",
              path.c_str(), Count(f.program().execution_plan()), f.layout().segments.size(),
              f.size(), external.c_str());
  return kExitOk;
}

int Repack(const std::vector<std::string>& argv) {
  Result<WriteJob> job = ParseWriteJob(argv, "IN.pte", "OUT.pte", {"--external-constants"});
  if (!job.ok()) return UsageError("repack: " + job.status().message());
  // Flags are checked before anything is opened (usage errors come first);
  // they then override what the input file was written with.
  PteOptions flag_check;
  if (Status s = ApplyAlignmentFlags(job->args, &flag_check); !s.ok()) {
    return UsageError("repack: " + s.message());
  }
  const std::string* ptd_path = job->args.Value("--external-constants");
  if (ptd_path != nullptr) {
    if (ptd_path->empty()) return UsageError("repack: --external-constants needs a file name");
    if (std::filesystem::path(*ptd_path).lexically_normal() ==
        std::filesystem::path(job->output).lexically_normal()) {
      return UsageError("repack: the .pte and the .ptd must be different files");
    }
  }
  Result<std::unique_ptr<PteFile>> file = PteFile::Open(job->input);
  if (!file.ok()) return Failure(file.status());
  PteOptions options = (*file)->InferredOptions();
  if (Status s = ApplyAlignmentFlags(job->args, &options); !s.ok()) return Failure(s);
  if (ptd_path == nullptr) {
    Result<PteInput> input = (*file)->ToInput();
    if (!input.ok()) return Failure(input.status());
    if (Status s = PlanAndWrite(job->output, *input, options); !s.ok()) return Failure(s);
    return kExitOk;
  }

  // The constants' alignment inside the .pte no longer matters; as .ptd
  // entries they keep the alignment asked for, and their segments the
  // segment alignment.
  Result<std::pair<PteInput, PtdInput>> split =
      ExternalizeConstants(**file, options.constant_tensor_alignment);
  if (!split.ok()) return Failure(split.status());
  PtdOptions ptd_options;
  ptd_options.segment_alignment = options.segment_alignment;
  // Plan both before writing either: a plan error leaves no file behind.
  Result<PtePlan> pte_plan = PlanPte(split->first, options);
  if (!pte_plan.ok()) return Failure(pte_plan.status().WithContext(job->output));
  Result<PtdPlan> ptd_plan = PlanPtd(split->second, ptd_options);
  if (!ptd_plan.ok()) return Failure(ptd_plan.status().WithContext(*ptd_path));
  // Published together, the .ptd first: a .pte never appears without its data.
  ProgressLine progress("writing " + *ptd_path + " and " + job->output);
  if (Status s = WriteArtifactFiles({{*ptd_path, &ptd_plan->artifact},
                                     {job->output, &pte_plan->artifact}},
                                    OutputOptions{}, progress.callback());
      !s.ok()) {
    return Failure(s);
  }
  ReportPtd(*ptd_path, *ptd_plan, split->second, ptd_options);
  ReportPte(job->output, *pte_plan, options);
  return kExitOk;
}

int Pack(const std::vector<std::string>& argv) {
  Result<WriteJob> job = ParseWriteJob(argv, "MANIFEST.json", "OUT");
  if (!job.ok()) return UsageError("pack: " + job.status().message());
  // Validate the flags before touching any file so a typo costs nothing.
  PteOptions flag_check;
  if (Status s = ApplyAlignmentFlags(job->args, &flag_check); !s.ok()) {
    return UsageError("pack: " + s.message());
  }
  Result<AnyManifest> manifest = LoadManifest(job->input);
  if (!manifest.ok()) return Failure(manifest.status());

  if (auto* pte = std::get_if<PteManifest>(&*manifest)) {
    PteOptions options = pte->options;
    if (Status s = ApplyAlignmentFlags(job->args, &options); !s.ok()) return Failure(s);
    if (Status s = PlanAndWrite(job->output, pte->input, options); !s.ok()) return Failure(s);
    return kExitOk;
  }

  const PtdManifest& ptd = std::get<PtdManifest>(*manifest);
  if (job->args.Value("--constant-alignment") != nullptr) {
    return UsageError("pack: --constant-alignment does not apply to a .ptd manifest (" +
                      job->input + " has format \"ptd\")");
  }
  PtdOptions options = ptd.options;
  if (job->args.Value("--segment-alignment") != nullptr) {
    options.segment_alignment = flag_check.segment_alignment;
  }
  Result<PtdPlan> plan = PlanPtd(ptd.input, options);
  if (!plan.ok()) return Failure(plan.status().WithContext(job->input));
  if (Status s = WritePlanned(job->output, plan->artifact); !s.ok()) return Failure(s);
  ReportPtd(job->output, *plan, ptd.input, options);
  return kExitOk;
}

}  // namespace etpack::cli
