// The one way a reader's bytes are set up: a validated artifact over a
// file head read into memory or over memory (see etpack/artifact_file.h).

#include "etpack/artifact_file.h"

#include <algorithm>
#include <cstdlib>
#include <new>
#include <string>
#include <utility>

namespace etpack {
namespace {

// Enough for every format's fixed headers; MappedPrefix() sizes the rest.
constexpr uint64_t kHeadPeek = 4096;

// Bytes [0, length) of `file` in memory aligned as FlatBuffers' verifier
// wants it (16 bytes), owned by the result; `*data` receives them.
//
// Read, not mapped: a mapped file that another process truncates raises
// SIGBUS at the next touch of a page past its new end, at any accessor,
// long after opening. A read of a file that shrank is an error here
// (FileSource), and the head is then the reader's own.
Result<std::shared_ptr<const void>> ReadHead(const Source& file, uint64_t length,
                                             const uint8_t** data) {
  alignas(16) static const uint8_t kEmpty[16] = {};
  if (length == 0) {
    *data = kEmpty;
    return std::shared_ptr<const void>();
  }
  const uint64_t rounded = (length + 15) / 16 * 16;
  void* bytes = rounded < length || rounded > SIZE_MAX
                    ? nullptr
                    : std::aligned_alloc(16, static_cast<size_t>(rounded));
  if (bytes == nullptr) {
    return OutOfRange(file.Describe() + ": cannot allocate " + std::to_string(length) +
                      " bytes for its head (the headers and flatbuffer); is the "
                      "address-space limit (ulimit -v) too low?");
  }
  std::shared_ptr<const void> owner(bytes, [](void* p) { std::free(p); });
  ETPACK_RETURN_IF_ERROR(file.ReadAt(0, bytes, static_cast<size_t>(length)));
  *data = static_cast<const uint8_t*>(bytes);
  return owner;
}

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
  Result<std::shared_ptr<const void>> head = ReadHead(*file, prefix, &head_);
  if (!head.ok()) return head.status().WithContext(name);
  keep_alive_ = std::move(head).value();
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
      " bytes read when it was first opened");
}

}  // namespace etpack
