// mapped_file.h (internal) — how the readers (PteFile, PtdFile, BpteFile)
// come to exist: over bytes in memory, or over a file of which they map
// only the head.

#ifndef ETPACK_MAPPED_FILE_H_
#define ETPACK_MAPPED_FILE_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "etpack/source.h"
#include "etpack/status.h"

namespace etpack {

// Bytes [offset, offset + length) of a file source's file, mapped read-only
// and kept mapped while the returned owner lives. `*data` receives the
// first byte (offset need not be page-aligned). Errors name the source.
// REQUIRES: file.file_range() != nullptr; the range lies inside the file.
Result<std::shared_ptr<const void>> MapFileHead(const Source& file, uint64_t length,
                                                const uint8_t** data);

// For Validate(): the flatbuffer, [0, end), must lie in the mapped head.
// Fails only when the file changed between the read that sized the mapping
// and the one that is validating it.
inline Status CheckInHead(uint64_t end, uint64_t mapped) {
  if (end <= mapped) return Status::OK();
  return Status(Code::kInvalidArgument,
                "the file changed while being opened: its header now puts the flatbuffer's end "
                "at " + std::to_string(end) + ", past the " + std::to_string(mapped) +
                    " bytes mapped when it was first read");
}

// Every reader befriends this class and has the members it sets (name_,
// data_, size_, mapped_, keep_alive_, file_), a Status Validate() that
// calls CheckInHead() before it reads the flatbuffer, and
//
//   // How many leading bytes of a file of `file_size` bytes Validate() and
//   // the accessors read from memory; everything else goes through file_.
//   // `head` holds the first head_size = min(file_size, kHeadPeek) bytes.
//   // The answer is raised to head_size and capped at file_size. Where
//   // the header is unusable, head_size: Validate() fails on it alone.
//   static uint64_t MappedPrefix(const uint8_t* head, uint64_t head_size,
//                                uint64_t file_size);
class ReaderFactory {
 public:
  static constexpr uint64_t kHeadPeek = 4096;

  // A reader over `size` bytes at `data` that `keep_alive` holds, returned
  // only once Validate() passed; a failure is prefixed with `name`.
  template <typename Reader>
  static Result<std::unique_ptr<Reader>> FromMemory(std::string name, const uint8_t* data,
                                                    uint64_t size,
                                                    std::shared_ptr<const void> keep_alive) {
    std::unique_ptr<Reader> r(new Reader());
    r->name_ = std::move(name);
    r->data_ = data;
    r->size_ = size;
    r->mapped_ = size;
    r->keep_alive_ = std::move(keep_alive);
    return Validated(std::move(r));
  }

  // A reader over the bytes of `file` (a file source, or a slice of one)
  // that maps only MappedPrefix() of them. Bulk bytes are read through the
  // file, so the writer can copy them in the kernel and drop them from the
  // page cache, and neither the address space nor the resident memory of
  // the process grows with the file: an 8 GiB .pte opens under a 1 GiB
  // RLIMIT_AS.
  // The same over the whole file at `path`, named by it.
  template <typename Reader>
  static Result<std::unique_ptr<Reader>> Open(const std::string& path) {
    ETPACK_ASSIGN_OR_RETURN(SourcePtr file, FileSource(path));
    return Open<Reader>(path, std::move(file));
  }

  template <typename Reader>
  static Result<std::unique_ptr<Reader>> Open(std::string name, SourcePtr file) {
    const uint64_t size = file->size();
    uint8_t head[kHeadPeek];
    const uint64_t head_size = std::min(size, kHeadPeek);
    Status s = file->ReadAt(0, head, static_cast<size_t>(head_size));
    if (!s.ok()) return s.WithContext(name);
    const uint64_t prefix =
        std::min(size, std::max(head_size, Reader::MappedPrefix(head, head_size, size)));
    std::unique_ptr<Reader> r(new Reader());
    ETPACK_ASSIGN_OR_RETURN(r->keep_alive_, MapFileHead(*file, prefix, &r->data_));
    r->name_ = std::move(name);
    r->size_ = size;
    r->mapped_ = prefix;
    r->file_ = std::move(file);
    return Validated(std::move(r));
  }

 private:
  template <typename Reader>
  static Result<std::unique_ptr<Reader>> Validated(std::unique_ptr<Reader> r) {
    Status s = r->Validate();
    if (!s.ok()) return s.WithContext(r->name_);
    return r;
  }
};

}  // namespace etpack

#endif  // ETPACK_MAPPED_FILE_H_
