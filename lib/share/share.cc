// `etpack share` (etpack/share.h): the family's data items, which of them
// move (SharedAcrossFiles says), their keys, and the plans of every output.

#include "etpack/share.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <system_error>
#include <tuple>
#include <unordered_map>

#include "etpack/external_data.h"
#include "etpack/inspect.h"
#include "etpack/ptd_file.h"
#include "etpack/pte_file.h"
#include "integrity/hash.h"
#include "integrity/table.h"
#include "plan/content_dedup.h"
#include "plan/segments.h"

namespace etpack {
namespace {

using json::Value;

std::string Quote(const std::string& s) { return "'" + s + "'"; }

// What a name means in one input: a content (an index into
// SharedReport::contents, or kUnshared for bytes no other input holds) read
// as a layout ("" for a blob). kForeign: a name that is no data item of the
// family (a memory-planned tensor's, an EXTERNAL tensor's key held by no
// input), which no moved constant may take.
constexpr int64_t kUnshared = -1;
constexpr int64_t kForeign = -2;
using Meaning = std::pair<int64_t, std::string>;

std::string LayoutText(const std::optional<TensorLayout>& l) {
  return l ? DescribeLayout(*l) : std::string();
}

template <typename T>
std::string Joined(const std::vector<T>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

// The content key of `bytes` read as `layout` (etpack/share.h), before any
// "-N" suffix: reads at most 12 KiB.
Result<std::string> ContentKey(const Source& bytes, const TensorLayout& layout) {
  ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<RunningHash> hash, NewRunningHash(HashKind::kXxh3_128));
  const uint64_t size = bytes.size();
  const std::string text = std::to_string(layout.scalar_type) + ":" + Joined(layout.sizes) + ":" +
                           Joined(layout.dim_order) + ":" + std::to_string(size) + "\n";
  hash->Update(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  ETPACK_RETURN_IF_ERROR(FeedSample(bytes, *hash));
  return std::string(kContentKeyPrefix) + HexDigest(hash->Finish());
}

// Whether `a`'s bytes come before `b`'s (equal sizes), reading up to their
// first difference.
Result<bool> BytesBefore(const Source& a, const Source& b) {
  ETPACK_ASSIGN_OR_RETURN(const std::optional<uint64_t> at, FirstDifference(a, b));
  if (!at) return false;
  uint8_t x = 0, y = 0;
  ETPACK_RETURN_IF_ERROR(a.ReadAt(*at, &x, 1));
  ETPACK_RETURN_IF_ERROR(b.ReadAt(*at, &y, 1));
  return x < y;
}

std::string BaseName(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

std::string InDir(const std::string& dir, const std::string& name) {
  return (std::filesystem::path(dir) / name).string();
}

// One input, open, with its report.
struct Input {
  std::shared_ptr<const ArtifactFile> file;
  const PteFile* pte = nullptr;  // exactly one of pte, ptd
  const PtdFile* ptd = nullptr;
  SizeReport sizes;
};

// A constant tensor that moves.
struct MovedTensor {
  uint32_t plan = 0, value = 0;
  size_t content = 0;
  TensorLayout layout;
  std::string name;  // its fully_qualified_name, "" when none
};

// What moves out of one input.
struct Moves {
  std::vector<MovedTensor> tensors;
  std::set<std::string> named_data;   // keys
  std::set<size_t> entries;           // .ptd entry indices
  std::map<uint64_t, uint64_t> rows;  // offset -> size of the rows moved out
};

// The shared file's entry of a key.
struct SharedKey {
  size_t content = 0;
  std::optional<TensorLayout> layout;
  std::set<uint32_t> files;
};

Result<Input> OpenInput(const std::string& path, const Env& env) {
  ETPACK_ASSIGN_OR_RETURN(SizedFile sized, OpenSized(path, env));
  Input in;
  if (sized.report.kind == ArtifactKind::kPte) {
    in.pte = static_cast<const PteFile*>(sized.file.get());
  } else if (sized.report.kind == ArtifactKind::kPtd) {
    in.ptd = static_cast<const PtdFile*>(sized.file.get());
  } else {
    return InvalidArgument(path +
                           ": share takes .pte and .ptd files, not a bundled program (.bpte)");
  }
  in.file = std::move(sized.file);
  in.sizes = std::move(sized.report);
  return in;
}

Status CheckOptions(const ShareOptions& o) {
  if (o.out_dir.empty()) return InvalidArgument("share: no output folder given");
  const std::string& n = o.data_name;
  if (n.size() <= 4 || n.compare(n.size() - 4, 4, ".ptd") != 0 ||
      n.find('/') != std::string::npos) {
    return InvalidArgument("share: the shared data file's name " + Quote(n) +
                           " must be a file name ending in .ptd (no folder)");
  }
  ETPACK_RETURN_IF_ERROR(CheckPathText(n, "the shared data file's name"));
  ETPACK_RETURN_IF_ERROR(CheckPathText(o.out_dir, "the output folder"));
  if (o.alignment != 0) {
    ETPACK_RETURN_IF_ERROR(CheckAlignment(o.alignment, "share alignment", kMaxInlineAlignment));
  }
  return Status::OK();
}

}  // namespace

ArtifactFiles SharePlan::files() const {
  ArtifactFiles out;
  for (const PtdFilePlan& d : data) out.emplace_back(d.path, &d.plan.artifact);
  for (const auto& [path, plan] : programs) out.emplace_back(path, &plan.artifact);
  return out;
}

Result<SharePlan> PlanShare(const std::vector<std::string>& paths, const ShareOptions& options) {
  ETPACK_RETURN_IF_ERROR(CheckOptions(options));
  // Inputs, and the names of their outputs (one name, one file).
  std::vector<Input> inputs;
  size_t programs = 0;
  std::map<std::string, std::string> output_of;  // output base name -> the input it is for
  for (const std::string& path : paths) {
    ETPACK_ASSIGN_OR_RETURN(Input in, OpenInput(path, options.env));
    if (in.pte) ++programs;
    const std::string base = BaseName(path);
    const auto [it, fresh] = output_of.emplace(base, path);
    if (!fresh) {
      return InvalidArgument("share: " + it->second + " and " + path +
                             " would both be written as " + InDir(options.out_dir, base) +
                             " (outputs keep their inputs' base names)");
    }
    inputs.push_back(std::move(in));
  }
  if (programs < 2) {
    return InvalidArgument("share: give two or more .pte files (got " + std::to_string(programs) +
                           ")");
  }
  if (output_of.count(options.data_name)) {
    return InvalidArgument("share: the shared data file " +
                           InDir(options.out_dir, options.data_name) +
                           " would replace the output of " + output_of[options.data_name] +
                           "; choose another name (--data)");
  }

  // What the inputs hold alike: the one verdict of what moves.
  std::vector<const ArtifactFile*> files;
  std::vector<SizeReport> reports;
  for (const Input& in : inputs) {
    files.push_back(in.file.get());
    reports.push_back(in.sizes);
  }
  SharedOptions shared_options;
  shared_options.min_bytes = options.min_bytes;
  ETPACK_ASSIGN_OR_RETURN(SharedReport analysis, SharedAcrossFiles(files, reports, shared_options));
  for (const KeyConflict& k : analysis.conflicts) {
    if (k.entry_files.size() < 2) continue;
    return InvalidArgument("share: key " + Quote(k.key) + " holds different data in " +
                           paths[k.entry_files[0]] + " and " + paths[k.entry_files[1]] +
                           "; a program loading both could not tell them apart. Nothing written");
  }
  // (input, row offset) -> content.
  std::map<std::pair<uint32_t, uint64_t>, size_t> content_at;
  for (size_t c = 0; c < analysis.contents.size(); ++c) {
    for (const SharedItem& i : analysis.contents[c].items) content_at[{i.file, i.offset}] = c;
  }
  auto content_of = [&](uint32_t f, uint64_t offset) -> int64_t {
    auto it = content_at.find({f, offset});
    return it == content_at.end() ? kUnshared : static_cast<int64_t>(it->second);
  };
  auto moving = [&](int64_t c) { return c >= 0 && analysis.contents[c].shareable; };

  // Every data item of every input: what its name means, and what moves.
  std::map<std::string, std::set<Meaning>> meanings;
  std::vector<Moves> moves(inputs.size());
  std::set<std::string> entry_keys;  // keys of the inputs' .ptd entries
  for (const Input& in : inputs) {
    if (!in.ptd) continue;
    for (const PtdFile::Entry& e : in.ptd->entries()) entry_keys.insert(e.key);
  }
  for (uint32_t f = 0; f < inputs.size(); ++f) {
    Moves& m = moves[f];
    if (const PtdFile* ptd = inputs[f].ptd) {
      const PtdSegmentMap& l = ptd->layout();
      for (size_t i = 0; i < ptd->entries().size(); ++i) {
        const PtdFile::Entry& e = ptd->entries()[i];
        if (IsIntegrityKey(e.key)) continue;
        const uint64_t offset = l.segment_base_offset + l.segments[e.segment_index].offset;
        const int64_t c = content_of(f, offset);
        meanings[e.key].insert({c, LayoutText(e.layout)});
        if (!moving(c)) continue;
        m.entries.insert(i);
        m.rows[offset] = analysis.contents[c].size;
      }
      continue;
    }
    const PteFile& pte = *inputs[f].pte;
    const std::vector<ByteRange>& buffers = pte.constant_buffers();
    for (const PteTensor& t : pte.Tensors()) {
      if (t.data == TensorData::kConstant && t.buffer_index > 0 &&
          t.buffer_index < buffers.size()) {
        const uint64_t offset = buffers[t.buffer_index].offset;
        const int64_t c = content_of(f, offset);
        if (!t.key.empty()) meanings[t.key].insert({c, DescribeLayout(t.layout)});
        if (!moving(c)) continue;
        m.tensors.push_back({t.method, t.value, static_cast<size_t>(c), t.layout, t.key});
        m.rows[offset] = analysis.contents[c].size;
      } else if (!t.key.empty() &&
                 !(t.data == TensorData::kExternal && entry_keys.count(t.key) != 0)) {
        meanings[t.key].insert({kForeign, ""});
      }
    }
    const PteSegmentMap& l = pte.layout();
    for (const PteNamedData& n : pte.named_data()) {
      if (IsIntegrityKey(n.key)) continue;
      const uint64_t offset = l.segment_base_offset + l.segments[n.segment_index].offset;
      const int64_t c = content_of(f, offset);
      meanings[n.key].insert({c, ""});
      if (!moving(c)) continue;
      m.named_data.insert(n.key);
      m.rows[offset] = analysis.contents[c].size;
    }
  }

  // The bytes of each content moving: one source, so that the shared file
  // stores it once without comparing.
  std::map<size_t, SourcePtr> source_of;
  auto source = [&](size_t c) -> const SourcePtr& {
    SourcePtr& s = source_of[c];
    if (!s) {
      const SharedContent& content = analysis.contents[c];
      const SharedItem& first = content.items.front();
      s = inputs[first.file].file->RangeSource(first.offset, content.size);
    }
    return s;
  };

  // A moved tensor keeps its name when the name means its content with its
  // layout in every input and nothing else; the others of a (content,
  // layout) share a key made from the content.
  auto slot_of = [](const MovedTensor& t) {
    return Meaning{static_cast<int64_t>(t.content), DescribeLayout(t.layout)};
  };
  auto keeps_name = [&](const MovedTensor& t) {
    return !t.name.empty() && meanings[t.name] == std::set<Meaning>{slot_of(t)};
  };
  std::map<Meaning, TensorLayout> unnamed;  // the slots needing a content key
  for (uint32_t f = 0; f < inputs.size(); ++f) {
    for (const MovedTensor& t : moves[f].tensors) {
      if (!keeps_name(t)) unnamed.emplace(slot_of(t), t.layout);
    }
  }
  std::map<std::string, std::vector<Meaning>> by_content_key;  // before suffixes
  for (const auto& [slot, layout] : unnamed) {
    ETPACK_ASSIGN_OR_RETURN(std::string key,
                            ContentKey(*source(static_cast<size_t>(slot.first)), layout));
    by_content_key[key].push_back(slot);
  }
  std::map<Meaning, std::string> content_key;
  for (auto& [key, ids] : by_content_key) {
    // Equal samples of different contents: by their bytes.
    for (size_t i = 1; i < ids.size(); ++i) {
      for (size_t j = i; j > 0; --j) {
        ETPACK_ASSIGN_OR_RETURN(const bool before,
                                BytesBefore(*source(ids[j].first), *source(ids[j - 1].first)));
        if (!before) break;
        std::swap(ids[j], ids[j - 1]);
      }
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      const std::string made = i == 0 ? key : key + "-" + std::to_string(i + 1);
      auto named = meanings.find(made);
      if (named != meanings.end() && named->second != std::set<Meaning>{ids[i]}) {
        return InvalidArgument("share: the key " + Quote(made) +
                               " made for a shared constant is already a name of other data in "
                               "the inputs; rename that data");
      }
      content_key[ids[i]] = made;
    }
  }

  // The shared file's keys, by key (its canonical order).
  std::map<std::string, SharedKey> shared;
  auto add = [&](const std::string& key, size_t c, std::optional<TensorLayout> layout,
                 uint32_t f) -> Status {
    auto [it, fresh] = shared.emplace(key, SharedKey{c, layout, {}});
    if (!fresh && (it->second.content != c || it->second.layout != layout)) {
      return InvalidArgument("share: key " + Quote(key) +
                             " would name two different items of the shared file (" +
                             paths[*it->second.files.begin()] + ", " + paths[f] + ")");
    }
    it->second.files.insert(f);
    return Status::OK();
  };
  std::vector<TensorKeys> tensor_keys(inputs.size());
  for (uint32_t f = 0; f < inputs.size(); ++f) {
    for (const MovedTensor& t : moves[f].tensors) {
      const std::string& key = keeps_name(t) ? t.name : content_key[slot_of(t)];
      tensor_keys[f][{t.plan, t.value}] = key;
      ETPACK_RETURN_IF_ERROR(add(key, t.content, t.layout, f));
    }
    if (const PtdFile* ptd = inputs[f].ptd) {
      for (const size_t i : moves[f].entries) {
        const PtdFile::Entry& e = ptd->entries()[i];
        const PtdSegmentMap& l = ptd->layout();
        const size_t c = static_cast<size_t>(
            content_of(f, l.segment_base_offset + l.segments[e.segment_index].offset));
        ETPACK_RETURN_IF_ERROR(add(e.key, c, e.layout, f));
      }
    }
    if (const PteFile* pte = inputs[f].pte) {
      const PteSegmentMap& l = pte->layout();
      for (const PteNamedData& n : pte->named_data()) {
        if (moves[f].named_data.count(n.key) == 0) continue;
        const size_t c = static_cast<size_t>(
            content_of(f, l.segment_base_offset + l.segments[n.segment_index].offset));
        ETPACK_RETURN_IF_ERROR(add(n.key, c, std::nullopt, f));
      }
    }
  }

  SharePlan plan;
  ShareReport& report = plan.report;
  for (const Input& in : inputs) plan.inputs.push_back(in.file);
  plan.out_dir = options.out_dir;
  // Every output lists every input among the files it reads, so that none
  // replaces one (the writer's CheckNotInputs).
  std::vector<SourcePtr> read;
  for (const Input& in : inputs) read.push_back(in.file->RangeSource(0, in.file->size()));
  const uint64_t entry_alignment = std::max<uint64_t>(1, options.alignment);
  PtdOptions ptd_options;
  ptd_options.segment_alignment = std::max<uint64_t>(128, options.alignment);
  ptd_options.integrity_table = options.integrity_table;

  // The shared file.
  const std::string shared_path = InDir(options.out_dir, options.data_name);
  if (!shared.empty()) {
    PtdInput data;
    std::map<size_t, uint32_t> buffer_of;
    for (const auto& [key, k] : shared) {
      auto [it, fresh] = buffer_of.emplace(k.content, static_cast<uint32_t>(data.buffers.size()));
      if (fresh) data.buffers.push_back(source(k.content));
      data.entries.push_back({key, it->second, entry_alignment, k.layout});
      ShareEntry e;
      e.key = key;
      e.size = analysis.contents[k.content].size;
      e.tensor_layout = k.layout;
      e.files.assign(k.files.begin(), k.files.end());
      report.entries.push_back(std::move(e));
    }
    data.read = read;
    PtdOptions o = ptd_options;
    o.max_shard_bytes = options.max_shard_bytes;
    Result<std::vector<PtdFilePlan>> planned = PlanPtdFiles(shared_path, data, o);
    if (!planned.ok()) return planned.status().WithContext(shared_path);
    for (PtdFilePlan& p : *planned) {
      const auto clash = output_of.find(BaseName(p.path));
      if (clash != output_of.end()) {
        return InvalidArgument("share: the shared data file " + p.path +
                               " would replace the output of " + clash->second +
                               "; choose another name (--data)");
      }
      report.shared_files.push_back(p.path);
      report.shared_bytes += p.plan.artifact.file_size;
      plan.data.push_back(std::move(p));
    }
  }

  // An input nothing moves out of is copied as it is, unless the options
  // ask for another layout.
  const bool as_it_is = options.alignment == 0 && !options.integrity_table;

  // The remaining entries of each .ptd input.
  std::map<std::string, std::string> remaining_file_of_key;
  report.files.resize(inputs.size());
  for (uint32_t f = 0; f < inputs.size(); ++f) {
    ShareFileReport& r = report.files[f];
    r.input = paths[f];
    r.kind = inputs[f].pte ? ArtifactKind::kPte : ArtifactKind::kPtd;
    r.bytes_before = inputs[f].file->size();
    for (const auto& [offset, size] : moves[f].rows) r.bytes_moved += size;
    r.items_moved = moves[f].tensors.size() + moves[f].named_data.size() + moves[f].entries.size();
    const PtdFile* ptd = inputs[f].ptd;
    if (!ptd) continue;
    PtdInput rest;
    std::map<uint32_t, uint32_t> buffer_of;  // segment -> buffer
    for (size_t i = 0; i < ptd->entries().size(); ++i) {
      const PtdFile::Entry& e = ptd->entries()[i];
      if (IsIntegrityKey(e.key) || moves[f].entries.count(i)) continue;
      auto [it, fresh] =
          buffer_of.emplace(e.segment_index, static_cast<uint32_t>(rest.buffers.size()));
      if (fresh) rest.buffers.push_back(ptd->EntrySource(i));
      rest.entries.push_back({e.key, it->second, entry_alignment, e.layout});
    }
    if (rest.entries.empty()) continue;
    const std::string out = InDir(options.out_dir, BaseName(paths[f]));
    if (moves[f].entries.empty() && as_it_is) {
      r.output = out;
      r.bytes_after = ptd->size();
      for (const PtdEntry& e : rest.entries) remaining_file_of_key[e.key] = out;
      plan.data.push_back(
          {out, PtdPlan{WholeSourcePlan(read[f]), ptd->layout()}, ptd->entries().size()});
      continue;
    }
    for (const PtdEntry& e : rest.entries) remaining_file_of_key[e.key] = out;
    rest.read = read;
    Result<PtdPlan> planned = PlanPtd(rest, ptd_options);
    if (!planned.ok()) return planned.status().WithContext(out);
    r.output = out;
    r.bytes_after = planned->artifact.file_size;
    plan.data.push_back({out, std::move(planned).value(), rest.entries.size()});
  }

  // The thin programs.
  for (uint32_t f = 0; f < inputs.size(); ++f) {
    const PteFile* pte = inputs[f].pte;
    if (!pte) continue;
    ShareFileReport& r = report.files[f];
    const std::string out = InDir(options.out_dir, BaseName(paths[f]));
    if (r.items_moved > 0) r.data = report.shared_files;
    std::set<std::string> own;
    for (const PteTensor& t : pte->Tensors()) {
      if (t.data != TensorData::kExternal) continue;
      auto it = remaining_file_of_key.find(t.key);
      if (it != remaining_file_of_key.end() && own.insert(it->second).second) {
        r.data.push_back(it->second);
      }
    }
    if (r.items_moved == 0 && as_it_is) {
      r.output = out;
      r.bytes_after = pte->size();
      plan.programs.emplace_back(out, PtePlan{WholeSourcePlan(read[f]), pte->layout()});
      continue;
    }
    ETPACK_ASSIGN_OR_RETURN(PteInput in, ExternalizeTensors(*pte, tensor_keys[f]));
    const std::set<std::string>& dropped = moves[f].named_data;
    in.named_data.erase(std::remove_if(in.named_data.begin(), in.named_data.end(),
                                       [&](const NamedData& n) { return dropped.count(n.key); }),
                        in.named_data.end());
    in.read.insert(in.read.end(), read.begin(), read.end());
    PteOptions o = pte->InferredOptions();
    if (options.alignment != 0) {
      o.segment_alignment = std::max(o.segment_alignment, options.alignment);
      o.constant_tensor_alignment = options.alignment;
    }
    o.integrity_table = options.integrity_table;
    Result<PtePlan> planned = PlanPte(std::move(in), o);
    if (!planned.ok()) return planned.status().WithContext(out);
    r.output = out;
    r.bytes_after = planned->artifact.file_size;
    plan.programs.emplace_back(out, std::move(planned).value());
  }

  for (const ShareFileReport& r : report.files) {
    report.bytes_before += r.bytes_before;
    report.bytes_after += r.bytes_after;
  }
  report.bytes_after += report.shared_bytes;
  report.analysis = std::move(analysis);
  return plan;
}

Value ShareReportJson(const ShareReport& report, const WriteStats* written) {
  auto strings = [](const std::vector<std::string>& v) {
    std::vector<Value> items;
    for (const std::string& s : v) items.push_back(Value::String(s));
    return Value::Array(std::move(items));
  };
  auto indices = [](const std::vector<uint32_t>& v) {
    std::vector<Value> items;
    for (uint32_t i : v) items.push_back(Value::UInt(i));
    return Value::Array(std::move(items));
  };
  std::vector<Value> files, entries, stayed, conflicts;
  for (const ShareFileReport& f : report.files) {
    files.push_back(Value::Object({{"input", Value::String(f.input)},
                                   {"kind", Value::String(ArtifactKindName(f.kind))},
                                   {"output", Value::String(f.output)},
                                   {"bytes_before", Value::UInt(f.bytes_before)},
                                   {"bytes_after", Value::UInt(f.bytes_after)},
                                   {"bytes_moved", Value::UInt(f.bytes_moved)},
                                   {"items_moved", Value::UInt(f.items_moved)},
                                   {"data", strings(f.data)}}));
  }
  for (const ShareEntry& e : report.entries) {
    std::vector<Value::Member> m = {{"key", Value::String(e.key)}, {"size", Value::UInt(e.size)}};
    if (e.tensor_layout) m.emplace_back("tensor_layout", LayoutJson(*e.tensor_layout));
    m.emplace_back("files", indices(e.files));
    entries.push_back(Value::Object(std::move(m)));
  }
  for (const SharedContent& c : report.analysis.contents) {
    if (c.shareable) continue;
    std::vector<Value> items;
    for (const SharedItem& i : c.items) {
      items.push_back(Value::Object({{"file", Value::UInt(i.file)},
                                     {"kind", Value::String(SizeKindName(i.kind))},
                                     {"name", Value::String(i.name)}}));
    }
    stayed.push_back(Value::Object({{"size", Value::UInt(c.size)},
                                    {"copies", Value::UInt(c.copies)},
                                    {"files", indices(c.files)},
                                    {"reason", Value::String(c.reason)},
                                    {"items", Value::Array(std::move(items))}}));
  }
  for (const KeyConflict& k : report.analysis.conflicts) {
    conflicts.push_back(Value::Object({{"key", Value::String(k.key)},
                                       {"files", indices(k.files)},
                                       {"entry_files", indices(k.entry_files)}}));
  }
  Value out = Value::Object({{"files", Value::Array(std::move(files))},
                             {"shared_files", strings(report.shared_files)},
                             {"shared_bytes", Value::UInt(report.shared_bytes)},
                             {"entries", Value::Array(std::move(entries))},
                             {"bytes_before", Value::UInt(report.bytes_before)},
                             {"bytes_after", Value::UInt(report.bytes_after)},
                             {"bytes_saved", Value::Int(static_cast<int64_t>(report.bytes_before) -
                                                        static_cast<int64_t>(report.bytes_after))},
                             {"stayed", Value::Array(std::move(stayed))},
                             {"conflicts", Value::Array(std::move(conflicts))},
                             {"dry_run", Value::Bool(written == nullptr)}});
  if (written != nullptr) {
    out.Set("bytes_written", Value::UInt(written->bytes));
    out.Set("bytes_shared", Value::UInt(written->bytes_shared));
    out.Set("bytes_copied", Value::UInt(written->bytes_copied()));
  }
  return out;
}

}  // namespace etpack
