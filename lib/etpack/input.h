// etpack/input.h — the input seam: the one place where the library meets
// the file system on the way in, as etpack/output.h is on the way out.
//
// An InputFs opens files to read; an InputFile is one open file. Every
// file source (FileSource, etpack/source.h) reads through one, and so does
// every reader of an artifact opened from a file (the head it keeps in
// memory is read through its source). Implementations: POSIX files
// (DefaultInputFs). A wrapper that changes part of what an input does (the
// tests' fault injection) derives from InputFileWrapper / InputFsWrapper
// and overrides only what it changes.
//
// Bytes may also leave a file without passing through Read(): an output
// hands a file source's descriptor to copy_file_range (OutputOptions), so
// a wrapper that must see every byte is used with that option off.

#ifndef ETPACK_INPUT_H_
#define ETPACK_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "etpack/status.h"

namespace etpack {

// Where a byte range of a file lies on its storage: two ranges with the
// same known map (same device, same physical bytes in the same order) hold
// the same bytes, so they can be told equal without reading them (files
// that share extents: reflink copies on XFS or btrfs).
struct PhysicalExtents {
  uint64_t device = 0;
  // (physical byte address, length) in file order, adjacent runs merged.
  // Empty: unknown.
  std::vector<std::pair<uint64_t, uint64_t>> runs;

  bool known() const { return !runs.empty(); }
  bool operator==(const PhysicalExtents& o) const { return device == o.device && runs == o.runs; }
};

// One open regular file. Thread-safe: Read and Size may run concurrently.
class InputFile {
 public:
  InputFile() = default;
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  virtual ~InputFile() = default;

  // The open descriptor, valid while this object lives (for an in-kernel
  // copy and to tell whether an output would replace this file).
  virtual int fd() const = 0;

  // The file's size now (it may have changed since it was opened).
  virtual Result<uint64_t> Size() const = 0;

  // Reads up to `n` bytes at `offset` into `dst` and returns how many it
  // read: fewer than `n` is allowed (a short read; callers read on), 0
  // means the file ends at `offset`. A failure is kIoError with the
  // system's reason; the caller adds the file's name and the offset.
  virtual Result<size_t> Read(uint64_t offset, void* dst, size_t n) const = 0;

  // Where bytes [offset, offset + n) lie (n > 0), when the file system
  // says and every one of them is in an allocated, written block of plain
  // data (no hole, no delayed allocation, no inline, compressed or
  // encrypted data); unknown otherwise. Advisory: never an error, and a
  // caller that gets unknown reads the bytes. The default: unknown.
  virtual PhysicalExtents Extents(uint64_t offset, uint64_t n) const;

  // OK while the file is as it was when opened: the same size and
  // modification time. Any write or truncation since moves one of them, and
  // then bytes read before and after it may disagree (a plan decided from
  // the old bytes, a copy made of the new): kIoError saying what moved; the
  // caller adds the file's name. The writer asks it of every input file
  // once all bytes are copied, before anything is published. Renaming,
  // removing or replacing the file's name changes none of its bytes and is
  // not a change. What it cannot see: a write that keeps the size and sets
  // the modification time back (touch -d, utimensat), or one that lands
  // within the file system's timestamp granularity of the last write before
  // the open. The default (files that are no file system's): OK.
  virtual Status CheckUnchanged() const;

  // Whether the file open as `fd` is this file: the same device and inode,
  // whatever names, links or descriptors lead to either (an input given
  // twice under two names, an output that would replace an input). False
  // when either cannot be asked. The default compares fd()'s file with it.
  virtual bool SameFileAs(int fd) const;

  // How many names (hard links) the file has now; 0 when unknown (a file
  // with no name, one that cannot be asked). The default asks fd().
  virtual uint64_t Links() const;
};

class InputFs {
 public:
  virtual ~InputFs() = default;

  // Opens `path` for reading. Only regular files are opened: anything else
  // (a FIFO, a directory, a device) is kInvalidArgument naming the path
  // and what it is, found without blocking; a missing file is kNotFound.
  // A file whose size is given as 0 but which has content (/proc/self/status)
  // is kInvalidArgument too: every reader goes by the size. Opening the same file again (same
  // device and inode, under whatever name) may return the same InputFile. Errors name the path.
  virtual Result<std::shared_ptr<const InputFile>> Open(const std::string& path) = 0;
};

// Forwards every call to the file it holds, so a wrapper overrides only
// what it changes and calls the InputFileWrapper method to go on.
class InputFileWrapper : public InputFile {
 public:
  // REQUIRES: target != nullptr.
  explicit InputFileWrapper(std::shared_ptr<const InputFile> target);

  const InputFile& wrapped() const { return *target_; }

  int fd() const override;
  Result<uint64_t> Size() const override;
  Result<size_t> Read(uint64_t offset, void* dst, size_t n) const override;
  Status CheckUnchanged() const override;
  // Not forwarded: unknown, since a wrapper may change what Read() gives,
  // and the bytes are then no longer where the target's blocks are. A
  // wrapper that reads the target's bytes unchanged may forward it.

 private:
  std::shared_ptr<const InputFile> target_;
};

// Forwards Open() to `target`; a wrapper overrides it to wrap what the
// target opens. REQUIRES: `target` outlives the wrapper.
class InputFsWrapper : public InputFs {
 public:
  explicit InputFsWrapper(InputFs* target) : target_(target) {}

  InputFs* wrapped() const { return target_; }

  Result<std::shared_ptr<const InputFile>> Open(const std::string& path) override;

 private:
  InputFs* target_;
};

// The POSIX file system: every open file is shared by all who open it
// (one descriptor per file however many sources read it, closed with the
// last of them). Never null; lives for the whole process; thread-safe.
InputFs* DefaultInputFs();

}  // namespace etpack

#endif  // ETPACK_INPUT_H_
