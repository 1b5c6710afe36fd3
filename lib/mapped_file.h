// mapped_file.h (internal) — a whole file mapped read-only, shared by the
// readers and every source that borrows from it.

#ifndef ETPACK_MAPPED_FILE_H_
#define ETPACK_MAPPED_FILE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "etpack/source.h"
#include "etpack/status.h"

namespace etpack {

class MappedFile {
 public:
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }  // page-aligned; valid even when empty
  uint64_t size() const { return size_; }

 private:
  friend Result<std::shared_ptr<MappedFile>> MapFileReadOnly(const std::string& path);
  MappedFile() = default;
  void* addr_ = nullptr;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

// Maps a regular file. Errors name the path.
Result<std::shared_ptr<MappedFile>> MapFileReadOnly(const std::string& path);

// FromMemory() of the readers (PteFile, PtdFile, BpteFile): a reader over
// bytes held by `keep_alive`, returned only once Reader::Validate() passed;
// a failure is prefixed with `name`.
// REQUIRES: Reader befriends ValidatedReader and has the members set here.
template <typename Reader>
Result<std::unique_ptr<Reader>> ValidatedReader(std::string name, const uint8_t* data,
                                                uint64_t size,
                                                std::shared_ptr<const void> keep_alive) {
  std::unique_ptr<Reader> r(new Reader());
  r->name_ = std::move(name);
  r->data_ = data;
  r->size_ = size;
  r->keep_alive_ = std::move(keep_alive);
  Status s = r->Validate();
  if (!s.ok()) return s.WithContext(r->name_);
  return r;
}

// Open() of the readers (PteFile, PtdFile, BpteFile): maps `path`, lets
// Reader::FromMemory validate the mapping, then attaches a file source so
// that bulk bytes are read through the file, not the mapping. That way the
// writer can copy them in the kernel and drop them from the page cache, and
// they never count towards this process's resident memory.
// REQUIRES: Reader befriends OpenMappedReader and has a SourcePtr file_.
template <typename Reader>
Result<std::unique_ptr<Reader>> OpenMappedReader(const std::string& path) {
  ETPACK_ASSIGN_OR_RETURN(auto mapping, MapFileReadOnly(path));
  const uint8_t* data = mapping->data();
  const uint64_t size = mapping->size();
  ETPACK_ASSIGN_OR_RETURN(auto reader, Reader::FromMemory(path, data, size, std::move(mapping)));
  ETPACK_ASSIGN_OR_RETURN(reader->file_, FileSource(path));
  if (reader->file_->size() != size) {
    return InvalidArgument(path + ": changed size while being opened");
  }
  return reader;
}

}  // namespace etpack

#endif  // ETPACK_MAPPED_FILE_H_
