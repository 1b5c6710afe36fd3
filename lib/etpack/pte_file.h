// etpack/pte_file.h — open, validate and read a .pte.
//
// PteFile::Open validates all of the file before it returns (see
// etpack/artifact_file.h for the ways to open and the error codes):
// identifier, extended header, the FlatBuffers verifier, every segment and
// constant/mutable sub-offset in bounds, delegate and named-data references
// in range, alignments. A failure names the file, the field and the value.
//
// After that the program is described by plain values, no FlatBuffers
// types needed: methods() with their delegates, Tensors() with dtype,
// shape, dim_order, size and where their bytes live, layout() for the
// segment table, named_data(). TensorSource() and SegmentSource() read the
// bytes.

#ifndef ETPACK_PTE_FILE_H_
#define ETPACK_PTE_FILE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "etpack/artifact_file.h"
#include "etpack/pte.h"
#include "etpack/source.h"
#include "etpack/status.h"
#include "etpack/tensor_layout.h"

namespace etpack::pte_fb {
struct Program;
}

namespace etpack {

// The `eh00` extended header at offset 8, as read.
struct ExtendedHeader {
  bool present = false;
  uint32_t length = 0;  // header length field (32; 24 in legacy files)
  uint64_t program_size = 0;
  uint64_t segment_base_offset = 0;
  uint64_t segment_data_size = 0;  // 0 in legacy 24-byte headers
};

// A delegate call of a method and where its payload is.
struct PteDelegate {
  std::string backend;      // the backend id
  bool in_segment = false;  // the payload is segment `index` (else inline entry `index`)
  uint32_t index = 0;       // into layout().segments or the inline delegate data
  uint64_t size = 0;        // payload bytes
};

// One method (execution plan) of the program.
struct PteMethod {
  std::string name;
  uint64_t value_count = 0;        // values of every kind, tensors included
  std::vector<int32_t> inputs;     // value indices
  std::vector<int32_t> outputs;    // value indices
  uint64_t instruction_count = 0;  // over all chains
  std::vector<PteDelegate> delegates;
};

// Where a tensor's bytes come from when the program runs.
enum class TensorData {
  kNone,      // none in the program: an input or runtime-allocated tensor
  kConstant,  // constant buffer `buffer_index` of this file
  kMutable,   // memory-planned; initial value in this file when buffer_index > 0
  kExternal,  // in a .ptd, under `key`
};
const char* TensorDataName(TensorData data);  // "none", "constant", ...

// A Tensor value of a method.
struct PteTensor {
  uint32_t method = 0;  // index into PteFile::methods()
  uint32_t value = 0;   // index into the method's values
  TensorLayout layout;
  // layout's bytes; absent when the dtype has no defined size or a size is
  // negative (possible only for tensors without data in this file).
  std::optional<uint64_t> nbytes;
  TensorData data = TensorData::kNone;
  uint32_t buffer_index = 0;  // kConstant, kMutable: the data_buffer_idx
  // extra_tensor_info.fully_qualified_name, "" when absent: for kExternal
  // the key in the .ptd; for others a name (a constant's, a buffer's).
  std::string key;
};

// A key of the program's named data and the segment holding its bytes.
struct PteNamedData {
  std::string key;
  uint32_t segment_index = 0;
};

class PteFile : public ArtifactFileOf<PteFile> {
 public:
  // Open(path), Open(name, file) and FromMemory(...): see ArtifactFileOf.
  ~PteFile() override;

  const ExtendedHeader& header() const { return header_; }
  // The segment table with roles (constants, mutable, delegate, named data)
  // as found in the program.
  const PteSegmentMap& layout() const { return layout_; }
  const std::vector<PteMethod>& methods() const { return methods_; }
  const std::vector<PteNamedData>& named_data() const { return named_data_; }
  // Where each constant buffer lies in the file (entry 0 is the empty
  // placeholder): in the constant segment, up to the next larger offset or
  // the segment's end; or, in files without one, its inline storage.
  const std::vector<ByteRange>& constant_buffers() const { return constant_buffers_; }
  // Where each initial value of a memory-planned tensor lies (by
  // data_buffer_idx; entry 0 is the placeholder), in the first mutable data
  // segment up to the next larger offset or the segment's end; empty when
  // the file has none.
  const std::vector<ByteRange>& mutable_buffers() const { return mutable_buffers_; }

  // Every Tensor value of every method, in order.
  std::vector<PteTensor> Tensors() const;
  // The nbytes of `tensor` from where they live in this file: kConstant, or
  // kMutable with an initial value. kNotFound for a tensor whose bytes are
  // elsewhere (kExternal: in a .ptd) or nowhere.
  // REQUIRES: tensor came from this file's Tensors().
  Result<SourcePtr> TensorSource(const PteTensor& tensor) const;
  // Bytes of segment i (see RangeSource()).
  // REQUIRES: i < layout().segments.size().
  SourcePtr SegmentSource(size_t i) const;
  // The payload of a delegate: its segment, or its inline bytes in the
  // flatbuffer. REQUIRES: delegate came from this file's methods().
  SourcePtr DelegateSource(const PteDelegate& delegate) const;

  // The program as a writer input: the structure as a tree, and constants,
  // mutable values, delegate payloads and named data as PteInput's lists of
  // sources borrowing this file (whether they were inline or in segments);
  // delegates are re-pointed INLINE. PlanPte(ToInput()) re-lays the file
  // out; this is how `etpack repack` works. An integrity table
  // (docs/integrity.md) is left out: it describes this layout only.
  Result<PteInput> ToInput() const;

  // The writer options this file was written with, as far as the file
  // records them, so that a repack changes only what it is asked to and
  // repacking is a fixed point. Each alignment is the documented default
  // (PteOptions) when the writer's rule (every item at the previous one's
  // end rounded up to the alignment) explains where the file's items sit,
  // else the nearest power of two (up to 65536) that does: the segment
  // alignment from the segment base and the segment offsets, the constant
  // alignment from the constant offsets and sizes. Inline delegate data
  // shows only what its offsets divide, so the default stays unless they
  // are less aligned. Delegates count as extracted unless a non-empty
  // payload is inline. Constants count as deduplicated when two that
  // tensors read share an offset.
  PteOptions InferredOptions() const;

  // The program rendered like `flatc --json --strict-json --defaults-json`.
  Result<std::string> ToFlatcJson() const;

  // The FlatBuffers root, for a field the views above lack. Using it needs
  // the generated "program_etpack_generated.h"; prefer the views.
  const pte_fb::Program& program() const { return *program_; }

 private:
  friend class ArtifactFileOf<PteFile>;
  PteFile() = default;
  uint64_t MappedPrefix(const uint8_t* peek, uint64_t peek_size, uint64_t file_size) const override;
  Status Validate() override;
  Status CheckFile();
  void BuildViews();

  ExtendedHeader header_;
  const pte_fb::Program* program_ = nullptr;
  PteSegmentMap layout_;
  std::vector<PteMethod> methods_;
  std::vector<PteNamedData> named_data_;
  std::vector<ByteRange> constant_buffers_;
  std::vector<ByteRange> mutable_buffers_;  // of mutable_data_segments[0]
};

}  // namespace etpack

#endif  // ETPACK_PTE_FILE_H_
