// The one way a reader's bytes are set up: a validated artifact over a
// mapped file head or over memory (see etpack/artifact_file.h).

#include "etpack/artifact_file.h"

#include <algorithm>
#include <utility>

#include "io/mapped_file.h"

namespace etpack {
namespace {

// Enough for every format's fixed headers; MappedPrefix() sizes the rest.
constexpr uint64_t kHeadPeek = 4096;

}  // namespace

ArtifactFile::~ArtifactFile() = default;

SourcePtr ArtifactFile::RangeSource(uint64_t offset, uint64_t length) const {
  if (file_ != nullptr) return SliceSource(file_, offset, length);
  return MemorySource(head_ + offset, length, keep_alive_);
}

Status ArtifactFile::InitFromFile(std::string name, SourcePtr file) {
  if (file == nullptr || file->file_range() == nullptr) {
    return InvalidArgument(name + ": not a file source (" +
                           (file ? file->Describe() : std::string("null")) +
                           "); open bytes in memory with FromMemory()");
  }
  const uint64_t size = file->size();
  uint8_t peek[kHeadPeek];
  const uint64_t peek_size = std::min(size, kHeadPeek);
  Status s = file->ReadAt(0, peek, static_cast<size_t>(peek_size));
  if (!s.ok()) return s.WithContext(name);
  const uint64_t prefix = std::min(size, std::max(peek_size, MappedPrefix(peek, peek_size, size)));
  Result<std::shared_ptr<const void>> mapping = MapFileHead(*file, prefix, &head_);
  if (!mapping.ok()) return mapping.status().WithContext(name);
  keep_alive_ = std::move(mapping).value();
  name_ = std::move(name);
  size_ = size;
  head_size_ = prefix;
  file_ = std::move(file);
  return Validate().WithContext(name_);
}

Status ArtifactFile::InitFromMemory(std::string name, const uint8_t* data, uint64_t size,
                                    std::shared_ptr<const void> keep_alive) {
  // FlatBuffers' verifier checks alignment against the buffer's address;
  // a misaligned buffer would make a valid artifact look corrupt.
  if (reinterpret_cast<uintptr_t>(data) % 16 != 0) {
    return InvalidArgument(name + ": the buffer holding the artifact must be 16-byte aligned");
  }
  name_ = std::move(name);
  head_ = data;
  size_ = size;
  head_size_ = size;
  keep_alive_ = std::move(keep_alive);
  return Validate().WithContext(name_);
}

Status ArtifactFile::CheckInHead(uint64_t end) const {
  if (end <= head_size_) return Status::OK();
  return Corrupt(
      "the file changed while being opened: its header now puts the flatbuffer's end "
      "at " +
      std::to_string(end) + ", past the " + std::to_string(head_size_) +
      " bytes mapped when it was first read");
}

}  // namespace etpack
