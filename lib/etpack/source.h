// etpack/source.h — where the bytes of one data item come from.
//
// A Source knows its size up front (planning needs only sizes) and copies
// any byte range of itself into a destination buffer on request (writing
// needs bytes). Three kinds cover every caller:
//
//   MemorySource     bytes the caller already holds (borrowed, never copied
//                    until they are written out)
//   FileSource       a byte range of a file (mapped or copied by the kernel;
//                    never read whole into memory)
//   GeneratorSource  a callback that produces the bytes chunk by chunk
//
// Sources are immutable and shared (SourcePtr); one source may back several
// items. Thread-compatible: ReadAt on distinct ranges may run concurrently.

#ifndef ETPACK_SOURCE_H_
#define ETPACK_SOURCE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "etpack/status.h"

namespace etpack {

class InputFile;

// A file descriptor range a source can hand to the kernel (copy_file_range).
struct FileRange {
  int fd = -1;          // open for reading; valid while the source lives
  uint64_t offset = 0;  // bytes from the start of the file
  uint64_t length = 0;
  std::string path;  // the file's name, as it was opened (for messages)
  // The file it reads through (for where the range lies: its Extents());
  // valid while the source lives. Null when none.
  const InputFile* file = nullptr;
};

class Source {
 public:
  virtual ~Source() = default;

  // Size in bytes. Constant for the life of the source.
  virtual uint64_t size() const = 0;

  // Copies bytes [offset, offset + n) of the source to dst.
  // REQUIRES: offset + n <= size(); dst has room for n bytes.
  // A failure names the source (see Describe()).
  virtual Status ReadAt(uint64_t offset, void* dst, size_t n) const = 0;

  // The whole content as one contiguous span, when the source has one
  // (memory sources); nullptr otherwise. Lets the writer copy and hash
  // without an intermediate buffer.
  virtual const uint8_t* contiguous() const { return nullptr; }

  // The backing file range, when there is one; nullptr otherwise. Lets the
  // output file try an in-kernel copy first.
  virtual const FileRange* file_range() const { return nullptr; }

  // What this source is, for error messages: "file w.bin [4096, +100)",
  // "memory (100 bytes)", "generator 'layer.0.weight' (100 bytes)".
  virtual std::string Describe() const = 0;
};

using SourcePtr = std::shared_ptr<const Source>;

// Borrowed bytes. REQUIRES: [data, data + size) stays valid and unchanged
// until the last write that uses the source has finished.
SourcePtr MemorySource(const void* data, uint64_t size);

// Borrowed bytes kept alive by `keep_alive` (e.g. a file mapping shared by
// every source that reads from it).
SourcePtr MemorySource(const void* data, uint64_t size, std::shared_ptr<const void> keep_alive);

// Owned bytes (small items: inline blobs decoded from a manifest, tests).
SourcePtr OwnedSource(std::vector<uint8_t> bytes);

// A range of a file. Opens the file now, so a missing file (kNotFound) or a
// range past its end (kOutOfRange) is reported here, naming the file, the
// range and the file size. Without `length` the range runs from `offset` to
// the end of the file; a length is always a length (2^64 - 1 is a range
// past the end, not "the rest"). A path with a NUL byte (which the system
// would cut short, naming another file) is kInvalidArgument. Anything but a
// regular file (a FIFO, a directory, a device) is refused with
// kInvalidArgument, without blocking. All sources of one file (same device
// and inode, under whatever name) share one open descriptor, closed with
// the last of them, so thousands of items cost one descriptor per file.
// Safe to call from several threads.
Result<SourcePtr> FileSource(const std::string& path, uint64_t offset = 0);
Result<SourcePtr> FileSource(const std::string& path, uint64_t offset, uint64_t length);

// The same, opened and read through `fs` (etpack/input.h) instead of the
// POSIX files. REQUIRES: `fs` outlives the call; the source keeps what
// fs.Open() returned.
class InputFs;
Result<SourcePtr> FileSource(InputFs& fs, const std::string& path, uint64_t offset = 0);
Result<SourcePtr> FileSource(InputFs& fs, const std::string& path, uint64_t offset,
                             uint64_t length);

// Whether `a` and `b` read one file: both are file sources and their files
// are the same (InputFile::SameFileAs: device and inode), whatever names,
// links or descriptors led to it. False when either is no file source.
bool SameFile(const Source& a, const Source& b);

// kInvalidArgument naming `what` when `path` holds a NUL byte: every path
// etpack opens or writes goes through this rule.
Status CheckPathText(const std::string& path, const std::string& what);

// Bytes produced on demand: fill(offset, dst, n) must write exactly the
// source's bytes [offset, offset + n) to dst and may be called for any
// range, in any order, more than once. `name` appears in error messages.
using FillFn = std::function<Status(uint64_t offset, uint8_t* dst, size_t n)>;
SourcePtr GeneratorSource(std::string name, uint64_t size, FillFn fill);

// The bytes [offset, offset + length) of another source. Its size() is
// always `length`. When the range does not fit inside base (offset + length
// > base->size()), every ReadAt fails with kOutOfRange naming the slice and
// the base's size. REQUIRES: base != nullptr.
SourcePtr SliceSource(SourcePtr base, uint64_t offset, uint64_t length);

// Reads a whole source into memory. For small items only (inline blobs,
// comparisons in tests); fails with kOutOfRange above max_bytes.
Result<std::vector<uint8_t>> ReadAll(const Source& source, uint64_t max_bytes = uint64_t{1} << 30);

// True when both sources hold identical bytes. Reads both in bounded chunks.
Result<bool> SameBytes(const Source& a, const Source& b);
// The offset of the first byte where two sources of equal size differ;
// nullopt when they hold identical bytes. Reads as SameBytes does.
// REQUIRES: a.size() == b.size().
Result<std::optional<uint64_t>> FirstDifference(const Source& a, const Source& b);

// A list of data items (the buffers of a .ptd, say) in which the same
// source given again is stored once: Add() appends a source the first time
// and returns its position, and every later Add() of it returns that same
// position, so every key naming it shares one buffer (one segment). "The
// same source" is the same Source object: front ends that make sources
// from their callers' objects give one object for one memory range or file
// range (the Python module does), and a caller that hands one source twice
// (a C API handle, a program's constant list) gets it stored once. Nothing
// is read; sources with equal bytes but distinct objects stay distinct
// (content dedup is the planners' option, docs/dedup.md).
// Not copyable: it appends to the list it was given.
class SourceIndex {
 public:
  // REQUIRES: *list is empty, outlives this object and is appended to only
  // through it.
  explicit SourceIndex(std::vector<SourcePtr>* list) : list_(list) {}
  SourceIndex(const SourceIndex&) = delete;
  SourceIndex& operator=(const SourceIndex&) = delete;

  // The position of `source` in the list, appending it when new.
  // REQUIRES: source != nullptr; fewer than 2^32 - 1 sources in the list
  // (.ptd buffer indices are 32-bit).
  uint32_t Add(const SourcePtr& source);

 private:
  std::vector<SourcePtr>* list_;
  std::unordered_map<const Source*, uint32_t> position_;
};

}  // namespace etpack

#endif  // ETPACK_SOURCE_H_
