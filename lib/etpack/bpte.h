// etpack/bpte.h — bundled programs (.bpte): a program plus test cases.
//
// Two layouts:
//
//  kStandard   the reference format (formats.md §5): the whole .pte is the
//              `program` byte vector inside the BP08 flatbuffer, 32-aligned,
//              test tensor data 16-aligned. Limited to 2 GiB in total by
//              FlatBuffers' 32-bit offsets. etpack plans the flatbuffer
//              around the vector from the program's length alone and streams
//              the program bytes into their slot: the program is never held
//              in memory.
//  kSegmented  etpack's extension (docs/bpte-segments.md): the program and,
//              optionally, large test tensors live in segments after a small
//              flatbuffer with a `bh00` header, aligned so the embedded
//              program can be mapped in place. No size limit.
//
// Writing: PlanBpte(input, options) -> WriteArtifactFile(path, plan.artifact).

#ifndef ETPACK_BPTE_H_
#define ETPACK_BPTE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "etpack/ptd.h"  // TensorLayout
#include "etpack/pte_reader.h"
#include "etpack/source.h"
#include "etpack/status.h"
#include "etpack/writer.h"

namespace etpack::bpte_fb {
struct BundledProgram;
}

namespace etpack {

// One test input or expected output.
struct BundledValue {
  enum class Kind { kTensor, kInt, kBool, kDouble };
  Kind kind = Kind::kInt;
  TensorLayout layout;  // kTensor
  SourcePtr data;       // kTensor: exactly LayoutNbytes(layout) bytes
  int64_t int_val = 0;
  bool bool_val = false;
  double double_val = 0;
};

struct BundledTestCase {
  std::vector<BundledValue> inputs;
  std::vector<BundledValue> expected_outputs;
};

struct BundledTestSuite {
  std::string method_name;
  std::vector<BundledTestCase> test_cases;
};

struct BpteInput {
  // The .pte bytes to embed, as a plan: a .pte file on disk is
  // PlanOfSource(FileSource(path)); a program being exported is its PtePlan's
  // artifact, nested without ever being materialized.
  ArtifactPlan program;
  std::vector<BundledTestSuite> suites;
  uint32_t version = 2;
};

// An ArtifactPlan that is just the bytes of `source` (e.g. an existing file).
ArtifactPlan PlanOfSource(SourcePtr source);

enum class BpteLayout { kStandard, kSegmented };

struct BpteOptions {
  BpteLayout layout = BpteLayout::kStandard;
  // kSegmented: alignment of the program segment in the file. Power of two,
  // at least 128 (so an embedded .pte's own 128-aligned segments stay aligned);
  // 4096 or 16384 lets a loader mmap the program in place.
  uint64_t program_alignment = 128;
  // kSegmented: test tensors of at least this many bytes go to their own
  // 16-aligned segment instead of the flatbuffer.
  uint64_t tensor_segment_threshold = uint64_t{1} << 20;
};

struct BptePlan {
  ArtifactPlan artifact;
  BpteLayout layout = BpteLayout::kStandard;
  uint64_t program_offset = 0;  // absolute offset of the embedded .pte
  uint64_t program_size = 0;
};

// Pass one. Fails with kOutOfRange naming the segmented layout as the way
// out when a standard-layout file would exceed 2 GiB; kInvalidArgument for a
// tensor whose data size differs from its layout's nbytes (naming suite,
// case, input/output index), or bad options.
Result<BptePlan> PlanBpte(const BpteInput& input, const BpteOptions& options = {});

// Checks test cases against the program they test: every suite's method
// exists, each case has exactly as many inputs as the method, and tensor
// sizes are consistent. Errors name suite, case and value.
Status CheckAgainstProgram(const std::vector<BundledTestSuite>& suites, const PteFile& program);

// A mapped, validated .bpte of either layout. Validation includes the
// embedded program (PteFile) and every test tensor.
class BpteFile {
 public:
  // Validates `path`. Only the file's head (headers and flatbuffer) is
  // mapped; segment bytes are read through the file, so opening an 8 GiB
  // file costs neither 8 GiB of address space nor of page cache. A missing
  // file is kNotFound; a malformed one kInvalidArgument naming the field.
  static Result<std::unique_ptr<BpteFile>> Open(const std::string& path);
  static Result<std::unique_ptr<BpteFile>> FromMemory(std::string name, const uint8_t* data,
                                                      uint64_t size,
                                                      std::shared_ptr<const void> keep_alive);
  ~BpteFile();
  BpteFile(const BpteFile&) = delete;
  BpteFile& operator=(const BpteFile&) = delete;

  const std::string& name() const { return name_; }
  // The head of the file, [0, head_size()): at least its headers and
  // flatbuffer; all of it for FromMemory. Bulk bytes are not here: read
  // them through the sources.
  const uint8_t* data() const { return data_; }
  uint64_t head_size() const { return mapped_; }
  uint64_t size() const { return size_; }
  BpteLayout layout() const { return layout_; }
  const etpack::bpte_fb::BundledProgram& bundled() const { return *root_; }

  uint64_t program_offset() const { return program_offset_; }
  uint64_t program_size() const { return program_size_; }
  // The embedded .pte bytes (a file range when opened from a path).
  SourcePtr ProgramSource() const;
  // The embedded program, validated.
  const PteFile& program() const { return *program_; }

  // The test suites with tensor data as sources (for re-bundling).
  Result<std::vector<BundledTestSuite>> Suites() const;

  // The flatbuffer region rendered like flatc --json --strict-json --defaults-json.
  Result<std::string> ToFlatcJson() const;

 private:
  BpteFile() = default;
  friend class ReaderFactory;  // the only way in: Open() and FromMemory()
  // Open() maps only this much of the file's start (see ReaderFactory).
  static uint64_t MappedPrefix(const uint8_t* head, uint64_t head_size, uint64_t file_size);
  Status Validate();
  SourcePtr Range(uint64_t offset, uint64_t length) const;

  std::string name_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;    // the whole file
  uint64_t mapped_ = 0;  // data_ holds [0, mapped_)
  std::shared_ptr<const void> keep_alive_;
  SourcePtr file_;  // set when opened from a path
  BpteLayout layout_ = BpteLayout::kStandard;
  const etpack::bpte_fb::BundledProgram* root_ = nullptr;
  uint64_t flatbuffer_size_ = 0;
  uint64_t segment_base_offset_ = 0;
  uint64_t program_offset_ = 0;
  uint64_t program_size_ = 0;
  std::unique_ptr<PteFile> program_;
};

}  // namespace etpack

#endif  // ETPACK_BPTE_H_
