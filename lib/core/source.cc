#include "etpack/source.h"

#include <fcntl.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <utility>

#include "core/json_document.h"
#include "core/os_file.h"
#include "core/range_text.h"
#include "etpack/input.h"

namespace etpack {
namespace {

// Every ReadAt checks its range even though callers promise to stay inside:
// a bad plan must become an error, not a read of someone else's memory.
Status CheckRead(const Source& s, uint64_t offset, size_t n) {
  if (offset > s.size() || n > s.size() - offset) {
    return OutOfRange(s.Describe() + ": read " + RangeText(offset, n) +
                      " runs past the end of the source (" + std::to_string(s.size()) + " bytes)");
  }
  return Status::OK();
}

class MemorySourceImpl final : public Source {
 public:
  MemorySourceImpl(const void* data, uint64_t size)
      : data_(static_cast<const uint8_t*>(data)), size_(size) {}
  explicit MemorySourceImpl(std::vector<uint8_t> bytes)
      : owned_(std::move(bytes)), data_(owned_.data()), size_(owned_.size()) {}
  // Borrowed bytes whose owner `keep` holds alive (a mapping, or the source
  // a slice was cut from).
  MemorySourceImpl(std::shared_ptr<const void> keep, const void* data, uint64_t size)
      : keep_(std::move(keep)), data_(static_cast<const uint8_t*>(data)), size_(size) {}

  uint64_t size() const override { return size_; }
  Status ReadAt(uint64_t offset, void* dst, size_t n) const override {
    ETPACK_RETURN_IF_ERROR(CheckRead(*this, offset, n));
    if (n != 0) std::memcpy(dst, data_ + offset, n);
    return Status::OK();
  }
  const uint8_t* contiguous() const override { return data_; }
  std::string Describe() const override { return "memory (" + std::to_string(size_) + " bytes)"; }

 private:
  std::vector<uint8_t> owned_;
  std::shared_ptr<const void> keep_;
  const uint8_t* data_;
  uint64_t size_;
};

class FileSourceImpl final : public Source {
 public:
  FileSourceImpl(std::shared_ptr<const InputFile> file, std::string path, uint64_t offset,
                 uint64_t length)
      : file_(std::move(file)) {
    range_.path = std::move(path);
    range_.fd = file_->fd();
    range_.file = file_.get();
    range_.offset = offset;
    range_.length = length;
  }

  uint64_t size() const override { return range_.length; }

  // Reads on after a short read; a file that ends early (it shrank since
  // it was opened) is an error, never a read of fewer bytes.
  Status ReadAt(uint64_t offset, void* dst, size_t n) const override {
    ETPACK_RETURN_IF_ERROR(CheckRead(*this, offset, n));
    auto* out = static_cast<uint8_t*>(dst);
    uint64_t pos = range_.offset + offset;
    while (n > 0) {
      Result<size_t> got = file_->Read(pos, out, n);
      if (!got.ok()) {
        return got.status().WithContext("read " + Describe() + " at file offset " +
                                        std::to_string(pos));
      }
      if (*got == 0) {
        return IoError(Describe() + ": file ended at offset " + std::to_string(pos) +
                           " while reading (was it truncated after opening?)",
                       EIO);
      }
      const size_t k = std::min(*got, n);  // an input reading more than asked is not believed
      out += k;
      pos += k;
      n -= k;
    }
    return Status::OK();
  }

  const FileRange* file_range() const override { return &range_; }

  std::string Describe() const override {
    return "file " + range_.path + " " + RangeText(range_.offset, range_.length);
  }

  const std::shared_ptr<const InputFile>& file() const { return file_; }
  const std::string& path() const { return range_.path; }

 private:
  std::shared_ptr<const InputFile> file_;
  FileRange range_;
};

class GeneratorSourceImpl final : public Source {
 public:
  GeneratorSourceImpl(std::string name, uint64_t size, FillFn fill)
      : name_(std::move(name)), size_(size), fill_(std::move(fill)) {}

  uint64_t size() const override { return size_; }
  Status ReadAt(uint64_t offset, void* dst, size_t n) const override {
    ETPACK_RETURN_IF_ERROR(CheckRead(*this, offset, n));
    if (n == 0) return Status::OK();
    if (!fill_) return InvalidArgument(Describe() + ": no fill function");
    return fill_(offset, static_cast<uint8_t*>(dst), n)
        .WithContext(Describe() + " " + RangeText(offset, n));
  }
  std::string Describe() const override {
    return "generator '" + name_ + "' (" + std::to_string(size_) + " bytes)";
  }

 private:
  std::string name_;
  uint64_t size_;
  FillFn fill_;
};

// Also stands for a slice that does not fit its base: such a slice keeps
// its promised size (planning goes on) and fails every read.
class SliceSourceImpl final : public Source {
 public:
  SliceSourceImpl(SourcePtr base, uint64_t offset, uint64_t length)
      : base_(std::move(base)),
        offset_(offset),
        length_(length),
        fits_(offset <= base_->size() && length <= base_->size() - offset) {}

  uint64_t size() const override { return length_; }
  Status ReadAt(uint64_t offset, void* dst, size_t n) const override {
    if (!fits_) {
      return OutOfRange(Describe() + ": the slice runs past the end of its base (" +
                        std::to_string(base_->size()) + " bytes)");
    }
    ETPACK_RETURN_IF_ERROR(CheckRead(*this, offset, n));
    return base_->ReadAt(offset_ + offset, dst, n);
  }
  std::string Describe() const override {
    return base_->Describe() + " slice " + RangeText(offset_, length_);
  }

 private:
  SourcePtr base_;
  uint64_t offset_;
  uint64_t length_;
  bool fits_;
};

}  // namespace

SourcePtr MemorySource(const void* data, uint64_t size) {
  return std::make_shared<MemorySourceImpl>(data, size);
}

SourcePtr MemorySource(const void* data, uint64_t size, std::shared_ptr<const void> keep_alive) {
  return std::make_shared<MemorySourceImpl>(std::move(keep_alive), data, size);
}

SourcePtr OwnedSource(std::vector<uint8_t> bytes) {
  return std::make_shared<MemorySourceImpl>(std::move(bytes));
}

Status CheckPathText(const std::string& path, const std::string& what) {
  if (path.find('\0') == std::string::npos) return Status::OK();
  return InvalidArgument(what + " " + QuotedText(path) +
                         " contains a NUL byte (the system would read it as " +
                         QuotedText(path.c_str()) + ")");
}

namespace {

// FileSource with an optional length (none: to the end of the file).
Result<SourcePtr> OpenFileRange(InputFs& fs, const std::string& path, uint64_t offset,
                                std::optional<uint64_t> length) {
  ETPACK_RETURN_IF_ERROR(CheckPathText(path, "path"));
  const std::string what =
      !length ? "[" + std::to_string(offset) + ", end)" : RangeText(offset, *length);
  ETPACK_ASSIGN_OR_RETURN(std::shared_ptr<const InputFile> file, fs.Open(path));
  // The size now, even when the file is shared: it may have grown.
  Result<uint64_t> size = file->Size();
  if (!size.ok()) return size.status().WithContext("cannot stat " + path);
  const uint64_t file_size = *size;
  if (offset > file_size || (length && *length > file_size - offset)) {
    return OutOfRange(path + ": range " + what + " runs past the end of the file (" +
                      std::to_string(file_size) + " bytes)");
  }
  const uint64_t n = length ? *length : file_size - offset;
  // Advisory only: a failure costs read-ahead, not correctness.
  AdviseSequential(file->fd(), offset, n);
  return SourcePtr(std::make_shared<FileSourceImpl>(std::move(file), path, offset, n));
}

}  // namespace

Result<SourcePtr> FileSource(const std::string& path, uint64_t offset) {
  return OpenFileRange(*DefaultInputFs(), path, offset, std::nullopt);
}

Result<SourcePtr> FileSource(const std::string& path, uint64_t offset, uint64_t length) {
  return OpenFileRange(*DefaultInputFs(), path, offset, length);
}

Result<SourcePtr> FileSource(InputFs& fs, const std::string& path, uint64_t offset) {
  return OpenFileRange(fs, path, offset, std::nullopt);
}

Result<SourcePtr> FileSource(InputFs& fs, const std::string& path, uint64_t offset,
                             uint64_t length) {
  return OpenFileRange(fs, path, offset, length);
}

bool SameFile(const Source& a, const Source& b) {
  const FileRange* ra = a.file_range();
  const FileRange* rb = b.file_range();
  return ra != nullptr && rb != nullptr && ra->file != nullptr && ra->file->SameFileAs(rb->fd);
}

SourcePtr GeneratorSource(std::string name, uint64_t size, FillFn fill) {
  return std::make_shared<GeneratorSourceImpl>(std::move(name), size, std::move(fill));
}

SourcePtr SliceSource(SourcePtr base, uint64_t offset, uint64_t length) {
  assert(base != nullptr);
  if (offset > base->size() || length > base->size() - offset) {
    return std::make_shared<SliceSourceImpl>(std::move(base), offset, length);
  }
  if (offset == 0 && length == base->size()) return base;
  // Slices of files and memory stay files and memory, so the output file keeps its
  // fast paths (copy_file_range, direct memcpy) and messages keep the path.
  if (auto* file = dynamic_cast<const FileSourceImpl*>(base.get())) {
    return std::make_shared<FileSourceImpl>(file->file(), file->path(),
                                            file->file_range()->offset + offset, length);
  }
  if (const uint8_t* bytes = base->contiguous()) {
    return std::make_shared<MemorySourceImpl>(base, bytes + offset, length);
  }
  return std::make_shared<SliceSourceImpl>(std::move(base), offset, length);
}

Result<std::vector<uint8_t>> ReadAll(const Source& source, uint64_t max_bytes) {
  const uint64_t size = source.size();
  if (size > max_bytes || size > SIZE_MAX) {
    return OutOfRange(source.Describe() + ": " + std::to_string(size) + " bytes is more than the " +
                      std::to_string(max_bytes) + "-byte limit for reading into memory");
  }
  std::vector<uint8_t> out;
  try {
    out.resize(static_cast<size_t>(size));
  } catch (const std::bad_alloc&) {
    return OutOfRange(source.Describe() + ": cannot allocate " + std::to_string(size) + " bytes");
  }
  ETPACK_RETURN_IF_ERROR(source.ReadAt(0, out.data(), out.size()));
  return out;
}

Result<bool> SameBytes(const Source& a, const Source& b) {
  if (a.size() != b.size()) return false;
  ETPACK_ASSIGN_OR_RETURN(const std::optional<uint64_t> at, FirstDifference(a, b));
  return !at.has_value();
}

Result<std::optional<uint64_t>> FirstDifference(const Source& a, const Source& b) {
  assert(a.size() == b.size());
  constexpr size_t kChunk = size_t{1} << 20;
  const uint64_t size = a.size();
  const uint8_t* pa = a.contiguous();
  const uint8_t* pb = b.contiguous();
  std::vector<uint8_t> buf_a, buf_b;
  try {
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(size, kChunk));
    if (pa == nullptr) buf_a.resize(chunk);
    if (pb == nullptr) buf_b.resize(chunk);
  } catch (const std::bad_alloc&) {
    return OutOfRange("cannot allocate buffers to compare " + a.Describe() + " with " +
                      b.Describe());
  }
  for (uint64_t pos = 0; pos < size;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(size - pos, kChunk));
    const uint8_t* x = pa ? pa + pos : buf_a.data();
    const uint8_t* y = pb ? pb + pos : buf_b.data();
    if (!pa) ETPACK_RETURN_IF_ERROR(a.ReadAt(pos, buf_a.data(), n));
    if (!pb) ETPACK_RETURN_IF_ERROR(b.ReadAt(pos, buf_b.data(), n));
    if (std::memcmp(x, y, n) != 0) {
      size_t i = 0;
      while (x[i] == y[i]) ++i;
      return std::optional<uint64_t>(pos + i);
    }
    pos += n;
  }
  return std::optional<uint64_t>();
}

uint32_t SourceIndex::Add(const SourcePtr& source) {
  const auto [it, fresh] = position_.emplace(source.get(), static_cast<uint32_t>(list_->size()));
  if (fresh) list_->push_back(source);
  return it->second;
}

}  // namespace etpack
