#include "etpack/writer.h"

#include <fcntl.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/os_file.h"
#include "integrity/table.h"
#include "io/fd_output.h"
#include "plan/assembler.h"
#include "writer/input_files.h"
#include "writer/stream_hash.h"

namespace etpack {
namespace {

// Large placements are written in slices of this size so progress is
// reported at least this often.
constexpr uint64_t kProgressStep = uint64_t{64} << 20;

// Adds up the bytes of several plans for one progress line, and asks
// whether to go on (WriteOptions::cancel) after every step.
class Progress {
 public:
  Progress(const ProgressFn& fn, const CancelFn& cancel, uint64_t total)
      : fn_(fn), cancel_(cancel), total_(total) {}

  // Counts `n` more bytes of `output` written; fails once the caller has
  // cancelled (the output is then discarded by whoever holds it).
  Status Advance(uint64_t n, const WritableOutput& output) {
    done_ += n;
    if (fn_ && done_ - reported_ >= kProgressStep) {
      fn_(done_, total_);
      reported_ = done_;
    }
    return Check(output.destination());
  }
  // The last report, before publishing; also the last chance to cancel.
  Status Report(const std::string& what) const {
    if (fn_) fn_(done_, total_);
    return Check(what);
  }

 private:
  Status Check(const std::string& what) const {
    if (!cancel_ || !cancel_()) return Status::OK();
    return Status(Code::kIoError, what + ": write cancelled by the caller after " +
                                      std::to_string(done_) + " of " + std::to_string(total_) +
                                      " bytes");
  }

  const ProgressFn& fn_;
  const CancelFn& cancel_;
  const uint64_t total_;
  uint64_t done_ = 0;
  uint64_t reported_ = 0;
};

// The ranges of a plan with a base that neither the head nor a placement
// covers: the base's own bytes, in file order.
std::vector<ByteRange> BaseGaps(const ArtifactPlan& plan) {
  std::vector<ByteRange> gaps;
  if (plan.base == nullptr) return gaps;
  uint64_t pos = plan.head.size();
  for (const Placement& p : plan.placements) {
    if (p.offset > pos) gaps.push_back({pos, p.offset - pos});
    pos = p.offset + p.source->size();
  }
  if (plan.file_size > pos) gaps.push_back({pos, plan.file_size - pos});
  return gaps;
}

uint64_t GapBytes(const ArtifactPlan& plan) {
  uint64_t n = 0;
  for (const ByteRange& g : BaseGaps(plan)) n += g.size;
  return n;
}

// What progress counts for a plan: the head, the placements, the base's
// bytes unless a clone shares them, and the tail's work. Sizes are bounded
// by file_size (validated), so this cannot overflow.
uint64_t PayloadBytes(const ArtifactPlan& plan, bool cloned) {
  uint64_t total = plan.head.size();
  for (const Placement& p : plan.placements) total += p.source->size();
  if (!cloned) total += GapBytes(plan);
  if (plan.tail != nullptr) total += plan.tail->work();
  return total;
}

// A placement's source as the output sees it while hashes are computed:
// the same bytes, handed to the hash thread slice by slice as the output
// copies them in, so that hashing a slice overlaps reading the next. It
// offers neither a contiguous span nor a file range, so the output reads
// every byte through ReadAt (an in-kernel copy would never show them to us).
class HashedSource final : public Source {
 public:
  HashedSource(const Source& base, uint64_t file_offset, HashThread& hashes)
      : base_(base), file_offset_(file_offset), hashes_(&hashes) {}

  uint64_t size() const override { return base_.size(); }
  std::string Describe() const override { return base_.Describe(); }

  Status ReadAt(uint64_t offset, void* dst, size_t n) const override {
    Status read = Copy(offset, static_cast<uint8_t*>(dst), n);
    // `dst` belongs to the output once this returns.
    Status hashed = hashes_->Drain();
    ETPACK_RETURN_IF_ERROR(read);
    ETPACK_RETURN_IF_ERROR(hashed);
    // What the output does for file sources it reads itself: keep a
    // multi-GB input from crowding the page cache (whole 2 MiB folios).
    if (const FileRange* r = base_.file_range()) {
      constexpr uint64_t kFolio = uint64_t{2} << 20;
      const uint64_t start = (r->offset + offset) / kFolio * kFolio;
      DropCachedPages(r->fd, start, r->offset + offset + n - start);
    }
    return Status::OK();
  }

 private:
  // Slices small enough to still be in cache when the hash thread reads them.
  Status Copy(uint64_t offset, uint8_t* out, size_t n) const {
    constexpr size_t kSlice = size_t{1} << 20;
    const uint8_t* bytes = base_.contiguous();
    for (size_t done = 0; done < n;) {
      const size_t k = std::min(kSlice, n - done);
      if (bytes != nullptr) {
        std::memcpy(out + done, bytes + offset + done, k);
      } else {
        ETPACK_RETURN_IF_ERROR(base_.ReadAt(offset + done, out + done, k));
      }
      hashes_->Feed(file_offset_ + offset + done, out + done, k);
      done += k;
    }
    return Status::OK();
  }

  const Source& base_;
  const uint64_t file_offset_;
  HashThread* const hashes_;
};

// The hashes one file's write computes: its integrity tables and, when
// asked, SHA-256 of its head and segments.
class PlanHashes {
 public:
  Status Init(const ArtifactPlan& plan, bool sha256) {
    for (const IntegrityTableSpec& t : plan.integrity) {
      std::vector<size_t> ids;
      for (const ByteRange& r : t.ranges) {
        ETPACK_ASSIGN_OR_RETURN(size_t id, hashes_.Add(r.offset, r.size, HashKind::kXxh3_64));
        ids.push_back(id);
      }
      tables_.push_back(std::move(ids));
    }
    if (sha256) {
      ETPACK_ASSIGN_OR_RETURN(size_t id, hashes_.Add(0, plan.head.size(), HashKind::kSha256));
      sha_.push_back(id);
      for (const ByteRange& r : plan.segments) {
        ETPACK_ASSIGN_OR_RETURN(id, hashes_.Add(r.offset, r.size, HashKind::kSha256));
        sha_.push_back(id);
      }
    }
    return Status::OK();
  }

  StreamHashes& stream() { return hashes_; }

  // Table t's bytes, once the stream has passed all its ranges.
  std::vector<uint8_t> Table(const ArtifactPlan& plan, size_t t) const {
    const IntegrityTableSpec& spec = plan.integrity[t];
    std::vector<IntegrityEntry> entries;
    entries.reserve(spec.ranges.size());
    for (size_t i = 0; i < spec.ranges.size(); ++i) {
      entries.push_back({spec.ranges[i].offset - spec.origin, spec.ranges[i].size,
                         Xxh3Value(hashes_.Digest(tables_[t][i]))});
    }
    return EncodeIntegrityTable(entries);
  }

  ArtifactSha256 Sha256() const {
    ArtifactSha256 out;
    for (size_t i = 0; i < sha_.size(); ++i) {
      (i == 0 ? out.head : out.segments.emplace_back()) = hashes_.Digest(sha_[i]);
    }
    return out;
  }

 private:
  StreamHashes hashes_;
  std::vector<std::vector<size_t>> tables_;  // range ids per table
  std::vector<size_t> sha_;                  // head, then segments
};

// Writes `source` at `offset`, a large one in slices so progress moves,
// through `hashes` when given.
Status WriteSource(WritableOutput& output, uint64_t offset, const SourcePtr& source,
                   HashThread* hashes, Progress& progress) {
  auto write = [&](uint64_t at, const Source& s) {
    return hashes != nullptr ? output.Write(at, HashedSource(s, at, *hashes)) : output.Write(at, s);
  };
  const uint64_t size = source->size();
  if (size <= kProgressStep) {
    ETPACK_RETURN_IF_ERROR(write(offset, *source));
    return progress.Advance(size, output);
  }
  for (uint64_t pos = 0; pos < size; pos += kProgressStep) {
    const uint64_t n = std::min(kProgressStep, size - pos);
    ETPACK_RETURN_IF_ERROR(write(offset + pos, *SliceSource(source, pos, n)));
    ETPACK_RETURN_IF_ERROR(progress.Advance(n, output));
  }
  return Status::OK();
}

// One file of a write: its plan, its output, and whether the output was
// made a clone of the plan's base. Only Prepare() reaches the output's
// publishing part (ReplaceOnly); writing sees the WritableOutput.
struct FileWrite {
  const ArtifactPlan* plan;
  OutputFile* output;
  bool cloned = false;
};

// Claims the file: a clone of the base where the plan has one and nothing
// is hashed (a hash must see every byte), else Reserve(), at the tail's
// upper bound for a plan with a tail. For a plan that replaces its base,
// the output first promises to replace nothing else.
Status Prepare(FileWrite& f, bool hashing) {
  const ArtifactPlan& plan = *f.plan;
  if (plan.replaces_base) {
    const FileRange* r = plan.base->file_range();
    if (r == nullptr) {
      return InvalidArgument(f.output->destination() + ": the plan replaces its base " +
                             plan.base->Describe() + ", which is not a file");
    }
    ETPACK_RETURN_IF_ERROR(f.output->ReplaceOnly(r->fd));
  }
  if (plan.base != nullptr && !hashing && plan.integrity.empty()) {
    ETPACK_ASSIGN_OR_RETURN(f.cloned, f.output->ReserveClone(*plan.base));
    if (f.cloned) return Status::OK();
  }
  Status reserved = f.output->Reserve(plan.file_size);
  if (!reserved.ok() && plan.tail != nullptr) {
    // Say why a file of a few KiB may ask for as much space as its input.
    return reserved.WithContext(plan.tail->Describe() +
                                ": the file's size is known only once it is written, so the "
                                "most it can take (" +
                                std::to_string(plan.file_size) +
                                " bytes) is reserved and the file cut to size at the end");
  }
  return reserved;
}

// Writes the tail's pieces from `at` on and cuts the file where they end
// (an output that cannot be cut takes a tail that fills the file).
Status WriteTail(const ArtifactPlan& plan, uint64_t at, WritableOutput& output,
                 Progress& progress) {
  ByteStream& tail = *plan.tail;
  const uint64_t end = at + tail.max_size();
  for (;;) {
    ETPACK_ASSIGN_OR_RETURN(ByteStream::Piece piece, tail.Next());
    if (piece.bytes == nullptr) break;
    const uint64_t n = piece.bytes->size();
    if (n > end - at) {
      return InvalidArgument(output.destination() + ": " + tail.Describe() +
                             " produced more than the " + std::to_string(tail.max_size()) +
                             " bytes it promised");
    }
    ETPACK_RETURN_IF_ERROR(output.Write(at, *piece.bytes));
    at += n;
    ETPACK_RETURN_IF_ERROR(progress.Advance(piece.work, output));
  }
  return at == plan.file_size ? Status::OK() : output.Truncate(at);
}

// Writes a prepared file (Prepare), computing the plan's integrity tables
// and, when `sha256` is given, its digests.
Status WritePrepared(const FileWrite& f, Progress& progress, ArtifactSha256* sha256 = nullptr) {
  const ArtifactPlan& plan = *f.plan;
  WritableOutput& output = *f.output;
  if (!plan.head.empty()) {
    ETPACK_RETURN_IF_ERROR(output.Write(0, plan.head.data(), plan.head.size()));
    ETPACK_RETURN_IF_ERROR(progress.Advance(plan.head.size(), output));
  }
  // The base's bytes before `until` that precede it and are not written yet.
  const std::vector<ByteRange> gaps = f.cloned ? std::vector<ByteRange>() : BaseGaps(plan);
  size_t gap = 0;
  auto fill = [&](uint64_t until, HashThread* hashes) -> Status {
    for (; gap < gaps.size() && gaps[gap].offset < until; ++gap) {
      ETPACK_RETURN_IF_ERROR(WriteSource(output, gaps[gap].offset,
                                         SliceSource(plan.base, gaps[gap].offset, gaps[gap].size),
                                         hashes, progress));
    }
    return Status::OK();
  };
  // Where the bytes the hashes may cover end: a tail's bytes are not hashed.
  uint64_t end = plan.head.size();
  for (const Placement& p : plan.placements) end = p.offset + p.source->size();
  if (plan.tail == nullptr) end = plan.file_size;
  if (plan.integrity.empty() && sha256 == nullptr) {
    for (const Placement& p : plan.placements) {
      ETPACK_RETURN_IF_ERROR(fill(p.offset, nullptr));
      ETPACK_RETURN_IF_ERROR(WriteSource(output, p.offset, p.source, nullptr, progress));
    }
    ETPACK_RETURN_IF_ERROR(fill(plan.file_size, nullptr));
    return plan.tail != nullptr ? WriteTail(plan, end, output, progress) : Status::OK();
  }
  PlanHashes h;
  ETPACK_RETURN_IF_ERROR(h.Init(plan, sha256 != nullptr));
  HashThread hashes(h.stream());
  hashes.Feed(0, plan.head.data(), plan.head.size());
  size_t table = 0;
  for (const Placement& p : plan.placements) {
    ETPACK_RETURN_IF_ERROR(fill(p.offset, &hashes));
    if (table < plan.integrity.size() && p.offset == plan.integrity[table].table_offset) {
      // Everything the table covers lies before it (ValidateArtifactPlan).
      hashes.Feed(p.offset, nullptr, 0);
      ETPACK_RETURN_IF_ERROR(hashes.Drain());
      const std::vector<uint8_t> bytes = h.Table(plan, table++);
      ETPACK_RETURN_IF_ERROR(output.Write(p.offset, bytes.data(), bytes.size()));
      hashes.Feed(p.offset, bytes.data(), bytes.size());
      ETPACK_RETURN_IF_ERROR(hashes.Drain());
      ETPACK_RETURN_IF_ERROR(progress.Advance(bytes.size(), output));
      continue;
    }
    ETPACK_RETURN_IF_ERROR(WriteSource(output, p.offset, p.source, &hashes, progress));
  }
  ETPACK_RETURN_IF_ERROR(fill(plan.file_size, &hashes));
  hashes.Feed(end, nullptr, 0);
  ETPACK_RETURN_IF_ERROR(hashes.Drain());
  if (sha256 != nullptr) *sha256 = h.Sha256();
  return plan.tail != nullptr ? WriteTail(plan, end, output, progress) : Status::OK();
}

// Every input file of the unit is as it was when opened (InputFile::
// CheckUnchanged): a file written to while it was read may have given the
// plan one set of bytes (which items are alike, what moves, what is
// deduplicated) and the copy another, so nothing may be published.
Status CheckInputsUnchanged(const std::vector<FileWrite>& files) {
  std::set<const InputFile*> seen;
  for (const FileWrite& f : files) {
    for (const Source* s : SourcesRead(*f.plan)) {
      const FileRange* r = s->file_range();
      if (r == nullptr || r->file == nullptr || !seen.insert(r->file).second) continue;
      Status unchanged = r->file->CheckUnchanged();
      if (!unchanged.ok()) {
        return Status(unchanged.code(), r->path + ": " + unchanged.message() + "; nothing of " +
                                            f.output->destination() +
                                            " is published (run again once it no longer changes)");
      }
    }
  }
  return Status::OK();
}

// Prepares and writes every file of a unit (not publishing it), then fills
// in what `options` asks for. The plans are valid (ValidateArtifactPlan).
Status WriteUnit(std::vector<FileWrite>& files, const std::string& unit,
                 const WriteOptions& options) {
  const bool hashing = options.sha256 != nullptr;
  uint64_t total = 0;
  for (FileWrite& f : files) {
    ETPACK_RETURN_IF_ERROR(Prepare(f, hashing));
    total += PayloadBytes(*f.plan, f.cloned);
  }
  Progress p(options.progress, options.cancel, total);
  std::vector<ArtifactSha256> digests(hashing ? files.size() : 0);
  for (size_t i = 0; i < files.size(); ++i) {
    ETPACK_RETURN_IF_ERROR(WritePrepared(files[i], p, hashing ? &digests[i] : nullptr));
  }
  ETPACK_RETURN_IF_ERROR(CheckInputsUnchanged(files));
  ETPACK_RETURN_IF_ERROR(p.Report(unit));
  if (hashing) *options.sha256 = std::move(digests);
  if (options.stats != nullptr) {
    WriteStats& stats = *options.stats;
    stats = WriteStats{};
    for (const FileWrite& f : files) {
      const uint64_t cloned = f.cloned ? GapBytes(*f.plan) : 0;
      stats.bytes += f.output->bytes_written() + cloned;
      stats.bytes_shared += f.output->bytes_shared() + cloned;
      stats.bytes_cloned += cloned;
    }
  }
  return Status::OK();
}

}  // namespace

ArtifactPlan WholeSourcePlan(SourcePtr source) {
  ArtifactPlan plan;
  plan.file_size = source->size();
  if (plan.file_size > 0) {
    plan.placements.push_back({0, 1, std::move(source)});
  } else {
    plan.inputs.push_back(std::move(source));  // no placement reads it, yet it is an input
  }
  return plan;
}

Status WriteArtifact(const ArtifactPlan& plan, OutputFile& output, const WriteOptions& options) {
  ETPACK_RETURN_IF_ERROR(ValidateArtifactPlan(plan));
  std::vector<FileWrite> files = {{&plan, &output}};
  return WriteUnit(files, output.destination(), options);
}

Status WriteArtifactFiles(OutputFs& fs, const ArtifactFiles& files, const WriteOptions& options) {
  // Everything that can be checked is checked before the first output
  // exists, so a bad plan or destination touches nothing.
  for (size_t i = 0; i < files.size(); ++i) {
    const auto& [path, plan] = files[i];
    if (plan == nullptr) return InvalidArgument(path + ": no plan to write");
    ETPACK_RETURN_IF_ERROR(ValidateArtifactPlan(*plan).WithContext(path));
  }
  std::vector<std::unique_ptr<OutputFile>> outputs;
  for (const auto& file : files) {
    ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<OutputFile> out, fs.Create(file.first));
    outputs.push_back(std::move(out));
  }
  ETPACK_RETURN_IF_ERROR(CheckOutputsDistinct(outputs));
  for (size_t i = 0; i < files.size(); ++i) {
    const ArtifactPlan& plan = *files[i].second;
    std::vector<const Source*> read = SourcesRead(plan);
    for (size_t j = 0; j < outputs.size(); ++j) {
      // The one input an output may replace: the base of its own plan, when
      // the plan says so (Prepare holds the output to that file).
      if (j == i && plan.replaces_base) {
        std::vector<const Source*> others;
        for (const Source* s : read) {
          if (!SameFile(*s, *plan.base)) others.push_back(s);
        }
        ETPACK_RETURN_IF_ERROR(CheckNotInputs(*outputs[j], others));
        continue;
      }
      ETPACK_RETURN_IF_ERROR(CheckNotInputs(*outputs[j], read));
    }
  }
  std::vector<FileWrite> unit;
  for (size_t i = 0; i < files.size(); ++i) unit.push_back({files[i].second, outputs[i].get()});
  std::string names;
  for (const auto& file : files) names += (names.empty() ? "" : ", ") + file.first;
  ETPACK_RETURN_IF_ERROR(WriteUnit(unit, names, options));
  return Publish(std::move(outputs), options.cancel);
}

Status WriteArtifactFiles(const ArtifactFiles& files, const WriteOptions& options, const Env& env) {
  if (env.output != nullptr) return WriteArtifactFiles(*env.output, files, options);
  return WriteArtifactFiles(*NewPosixOutputFs(options.output), files, options);
}

Status WriteArtifactFile(const std::string& path, const ArtifactPlan& plan,
                         const WriteOptions& options, const Env& env) {
  return WriteArtifactFiles({{path, &plan}}, options, env);
}

Status WriteArtifactAt(const ArtifactPlan& plan, int fd, uint64_t offset, const std::string& name,
                       const WriteOptions& options) {
  ETPACK_RETURN_IF_ERROR(ValidateArtifactPlan(plan).WithContext(name));
  // Offsets reach pwrite and ftruncate as off_t, which is signed.
  constexpr uint64_t kMaxOffset = static_cast<uint64_t>(INT64_MAX);
  if (plan.file_size > kMaxOffset || offset > kMaxOffset - plan.file_size) {
    return OutOfRange(name + ": " + std::to_string(plan.file_size) + " bytes at offset " +
                      std::to_string(offset) + " do not fit in a file (off_t)");
  }
  ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<OutputFile> output, NewFdRangeOutput(fd, offset, name));
  // The open file may be one the plan reads (through any name or
  // descriptor): writing would destroy the bytes still to be read.
  ETPACK_RETURN_IF_ERROR(CheckNotInputs(*output, SourcesRead(plan)));
  return WriteArtifact(plan, *output, options);
}

Status CheckNotReadBy(const ArtifactPlan& plan, int fd, const std::string& name) {
  return CheckFdNotInputs(fd, name, SourcesRead(plan));
}

Result<std::vector<uint8_t>> WriteArtifactToMemory(const ArtifactPlan& plan) {
  MemoryOutputFs fs;
  ETPACK_RETURN_IF_ERROR(WriteArtifactFiles(fs, {{"memory", &plan}}));
  return fs.files().begin()->second;
}

}  // namespace etpack
