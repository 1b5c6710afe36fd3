// etpack/pte_reader.h — open, validate and read a .pte.
//
// PteFile::Open maps the file read-only and validates all of it before it
// returns: identifier, extended header, the FlatBuffers verifier, every
// segment and constant/mutable sub-offset in bounds, delegate and named-data
// references in range, alignments. A failure names the file, the field and
// the value. After a successful Open every accessor is safe to call.

#ifndef ETPACK_PTE_READER_H_
#define ETPACK_PTE_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "etpack/json.h"
#include "etpack/pte.h"
#include "etpack/source.h"
#include "etpack/status.h"

namespace etpack::pte_fb {
struct Program;
}

namespace etpack {

struct ExtendedHeader {
  bool present = false;
  uint32_t length = 0;  // header length field (32; 24 in legacy files)
  uint64_t program_size = 0;
  uint64_t segment_base_offset = 0;
  uint64_t segment_data_size = 0;  // 0 in legacy 24-byte headers
};

class PteFile {
 public:
  // Validates `path`. Only the file's head (headers and flatbuffer) is
  // mapped; segment bytes are read through the file, so opening an 8 GiB
  // file costs neither 8 GiB of address space nor of page cache. A missing
  // file is kNotFound; a malformed one kInvalidArgument naming the field.
  static Result<std::unique_ptr<PteFile>> Open(const std::string& path);
  // Validates bytes held elsewhere (an embedded program). `keep_alive`
  // owns them; `name` appears in errors. REQUIRES: data 16-byte aligned.
  static Result<std::unique_ptr<PteFile>> FromMemory(
      std::string name, const uint8_t* data, uint64_t size,
      std::shared_ptr<const void> keep_alive);

  ~PteFile();
  PteFile(const PteFile&) = delete;
  PteFile& operator=(const PteFile&) = delete;

  const std::string& name() const { return name_; }
  // The head of the file, [0, head_size()): at least its headers and
  // flatbuffer; all of it for FromMemory. Bulk bytes are not here: read
  // them through the sources.
  const uint8_t* data() const { return data_; }
  uint64_t head_size() const { return mapped_; }
  uint64_t size() const { return size_; }
  const ExtendedHeader& header() const { return header_; }
  const etpack::pte_fb::Program& program() const { return *program_; }

  // The segment table with roles (constants, mutable, delegate, named data)
  // as found in the program.
  const PteLayout& layout() const { return layout_; }

  // Bytes of segment i as a source: a range of the file when opened from a
  // path (read with pread or copy_file_range, never through the mapping),
  // else a view of the memory (kept alive by the source).
  // REQUIRES: i < layout().segments.size().
  SourcePtr SegmentSource(size_t i) const;
  // Any validated byte range of the file as a source.
  SourcePtr RangeSource(uint64_t offset, uint64_t length) const;

  // The program as a writer input: the structure as a tree, and constants,
  // mutable values, delegate payloads and named data as PteInput's lists of
  // sources borrowing this file (whether they were inline or in segments);
  // delegates are re-pointed INLINE. PlanPte(ToInput()) re-lays the file
  // out; this is how `etpack repack` works.
  Result<PteInput> ToInput() const;

  // The writer options this file appears to have been written with, so a
  // repack changes only what it is asked to: the alignments are the largest
  // powers of two (up to 65536) that the file's offsets all honour, and
  // delegates count as extracted unless a non-empty payload is inline.
  PteOptions InferredOptions() const;

  // The program rendered like `flatc --json --strict-json --defaults-json`.
  Result<std::string> ToFlatcJson() const;

 private:
  PteFile() = default;
  friend class ReaderFactory;  // the only way in: Open() and FromMemory()
  // Open() maps only this much of the file's start (see ReaderFactory).
  static uint64_t MappedPrefix(const uint8_t* head, uint64_t head_size, uint64_t file_size);
  Status Validate();
  Result<PteInput> ToInputImpl() const;

  std::string name_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;    // the whole file
  uint64_t mapped_ = 0;  // data_ holds [0, mapped_)
  std::shared_ptr<const void> keep_alive_;
  SourcePtr file_;  // set when opened from a path: bulk reads go through it
  ExtendedHeader header_;
  const etpack::pte_fb::Program* program_ = nullptr;
  PteLayout layout_;
};

// Reads the extended header at offset 8 of a .pte head. `present` is false
// when the magic is not there. Fails for a present header that is
// malformed (length < 24) or a head shorter than the 64 bytes the runtime
// insists on.
Result<ExtendedHeader> ParseExtendedHeader(const uint8_t* data, uint64_t size);

}  // namespace etpack

#endif  // ETPACK_PTE_READER_H_
