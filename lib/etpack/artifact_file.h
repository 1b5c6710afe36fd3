// etpack/artifact_file.h — what every reader (PteFile, PtdFile, BpteFile)
// is: a validated artifact with a name, a size, its head in memory and its
// bulk bytes behind sources.
//
// A reader comes to exist in one of three ways, each of which validates
// the whole artifact before it returns (no accessor of a returned reader
// can fail or read out of bounds):
//
//   Open(path, env)         reads only the file's head (headers and
//                           flatbuffer) into memory and every other byte
//                           through the file, so an 8 GiB artifact costs
//                           neither 8 GiB of address space nor of page
//                           cache; nothing is mapped, so a file truncated
//                           while it is read is an error, never SIGBUS;
//                           opened through env.input (etpack/env.h);
//   Open(name, file)        the same over a file source (e.g. a slice of a
//                           larger file: the program inside a .bpte);
//   FromMemory(name, ...)   over bytes the caller holds; `keep_alive` owns
//                           them and is shared by every source handed out.
//
// Errors (etpack/status.h) name the artifact first ("model.pte: ..."):
//   kNotFound         the path does not exist;
//   kIoError          the file exists but cannot be read (also when it
//                     ends before the size it had when opened);
//   kCorrupt          the bytes are not a valid artifact of this format
//                     (also when the file changed while being opened);
//   kOutOfRange       the artifact does not fit this process (e.g. a head
//                     too large to map);
//   kInvalidArgument  the call itself is wrong: a directory for a path, a
//                     source that is not a file range, memory that is not
//                     16-byte aligned.
//
// A reader is not copyable; it is safe to use from several threads once
// returned (every accessor is const). Sources it hands out stay valid after
// the reader is destroyed: they hold the file or the memory themselves.

#ifndef ETPACK_ARTIFACT_FILE_H_
#define ETPACK_ARTIFACT_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "etpack/env.h"
#include "etpack/source.h"
#include "etpack/status.h"

namespace etpack {

class ArtifactFile {
 public:
  virtual ~ArtifactFile();
  ArtifactFile(const ArtifactFile&) = delete;
  ArtifactFile& operator=(const ArtifactFile&) = delete;

  // The path or name given when opening; errors start with it.
  const std::string& name() const { return name_; }
  // Bytes in the whole artifact.
  uint64_t size() const { return size_; }

  // The head of the artifact, [0, head_size()): at least its headers and
  // flatbuffer; all of it for FromMemory. Bulk bytes are not here: read
  // them through RangeSource() and the format's own sources.
  const uint8_t* head() const { return head_; }
  uint64_t head_size() const { return head_size_; }

  // Bytes [offset, offset + length) of the artifact as a source: a range of
  // the file when opened from one (read with pread or copy_file_range,
  // never from the head in memory), else a view of the memory.
  // REQUIRES: offset + length <= size().
  SourcePtr RangeSource(uint64_t offset, uint64_t length) const;

 protected:
  ArtifactFile() = default;

  // For the derived readers' factories: set the bytes up, then Validate().
  // A failure is prefixed with `name`.
  Status InitFromFile(std::string name, SourcePtr file);
  Status InitFromMemory(std::string name, const uint8_t* data, uint64_t size,
                        std::shared_ptr<const void> keep_alive);

  // For Validate(): OK when [0, end) lies in the head. Fails (kCorrupt)
  // only when the file changed between the read that sized the head and
  // the one validating it.
  Status CheckInHead(uint64_t end) const;

  // True when opened from a file (bulk bytes are not in memory).
  bool from_file() const { return file_ != nullptr; }
  // Whatever owns the head's memory (to share with sources or trees).
  const std::shared_ptr<const void>& keep_alive() const { return keep_alive_; }

 private:
  // How many leading bytes of a file of `file_size` bytes Validate() and
  // the accessors read from memory; everything else goes through the file.
  // `peek` holds the first peek_size = min(file_size, 4096) bytes. The
  // answer is raised to peek_size and capped at file_size; where the header
  // is unusable, return peek_size: Validate() then fails on it alone.
  virtual uint64_t MappedPrefix(const uint8_t* peek, uint64_t peek_size,
                                uint64_t file_size) const = 0;
  // Checks everything about the artifact, reading the head and, through
  // RangeSource(), whatever else it must. Called once, by the Init*().
  virtual Status Validate() = 0;

  std::string name_;
  const uint8_t* head_ = nullptr;
  uint64_t size_ = 0;
  uint64_t head_size_ = 0;
  std::shared_ptr<const void> keep_alive_;
  SourcePtr file_;  // set when opened from a file: bulk reads go through it
};

// The three ways in, for a reader `File` (PteFile, PtdFile, BpteFile):
// `class File : public ArtifactFileOf<File>`, with a private default
// constructor and `friend class ArtifactFileOf<File>`.
template <typename File>
class ArtifactFileOf : public ArtifactFile {
 public:
  // `path` is opened through `env.input` (etpack/env.h).
  static Result<std::unique_ptr<File>> Open(const std::string& path, const Env& env = {}) {
    ETPACK_ASSIGN_OR_RETURN(SourcePtr file, FileSource(env.in(), path));
    return Open(path, std::move(file));
  }
  // REQUIRES: file is a file source (or a slice of one).
  static Result<std::unique_ptr<File>> Open(std::string name, SourcePtr file) {
    std::unique_ptr<File> f(new File());
    ETPACK_RETURN_IF_ERROR(f->InitFromFile(std::move(name), std::move(file)));
    return f;
  }
  // REQUIRES: data 16-byte aligned; `keep_alive` owns it.
  static Result<std::unique_ptr<File>> FromMemory(std::string name, const uint8_t* data,
                                                  uint64_t size,
                                                  std::shared_ptr<const void> keep_alive) {
    std::unique_ptr<File> f(new File());
    ETPACK_RETURN_IF_ERROR(f->InitFromMemory(std::move(name), data, size, std::move(keep_alive)));
    return f;
  }

 protected:
  ArtifactFileOf() = default;
};

}  // namespace etpack

#endif  // ETPACK_ARTIFACT_FILE_H_
