// mapped_file.h (internal) — a whole file mapped read-only, shared by the
// readers and every source that borrows from it.

#ifndef ETPACK_MAPPED_FILE_H_
#define ETPACK_MAPPED_FILE_H_

#include <cstdint>
#include <memory>
#include <string>

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

}  // namespace etpack

#endif  // ETPACK_MAPPED_FILE_H_
