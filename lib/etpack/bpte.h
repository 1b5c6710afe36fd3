// etpack/bpte.h — bundled programs (.bpte): a program plus test cases.
//
// Two layouts:
//
//  kStandard   the reference format (docs/formats.md §4.1): the whole .pte is the
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
// Reading: etpack/bpte_file.h.

#ifndef ETPACK_BPTE_H_
#define ETPACK_BPTE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "etpack/source.h"
#include "etpack/status.h"
#include "etpack/tensor_layout.h"
#include "etpack/writer.h"

namespace etpack {

class PteFile;  // etpack/pte_file.h

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
  // WholeSourcePlan(FileSource(path)); a program being exported is its PtePlan's
  // artifact, nested without ever being materialized.
  ArtifactPlan program;
  std::vector<BundledTestSuite> suites;
  uint32_t version = 2;  // Files this input was read from that none of the sources above reads
  // (a manifest, a CASES.json, a checkpoint index, the program a repack
  // reads): the plan keeps them (ArtifactPlan::inputs) so that no output
  // replaces them.
  std::vector<SourcePtr> read = {};  // "= {}": initializers that predate it need not name it
};

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
// sizes are consistent. Errors name suite, case and value: kNotFound for a
// method the program lacks, kInvalidArgument for a case that does not fit.
Status CheckAgainstProgram(const std::vector<BundledTestSuite>& suites, const PteFile& program);

}  // namespace etpack

#endif  // ETPACK_BPTE_H_
