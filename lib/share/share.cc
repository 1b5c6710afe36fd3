// Planning `etpack share` (etpack/share.h, PlanShare): the family's data
// items, which of them move (SharedAcrossFiles says), their keys, and the
// plans of every output. Writing is share_write.cc's, the whole job
// share_job.cc's, the report's rendering share_report_json.cc's.

#include "etpack/share.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "core/quote.h"
#include "etpack/external_data.h"
#include "etpack/inspect.h"
#include "etpack/list_text.h"
#include "etpack/path_text.h"
#include "etpack/ptd_file.h"
#include "etpack/pte_file.h"
#include "integrity/hash.h"
#include "integrity/table.h"
#include "plan/content_dedup.h"
#include "plan/segments.h"
#include "pte/edited_input.h"
#include "pte/program_steps.h"

namespace etpack {
namespace {

// What a name means in one input: a content (an index into
// SharedReport::contents, or kUnshared for bytes no other input holds) read
// as a layout ("" for a blob). kForeign: a name that is no data item of the
// family (a memory-planned tensor's, an EXTERNAL tensor's key held by no
// input), which no moved constant may take.
constexpr int64_t kUnshared = -1;
constexpr int64_t kForeign = -2;
using Meaning = std::pair<int64_t, std::string>;

// The content key of `bytes` read as `layout` (etpack/share.h), before any
// "-N" suffix: reads at most 12 KiB.
Result<std::string> ContentKey(const Source& bytes, const TensorLayout& layout) {
  ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<RunningHash> hash, NewRunningHash(HashKind::kXxh3_128));
  const uint64_t size = bytes.size();
  const std::string text = std::to_string(layout.scalar_type) + ":" + ListText(layout.sizes, ",") +
                           ":" + ListText(layout.dim_order, ",") + ":" + std::to_string(size) +
                           "\n";
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

// One input, open, with its report.
struct Input {
  std::string path;
  std::shared_ptr<const ArtifactFile> file;
  const PteFile* pte = nullptr;  // exactly one of pte, ptd
  const PtdFile* ptd = nullptr;
  SizeReport sizes;
  SourcePtr whole;  // all of it: what its output's plan lists as read
  // A .pte: the .ptd inputs its EXTERNAL tensors (and delegates) read from;
  // a .ptd: the programs that read it. Ascending input indices.
  std::vector<uint32_t> pairs;
};

// A constant tensor that moves.
struct MovedTensor {
  uint32_t plan = 0, value = 0;
  size_t content = 0;
  TensorLayout layout;
  std::string name;  // its fully_qualified_name, "" when none
};

// What leaves one input (for the shared file), and what a .pte takes in.
struct Moves {
  std::vector<MovedTensor> tensors;
  std::set<std::string> named_data;   // keys
  std::set<size_t> entries;           // .ptd entry indices going to the shared file
  std::map<uint64_t, uint64_t> rows;  // offset -> size of the rows moved out
  // A .pte: the keys of its .ptd inputs' entries that come inside it, and
  // their bytes.
  std::set<std::string> taken;
  uint64_t bytes_taken = 0;
  std::set<uint32_t> taken_from;
};

// The shared file's entry of a key: a content the analysis found in two or
// more inputs, or (content kUnshared) one entry of a .ptd several programs
// read.
struct SharedKey {
  int64_t content = kUnshared;
  SourcePtr source;
  uint64_t size = 0;
  std::optional<TensorLayout> layout;
  std::set<uint32_t> files;
};

Result<Input> OpenInput(const std::string& path, const Env& env) {
  ETPACK_ASSIGN_OR_RETURN(SizedFile sized, OpenSized(path, env));
  Input in;
  in.path = path;
  const char* suffix = nullptr;
  if (sized.report.kind == ArtifactKind::kPte) {
    in.pte = static_cast<const PteFile*>(sized.file.get());
    suffix = ".pte";
  } else if (sized.report.kind == ArtifactKind::kPtd) {
    in.ptd = static_cast<const PtdFile*>(sized.file.get());
    suffix = ".ptd";
  } else {
    return InvalidArgument(path +
                           ": share takes .pte and .ptd files, not a bundled program (.bpte)");
  }
  // The output keeps the base name, and a program finds its own .ptd by its
  // stem: a name without the kind's suffix (a descriptor's /proc/self/fd/7,
  // a pipe) would give a nameless output.
  const std::string base = PathFileName(path);
  if (base.size() <= 4 || base.compare(base.size() - 4, 4, suffix) != 0) {
    return InvalidArgument("share: " + path + " is a " + ArtifactKindName(sized.report.kind) +
                           " whose name does not end in " + suffix +
                           "; its output keeps its base name " + Quote(base) +
                           ", so give it by a file name ending in " + suffix);
  }
  in.whole = sized.file->RangeSource(0, sized.file->size());
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
    ETPACK_RETURN_IF_ERROR(CheckPowerOfTwo(o.alignment, "share alignment", kMaxInlineAlignment));
  }
  return Status::OK();
}

std::string KeyList(const std::vector<std::string>& keys) {
  std::string s;
  for (size_t i = 0; i < keys.size() && i < 5; ++i) s += (i ? ", " : "") + Quote(keys[i]);
  if (keys.size() > 5) s += ", ... (" + std::to_string(keys.size()) + " in all)";
  return s;
}

// The stages of PlanShare, in order; each reads what the ones before it
// found. Memory grows with the number of items, never with their bytes.
class Planner {
 public:
  Planner(const std::vector<std::string>& paths, const ShareOptions& options, const Env& env)
      : paths_(paths), options_(options), env_(env) {}

  Result<SharePlan> Run() {
    ETPACK_RETURN_IF_ERROR(CheckOptions(options_));
    ETPACK_RETURN_IF_ERROR(OpenFamily());
    ETPACK_RETURN_IF_ERROR(PairData());
    ETPACK_RETURN_IF_ERROR(Analyze());
    FindMoves();
    ETPACK_RETURN_IF_ERROR(AssignContentKeys());
    ETPACK_RETURN_IF_ERROR(CollectSharedKeys());
    SharePlan plan;
    for (const Input& in : inputs_) plan.inputs.push_back(in.file);
    plan.out_dir = options_.out_dir;
    ETPACK_RETURN_IF_ERROR(PlanSharedFile(&plan));
    for (uint32_t f = 0; f < inputs_.size(); ++f) {
      ETPACK_RETURN_IF_ERROR(inputs_[f].pte ? PlanProgram(f, &plan) : ReportData(f, &plan));
    }
    Finish(&plan);
    return plan;
  }

 private:
  // Opens every input; refuses fewer than two programs and two outputs of
  // one name.
  Status OpenFamily() {
    size_t programs = 0;
    for (const std::string& path : paths_) {
      ETPACK_ASSIGN_OR_RETURN(Input in, OpenInput(path, env_));
      if (in.pte) ++programs;
      const std::string base = PathFileName(path);
      const auto [it, fresh] = output_of_.emplace(base, path);
      if (!fresh) {
        return InvalidArgument("share: " + it->second + " and " + path +
                               " would both be written as " + JoinPath(options_.out_dir, base) +
                               " (outputs keep their inputs' base names)");
      }
      inputs_.push_back(std::move(in));
    }
    if (programs < 2) {
      return InvalidArgument("share: give two or more .pte files (got " + std::to_string(programs) +
                             ")");
    }
    if (output_of_.count(options_.data_name)) {
      return InvalidArgument("share: the shared data file " +
                             JoinPath(options_.out_dir, options_.data_name) +
                             " would replace the output of " + output_of_[options_.data_name] +
                             "; choose another name (--data)");
    }
    return Status::OK();
  }

  // Which .ptd inputs each program reads: the one of its own stem (A.ptd
  // for A.pte), and for each EXTERNAL key not in it the one .ptd holding
  // it. A .ptd no program is paired with (named data only, for delegates:
  // who reads it cannot be seen) goes with every program. Refuses, before
  // anything is written, a program whose EXTERNAL keys no input holds: its
  // thin program would not load.
  Status PairData() {
    std::map<std::string, uint32_t> ptd_of_stem;
    std::map<std::string, std::vector<uint32_t>> holders;  // key -> .ptd inputs
    for (uint32_t f = 0; f < inputs_.size(); ++f) {
      if (!inputs_[f].ptd) continue;
      ptd_of_stem[PathStem(paths_[f])] = f;
      for (const PtdFile::Entry& e : inputs_[f].ptd->entries()) holders[e.key].push_back(f);
    }
    for (uint32_t p = 0; p < inputs_.size(); ++p) {
      if (!inputs_[p].pte) continue;
      std::set<uint32_t> used;
      if (auto it = ptd_of_stem.find(PathStem(paths_[p])); it != ptd_of_stem.end()) {
        used.insert(it->second);
      }
      std::vector<std::string> missing;
      for (const PteTensor& t : inputs_[p].pte->Tensors()) {
        if (t.data != TensorData::kExternal) continue;
        const std::vector<uint32_t>& in = holders[t.key];
        if (std::any_of(in.begin(), in.end(), [&](uint32_t d) { return used.count(d); })) continue;
        if (in.empty()) {
          missing.push_back(t.key);
        } else if (in.size() > 1) {
          return InvalidArgument("share: " + paths_[p] + ": its EXTERNAL key " + Quote(t.key) +
                                 " is in " + paths_[in[0]] + " and " + paths_[in[1]] +
                                 "; name its own .ptd after it (" + PathStem(paths_[p]) +
                                 ".ptd) so that share knows which it loads");
        } else {
          used.insert(in[0]);
        }
      }
      if (!missing.empty()) {
        return InvalidArgument("share: " + paths_[p] + " has EXTERNAL tensors whose keys no " +
                               ".ptd input holds: " + KeyList(missing) +
                               "; give the .ptd it loads with among the inputs. Nothing written");
      }
      for (const uint32_t d : used) {
        inputs_[p].pairs.push_back(d);
        inputs_[d].pairs.push_back(p);
      }
    }
    for (uint32_t d = 0; d < inputs_.size(); ++d) {
      if (!inputs_[d].ptd || !inputs_[d].pairs.empty()) continue;
      for (uint32_t p = 0; p < inputs_.size(); ++p) {
        if (!inputs_[p].pte) continue;
        inputs_[d].pairs.push_back(p);
        inputs_[p].pairs.push_back(d);
      }
    }
    for (Input& in : inputs_) std::sort(in.pairs.begin(), in.pairs.end());
    return Status::OK();
  }

  // What the inputs hold alike: the one verdict of what moves.
  Status Analyze() {
    std::vector<const ArtifactFile*> files;
    std::vector<SizeReport> reports;
    for (const Input& in : inputs_) {
      files.push_back(in.file.get());
      reports.push_back(in.sizes);
    }
    SharedOptions shared_options;
    shared_options.min_bytes = options_.min_bytes;
    ETPACK_ASSIGN_OR_RETURN(analysis_, SharedAcrossFiles(files, reports, shared_options));
    // An item is its row: (input, offset, size). Offset alone is not enough:
    // a 0-byte item lies at its neighbour's offset and has no row.
    for (size_t c = 0; c < analysis_.contents.size(); ++c) {
      const SharedContent& content = analysis_.contents[c];
      for (const SharedItem& i : content.items) content_at_[{i.file, i.offset, content.size}] = c;
    }
    return Status::OK();
  }

  int64_t ContentOf(uint32_t f, uint64_t offset, uint64_t size) const {
    auto it = content_at_.find({f, offset, size});
    return it == content_at_.end() ? kUnshared : static_cast<int64_t>(it->second);
  }
  bool Moving(int64_t c) const { return c >= 0 && analysis_.contents[c].shareable; }

  // Every data item of every input: what its name means, and where it goes.
  void FindMoves() {
    moves_.resize(inputs_.size());
    for (const Input& in : inputs_) {
      if (!in.ptd) continue;
      for (const PtdFile::Entry& e : in.ptd->entries()) entry_keys_.insert(e.key);
    }
    for (uint32_t f = 0; f < inputs_.size(); ++f) {
      if (inputs_[f].ptd) {
        FindEntryMoves(f);
      } else {
        FindProgramMoves(f);
      }
    }
  }

  // A .ptd's entry goes to the shared file when its content moves or when
  // several programs read the .ptd; else into the one program reading it
  // (a blob, or a tensor it reads) or, read by no tensor, to the shared file.
  void FindEntryMoves(uint32_t f) {
    const PtdFile& ptd = *inputs_[f].ptd;
    Moves& m = moves_[f];
    const PtdSegmentMap& l = ptd.layout();
    const std::vector<uint32_t>& readers = inputs_[f].pairs;
    std::set<std::string> read_by_one;  // EXTERNAL keys of the one program reading it
    if (readers.size() == 1) {
      for (const PteTensor& t : inputs_[readers[0]].pte->Tensors()) {
        if (t.data == TensorData::kExternal) read_by_one.insert(t.key);
      }
    }
    for (size_t i = 0; i < ptd.entries().size(); ++i) {
      const PtdFile::Entry& e = ptd.entries()[i];
      if (IsIntegrityKey(e.key)) continue;
      const uint64_t offset = l.segment_base_offset + l.segments[e.segment_index].offset;
      const uint64_t size = l.segments[e.segment_index].size;
      const int64_t c = ContentOf(f, offset, size);
      meanings_[e.key].insert({c, DescribeLayout(e.layout)});
      const bool own = readers.size() == 1 && (!e.layout || read_by_one.count(e.key));
      if (!Moving(c) && own) {
        Moves& p = moves_[readers[0]];
        p.taken.insert(e.key);
        p.bytes_taken += size;
        p.taken_from.insert(f);
        continue;
      }
      m.entries.insert(i);
      m.rows[offset] = size;
    }
  }

  void FindProgramMoves(uint32_t f) {
    const PteFile& pte = *inputs_[f].pte;
    Moves& m = moves_[f];
    const std::vector<ByteRange>& buffers = pte.constant_buffers();
    for (const PteTensor& t : pte.Tensors()) {
      if (t.data == TensorData::kConstant && t.buffer_index > 0 &&
          t.buffer_index < buffers.size()) {
        const ByteRange& b = buffers[t.buffer_index];
        // Its row (SizesOf) is as many bytes as its readers read or, inline,
        // the buffer; a tensor of 0 bytes has none, whatever lies at its
        // offset.
        const uint64_t n = t.nbytes.value_or(0);
        int64_t c = n > 0 ? ContentOf(f, b.offset, n) : kUnshared;
        if (c == kUnshared && n > 0) c = ContentOf(f, b.offset, b.size);
        if (!t.key.empty()) meanings_[t.key].insert({c, DescribeLayout(t.layout)});
        if (!Moving(c)) continue;
        m.tensors.push_back({t.method, t.value, static_cast<size_t>(c), t.layout, t.key});
        m.rows[b.offset] = analysis_.contents[c].size;
      } else if (!t.key.empty() &&
                 !(t.data == TensorData::kExternal && entry_keys_.count(t.key) != 0)) {
        meanings_[t.key].insert({kForeign, ""});
      }
    }
    const PteSegmentMap& l = pte.layout();
    for (const PteNamedData& n : pte.named_data()) {
      // Each its own program's: they say how the file lies, or was.
      if (IsIntegrityKey(n.key) || n.key == kNamedDataOrderKey) continue;
      const uint64_t offset = l.segment_base_offset + l.segments[n.segment_index].offset;
      const int64_t c = ContentOf(f, offset, l.segments[n.segment_index].size);
      meanings_[n.key].insert({c, ""});
      if (!Moving(c)) continue;
      m.named_data.insert(n.key);
      m.rows[offset] = analysis_.contents[c].size;
    }
  }

  // The bytes of a moving content: one source, so that the shared file
  // stores it once without comparing.
  const SourcePtr& SourceOf(size_t c) {
    SourcePtr& s = source_of_[c];
    if (!s) {
      const SharedContent& content = analysis_.contents[c];
      const SharedItem& first = content.items.front();
      s = inputs_[first.file].file->RangeSource(first.offset, content.size);
    }
    return s;
  }

  static Meaning SlotOf(const MovedTensor& t) {
    return Meaning{static_cast<int64_t>(t.content), DescribeLayout(t.layout)};
  }
  // A moved tensor keeps its name when the name means its content with its
  // layout in every input and nothing else.
  bool KeepsName(const MovedTensor& t) {
    return !t.name.empty() && meanings_[t.name] == std::set<Meaning>{SlotOf(t)};
  }

  // The others of a (content, layout) share a key made from the content;
  // equal samples of different contents are told apart by their bytes.
  Status AssignContentKeys() {
    std::map<Meaning, TensorLayout> unnamed;
    for (const Moves& m : moves_) {
      for (const MovedTensor& t : m.tensors) {
        if (!KeepsName(t)) unnamed.emplace(SlotOf(t), t.layout);
      }
    }
    std::map<std::string, std::vector<Meaning>> by_content_key;  // before suffixes
    for (const auto& [slot, layout] : unnamed) {
      ETPACK_ASSIGN_OR_RETURN(std::string key,
                              ContentKey(*SourceOf(static_cast<size_t>(slot.first)), layout));
      by_content_key[key].push_back(slot);
    }
    for (auto& [key, ids] : by_content_key) {
      for (size_t i = 1; i < ids.size(); ++i) {
        for (size_t j = i; j > 0; --j) {
          ETPACK_ASSIGN_OR_RETURN(
              const bool before, BytesBefore(*SourceOf(ids[j].first), *SourceOf(ids[j - 1].first)));
          if (!before) break;
          std::swap(ids[j], ids[j - 1]);
        }
      }
      for (size_t i = 0; i < ids.size(); ++i) {
        const std::string made = i == 0 ? key : key + "-" + std::to_string(i + 1);
        auto named = meanings_.find(made);
        if (named != meanings_.end() && named->second != std::set<Meaning>{ids[i]}) {
          return InvalidArgument("share: the key " + Quote(made) +
                                 " made for a shared constant is already a name of other data "
                                 "in the inputs; rename that data");
        }
        content_key_[ids[i]] = made;
      }
    }
    return Status::OK();
  }

  Status AddShared(const std::string& key, SharedKey k, uint32_t f) {
    auto [it, fresh] = shared_.emplace(key, k);
    const SharedKey& had = it->second;
    const bool same = had.layout == k.layout &&
                      (had.content >= 0 ? had.content == k.content : had.source == k.source);
    if (!fresh && !same) {
      return InvalidArgument("share: key " + Quote(key) +
                             " would name two different items of the shared file (" +
                             paths_[*had.files.begin()] + ", " + paths_[f] +
                             "): programs loading it could not tell them apart. Nothing written");
    }
    it->second.files.insert(f);
    return Status::OK();
  }

  // The shared file's keys, by key (its canonical order).
  Status CollectSharedKeys() {
    tensor_keys_.resize(inputs_.size());
    for (uint32_t f = 0; f < inputs_.size(); ++f) {
      const Moves& m = moves_[f];
      for (const MovedTensor& t : m.tensors) {
        const std::string& key = KeepsName(t) ? t.name : content_key_[SlotOf(t)];
        tensor_keys_[f][{t.plan, t.value}] = key;
        const SharedContent& c = analysis_.contents[t.content];
        ETPACK_RETURN_IF_ERROR(AddShared(
            key, {static_cast<int64_t>(t.content), SourceOf(t.content), c.size, t.layout, {}}, f));
      }
      if (const PtdFile* ptd = inputs_[f].ptd) {
        const PtdSegmentMap& l = ptd->layout();
        for (const size_t i : m.entries) {
          const PtdFile::Entry& e = ptd->entries()[i];
          const PtdSegmentMap::Segment& s = l.segments[e.segment_index];
          const int64_t c = ContentOf(f, l.segment_base_offset + s.offset, s.size);
          SharedKey k{c, c >= 0 ? SourceOf(c) : ptd->EntrySource(i), s.size, e.layout, {}};
          ETPACK_RETURN_IF_ERROR(AddShared(e.key, std::move(k), f));
        }
      }
      if (const PteFile* pte = inputs_[f].pte) {
        const PteSegmentMap& l = pte->layout();
        for (const PteNamedData& n : pte->named_data()) {
          if (m.named_data.count(n.key) == 0) continue;
          const PteSegmentMap::Segment& s = l.segments[n.segment_index];
          const int64_t c = ContentOf(f, l.segment_base_offset + s.offset, s.size);
          ETPACK_RETURN_IF_ERROR(AddShared(n.key, {c, SourceOf(c), s.size, std::nullopt, {}}, f));
        }
      }
    }
    return Status::OK();
  }

  PtdOptions DataOptions() const {
    PtdOptions o;
    o.segment_alignment = std::max<uint64_t>(128, options_.alignment);
    o.integrity_table = options_.integrity_table;
    o.max_shard_bytes = options_.max_shard_bytes;
    return o;
  }

  // The shared file (or its shards), with its report.
  Status PlanSharedFile(SharePlan* plan) {
    if (shared_.empty()) return Status::OK();
    ShareReport& report = plan->report;
    const uint64_t entry_alignment = std::max<uint64_t>(1, options_.alignment);
    PtdInput data;
    std::map<const Source*, uint32_t> buffer_of;  // one buffer per content
    for (const auto& [key, k] : shared_) {
      auto [it, fresh] =
          buffer_of.emplace(k.source.get(), static_cast<uint32_t>(data.buffers.size()));
      if (fresh) data.buffers.push_back(k.source);
      data.entries.push_back({key, it->second, entry_alignment, k.layout});
      report.entries.push_back(
          {key, k.size, k.layout, std::vector<uint32_t>(k.files.begin(), k.files.end())});
    }
    const std::string shared_path = JoinPath(options_.out_dir, options_.data_name);
    Result<std::vector<PtdFilePlan>> planned = PlanPtdFiles(shared_path, data, DataOptions());
    if (!planned.ok()) return planned.status().WithContext(shared_path);
    for (PtdFilePlan& p : *planned) {
      const auto clash = output_of_.find(PathFileName(p.path));
      if (clash != output_of_.end()) {
        return InvalidArgument("share: the shared data file " + p.path +
                               " would replace the output of " + clash->second +
                               "; choose another name (--data)");
      }
      report.shared_files.push_back(p.path);
      report.shared_bytes += p.plan.artifact.file_size;
      plan->data.push_back(std::move(p));
    }
    return Status::OK();
  }

  ShareFileReport& FileReport(uint32_t f, SharePlan* plan) {
    std::vector<ShareFileReport>& files = plan->report.files;
    if (files.size() < inputs_.size()) files.resize(inputs_.size());
    ShareFileReport& r = files[f];
    const Moves& m = moves_[f];
    r.input = paths_[f];
    r.kind = inputs_[f].pte ? ArtifactKind::kPte : ArtifactKind::kPtd;
    r.bytes_before = inputs_[f].file->size();
    for (const auto& [offset, size] : m.rows) r.bytes_moved += size;
    r.items_moved = m.tensors.size() + m.named_data.size() + m.entries.size();
    r.items_taken = m.taken.size();
    r.bytes_taken = m.bytes_taken;
    for (const uint32_t d : m.taken_from) r.taken_from.push_back(paths_[d]);
    return r;
  }

  // A .ptd input is not written: its entries are in the shared file or in
  // the programs reading it.
  Status ReportData(uint32_t f, SharePlan* plan) {
    ShareFileReport& r = FileReport(f, plan);
    if (!moves_[f].entries.empty()) r.into = plan->report.shared_files;
    for (const uint32_t p : inputs_[f].pairs) {
      if (moves_[p].taken_from.count(f)) {
        r.into.push_back(JoinPath(options_.out_dir, PathFileName(paths_[p])));
      }
    }
    return Status::OK();
  }

  // `f`'s program with its moved items out and its own data (from its
  // .ptd inputs) in.
  Result<PteInput> ThinInput(uint32_t f) {
    const PteFile& pte = *inputs_[f].pte;
    const Moves& m = moves_[f];
    // Both steps edit one copy of the program (pte/program_steps.h).
    ETPACK_ASSIGN_OR_RETURN(EditedInput edited, EditedInputOf(pte));
    if (!m.taken.empty()) {
      std::vector<const PtdFile*> data;
      for (const uint32_t d : inputs_[f].pairs) data.push_back(inputs_[d].ptd);
      ETPACK_RETURN_IF_ERROR(Internalize(pte, data, nullptr, &m.taken, &edited));
    }
    ETPACK_RETURN_IF_ERROR(Externalize(pte.name(), 1, &tensor_keys_[f], &edited).status());
    ETPACK_ASSIGN_OR_RETURN(PteInput in, ApplyEdits(std::move(edited)));
    Status moved = MoveNamedDataOut(&in, m.named_data);
    if (!moved.ok()) return moved.WithContext(pte.name());
    in.read.push_back(inputs_[f].whole);
    return in;
  }

  Status PlanProgram(uint32_t f, SharePlan* plan) {
    const PteFile& pte = *inputs_[f].pte;
    ShareFileReport& r = FileReport(f, plan);
    const std::string out = JoinPath(options_.out_dir, PathFileName(paths_[f]));
    r.output = out;
    bool reads_shared = r.items_moved > 0;
    for (const uint32_t d : inputs_[f].pairs) reads_shared |= !moves_[d].entries.empty();
    if (reads_shared) r.data = plan->report.shared_files;
    if (r.items_moved == 0 && r.items_taken == 0 && options_.alignment == 0 &&
        !options_.integrity_table) {
      // Nothing changes: copied as it is.
      r.bytes_after = pte.size();
      plan->programs.emplace_back(out, PtePlan{WholeSourcePlan(inputs_[f].whole), pte.layout()});
      return Status::OK();
    }
    ETPACK_ASSIGN_OR_RETURN(PteInput in, ThinInput(f));
    PteOptions o = pte.InferredOptions();
    if (options_.alignment != 0) {
      o.segment_alignment = std::max(o.segment_alignment, options_.alignment);
      o.constant_tensor_alignment = options_.alignment;
    }
    o.integrity_table = options_.integrity_table;
    Result<PtePlan> planned = PlanPte(std::move(in), o);
    if (!planned.ok()) return planned.status().WithContext(out);
    r.bytes_after = planned->artifact.file_size;
    plan->programs.emplace_back(out, std::move(planned).value());
    return Status::OK();
  }

  // Totals; and every input listed as read by the first output, so that the
  // writer (which checks every output against what every plan reads)
  // refuses to replace any of them. Once, not per plan: that check costs
  // outputs x files listed.
  void Finish(SharePlan* plan) {
    ShareReport& report = plan->report;
    for (const ShareFileReport& r : report.files) {
      report.bytes_before += r.bytes_before;
      report.bytes_after += r.bytes_after;
    }
    report.bytes_after += report.shared_bytes;
    report.analysis = std::move(analysis_);
    ArtifactPlan& first = plan->data.empty() ? plan->programs.front().second.artifact
                                             : plan->data.front().plan.artifact;
    for (const Input& in : inputs_) first.inputs.push_back(in.whole);
  }

  const std::vector<std::string>& paths_;
  const ShareOptions& options_;
  const Env& env_;
  std::vector<Input> inputs_;
  std::map<std::string, std::string> output_of_;  // output base name -> the input it is for
  SharedReport analysis_;
  std::map<std::tuple<uint32_t, uint64_t, uint64_t>, size_t> content_at_;
  std::map<std::string, std::set<Meaning>> meanings_;
  std::set<std::string> entry_keys_;  // keys of the inputs' .ptd entries
  std::vector<Moves> moves_;
  std::map<size_t, SourcePtr> source_of_;
  std::map<Meaning, std::string> content_key_;
  std::map<std::string, SharedKey> shared_;
  std::vector<TensorKeys> tensor_keys_;
};

}  // namespace

ArtifactFiles SharePlan::files() const {
  ArtifactFiles out;
  for (const PtdFilePlan& d : data) out.emplace_back(d.path, &d.plan.artifact);
  for (const auto& [path, plan] : programs) out.emplace_back(path, &plan.artifact);
  return out;
}

Result<SharePlan> PlanShare(const std::vector<std::string>& paths, const ShareOptions& options,
                            const Env& env) {
  return Planner(paths, options, env).Run();
}

}  // namespace etpack
