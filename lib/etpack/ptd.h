// etpack/ptd.h — ExecuTorch external data files (.ptd): plan, write, read.
//
// A .ptd holds named byte segments, usually a model's weights, that
// programs refer to by key (a .pte tensor marked EXTERNAL names its key in
// extra_tensor_info.fully_qualified_name). Writing is the same two passes as
// for a .pte:
//
//   ETPACK_ASSIGN_OR_RETURN(PtdPlan plan, PlanPtd(input, options));
//   ETPACK_RETURN_IF_ERROR(WriteArtifactFile("weights.ptd", plan.artifact));
//
// Layout (formats.md §4, as the reference serializer writes it):
//   [0, 8)        root offset | "FT01"
//   [8, 48)       FH01 header: magic, length 40, flatbuffer_offset (48),
//                 flatbuffer_size, segment_base_offset, segment_data_size
//   [48, ...)     the rest of the FlatTensor flatbuffer
//   base          = align_up(48 + flatbuffer_size, segment_alignment)
//   segments      one per distinct buffer in entry order, segment j at
//                 align_up(end of j-1, max(segment_alignment, alignment of
//                 the first entry using the buffer)); none after the last.

#ifndef ETPACK_PTD_H_
#define ETPACK_PTD_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "etpack/source.h"
#include "etpack/status.h"
#include "etpack/writer.h"

namespace etpack::ptd_fb {
struct FlatTensor;
}

namespace etpack {

// dtype, shape and dimension order of a tensor entry.
struct TensorLayout {
  int scalar_type = 0;             // ExecuTorch ScalarType code
  std::vector<int32_t> sizes;      // each >= 0
  std::vector<uint8_t> dim_order;  // a permutation of 0..rank-1

  bool operator==(const TensorLayout& o) const {
    return scalar_type == o.scalar_type && sizes == o.sizes && dim_order == o.dim_order;
  }
  bool operator!=(const TensorLayout& o) const { return !(*this == o); }
};

// "FLOAT[4, 3] dim_order [0, 1]", for messages.
std::string DescribeLayout(const TensorLayout& layout);

// Bytes a tensor of this layout occupies; errors name `what`.
Result<uint64_t> LayoutNbytes(const TensorLayout& layout, const std::string& what);

struct PtdEntry {
  std::string key;
  uint32_t buffer_index = 0;  // into PtdInput::buffers
  uint64_t alignment = 1;     // power of two; the first entry of a buffer decides
  // Present for tensors, absent for opaque blobs. When present the buffer
  // must hold at least LayoutNbytes(layout) bytes.
  std::optional<TensorLayout> layout;
};

struct PtdInput {
  std::vector<SourcePtr> buffers;  // distinct data, shared by entries
  std::vector<PtdEntry> entries;   // order decides segment order; keys unique
};

struct PtdOptions {
  // Alignment of the segment base in the file and of every segment start.
  uint64_t segment_alignment = 128;
};

struct PtdLayout {
  uint64_t flatbuffer_offset = 0;  // bytes inserted at offset 8 (the padded header)
  uint64_t flatbuffer_size = 0;    // flatbuffer length before the insertion
  uint64_t segment_base_offset = 0;
  uint64_t segment_data_size = 0;
  struct Segment {
    uint64_t offset = 0;  // from the segment base
    uint64_t size = 0;
  };
  std::vector<Segment> segments;
};

struct PtdPlan {
  ArtifactPlan artifact;
  PtdLayout layout;
};

// Pass one. Errors (kInvalidArgument) name the entry and the value: empty
// or duplicate keys, buffer_index out of range, alignment not a power of
// two, an invalid layout (negative size, dim_order not a permutation,
// unknown dtype), a buffer smaller than its tensor layout.
Result<PtdPlan> PlanPtd(const PtdInput& input, const PtdOptions& options = {});

// Plan and write `path` atomically (see WriteArtifactFile).
Status WritePtd(const std::string& path, const PtdInput& input,
                const PtdOptions& options = {}, const ProgressFn& progress = {});

// The FH01 header as read from a file.
struct FlatTensorHeader {
  uint32_t length = 0;
  uint64_t flatbuffer_offset = 0;
  uint64_t flatbuffer_size = 0;
  uint64_t segment_base_offset = 0;
  uint64_t segment_data_size = 0;
};

// A mapped, fully validated .ptd. Beyond the runtime's own checks it
// requires (formats.md §4.4): every segment inside the data, every key
// unique and non-empty, every tensor entry with a valid layout, and every
// tensor's segment at least as large as the tensor.
class PtdFile {
 public:
  // Validates `path`. Only the file's head (headers and flatbuffer) is
  // mapped; segment bytes are read through the file, so opening an 8 GiB
  // file costs neither 8 GiB of address space nor of page cache. A missing
  // file is kNotFound; a malformed one kInvalidArgument naming the field.
  static Result<std::unique_ptr<PtdFile>> Open(const std::string& path);
  // REQUIRES: data 16-byte aligned; `keep_alive` owns it.
  static Result<std::unique_ptr<PtdFile>> FromMemory(std::string name, const uint8_t* data,
                                                     uint64_t size,
                                                     std::shared_ptr<const void> keep_alive);
  ~PtdFile();
  PtdFile(const PtdFile&) = delete;
  PtdFile& operator=(const PtdFile&) = delete;

  const std::string& name() const { return name_; }
  // The head of the file, [0, head_size()): at least its headers and
  // flatbuffer; all of it for FromMemory. Bulk bytes are not here: read
  // them through the sources.
  const uint8_t* data() const { return data_; }
  uint64_t head_size() const { return mapped_; }
  uint64_t size() const { return size_; }
  const FlatTensorHeader& header() const { return header_; }
  const etpack::ptd_fb::FlatTensor& flat_tensor() const { return *root_; }

  struct Entry {
    std::string key;
    uint32_t segment_index = 0;
    std::optional<TensorLayout> layout;
  };
  const std::vector<Entry>& entries() const { return entries_; }
  const PtdLayout& layout() const { return layout_; }

  // Index into entries() of `key`, or -1.
  int64_t Find(const std::string& key) const;
  // The bytes of entry i's segment (a file range when opened from a path,
  // like PteFile::SegmentSource).
  // REQUIRES: i < entries().size().
  SourcePtr EntrySource(size_t i) const;

  // The FlatTensor rendered like flatc --json --strict-json --defaults-json.
  Result<std::string> ToFlatcJson() const;

 private:
  PtdFile() = default;
  friend class ReaderFactory;  // the only way in: Open() and FromMemory()
  // Open() maps only this much of the file's start (see ReaderFactory).
  static uint64_t MappedPrefix(const uint8_t* head, uint64_t head_size, uint64_t file_size);
  Status Validate();

  std::string name_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;    // the whole file
  uint64_t mapped_ = 0;  // data_ holds [0, mapped_)
  std::shared_ptr<const void> keep_alive_;
  SourcePtr file_;  // set when opened from a path: bulk reads go through it
  FlatTensorHeader header_;
  const etpack::ptd_fb::FlatTensor* root_ = nullptr;
  std::vector<Entry> entries_;
  PtdLayout layout_;
};

}  // namespace etpack

#endif  // ETPACK_PTD_H_
