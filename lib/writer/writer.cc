#include "etpack/writer.h"

#include <fcntl.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

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
  Status Advance(uint64_t n, const OutputFile& output) {
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

// Sizes are bounded by file_size (validated), so this cannot overflow.
uint64_t PayloadBytes(const ArtifactPlan& plan) {
  uint64_t total = plan.head.size();
  for (const Placement& p : plan.placements) total += p.source->size();
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
      (void)::posix_fadvise(r->fd, static_cast<off_t>(start),
                            static_cast<off_t>(r->offset + offset + n - start),
                            POSIX_FADV_DONTNEED);
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
Status WriteSource(OutputFile& output, uint64_t offset, const SourcePtr& source, HashThread* hashes,
                   Progress& progress) {
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

// WriteArtifact for a plan that ValidatePlan accepted, computing the
// plan's integrity tables and, when `sha256` is given, its digests.
Status WriteValidPlan(const ArtifactPlan& plan, OutputFile& output, Progress& progress,
                      ArtifactSha256* sha256 = nullptr) {
  ETPACK_RETURN_IF_ERROR(output.Reserve(plan.file_size));
  if (!plan.head.empty()) {
    ETPACK_RETURN_IF_ERROR(output.Write(0, plan.head.data(), plan.head.size()));
    ETPACK_RETURN_IF_ERROR(progress.Advance(plan.head.size(), output));
  }
  if (plan.integrity.empty() && sha256 == nullptr) {
    for (const Placement& p : plan.placements) {
      ETPACK_RETURN_IF_ERROR(WriteSource(output, p.offset, p.source, nullptr, progress));
    }
    return Status::OK();
  }
  PlanHashes h;
  ETPACK_RETURN_IF_ERROR(h.Init(plan, sha256 != nullptr));
  HashThread hashes(h.stream());
  hashes.Feed(0, plan.head.data(), plan.head.size());
  size_t table = 0;
  for (const Placement& p : plan.placements) {
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
  hashes.Feed(plan.file_size, nullptr, 0);
  ETPACK_RETURN_IF_ERROR(hashes.Drain());
  if (sha256 != nullptr) *sha256 = h.Sha256();
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
  Progress p(options.progress, options.cancel, PayloadBytes(plan));
  ArtifactSha256 digest;
  ETPACK_RETURN_IF_ERROR(
      WriteValidPlan(plan, output, p, options.sha256 != nullptr ? &digest : nullptr));
  ETPACK_RETURN_IF_ERROR(p.Report(output.destination()));
  if (options.sha256 != nullptr) {
    options.sha256->clear();
    options.sha256->push_back(std::move(digest));
  }
  if (options.stats != nullptr) {
    *options.stats = WriteStats{};
    options.stats->bytes = output.bytes_written();
    options.stats->bytes_shared = output.bytes_shared();
  }
  return Status::OK();
}

Status WriteArtifactFiles(OutputFs& fs, const ArtifactFiles& files, const WriteOptions& options) {
  std::vector<ArtifactSha256>* const sha256 = options.sha256;
  WriteStats* const stats = options.stats;
  // Everything that can be checked is checked before the first output
  // exists, so a bad plan or destination touches nothing.
  uint64_t total = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    const auto& [path, plan] = files[i];
    if (plan == nullptr) return InvalidArgument(path + ": no plan to write");
    ETPACK_RETURN_IF_ERROR(ValidateArtifactPlan(*plan).WithContext(path));
    total += PayloadBytes(*plan);
  }
  std::vector<std::unique_ptr<OutputFile>> outputs;
  for (const auto& file : files) {
    ETPACK_ASSIGN_OR_RETURN(std::unique_ptr<OutputFile> out, fs.Create(file.first));
    outputs.push_back(std::move(out));
  }
  ETPACK_RETURN_IF_ERROR(CheckOutputsDistinct(outputs));
  for (const auto& file : files) {
    const std::vector<const Source*> read = SourcesRead(*file.second);
    for (const auto& out : outputs) ETPACK_RETURN_IF_ERROR(CheckNotInputs(*out, read));
  }
  Progress p(options.progress, options.cancel, total);
  std::vector<ArtifactSha256> digests(sha256 != nullptr ? files.size() : 0);
  for (size_t i = 0; i < files.size(); ++i) {
    ETPACK_RETURN_IF_ERROR(
        WriteValidPlan(*files[i].second, *outputs[i], p, sha256 ? &digests[i] : nullptr));
  }
  std::string unit;
  for (const auto& file : files) unit += (unit.empty() ? "" : ", ") + file.first;
  ETPACK_RETURN_IF_ERROR(p.Report(unit));
  if (sha256 != nullptr) *sha256 = std::move(digests);
  if (stats != nullptr) {
    *stats = WriteStats{};
    for (const auto& out : outputs) {
      stats->bytes += out->bytes_written();
      stats->bytes_shared += out->bytes_shared();
    }
  }
  return Publish(std::move(outputs), options.cancel);
}

Status WriteArtifactFiles(const ArtifactFiles& files, const WriteOptions& options) {
  return WriteArtifactFiles(*NewPosixOutputFs(options.output), files, options);
}

Status WriteArtifactFile(const std::string& path, const ArtifactPlan& plan,
                         const WriteOptions& options) {
  return WriteArtifactFiles({{path, &plan}}, options);
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
