// Pass one for .bpte. The BundledProgram flatbuffer is built with the
// generated builder rather than the schema-driven tree builder because the
// standard layout depends on creation order: FlatBufferBuilder fills its
// buffer back to front, so the `program` vector, created first, ends up
// last. Nothing points past it, so the program's bytes can be spliced in at
// the end of the buffer, after the small flatbuffer has been finished,
// without touching a single offset: the program is never in memory.

#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "bpte/bpte_format.h"
#include "bpte/bpte_header.h"
#include "bundled_program_etpack_generated.h"
#include "etpack/bpte.h"
#include "flatbuffer/verifier_limits.h"
#include "plan/assembler.h"
#include "plan/header_insert.h"
#include "plan/segments.h"
#include "writer/input_files.h"

namespace etpack {

namespace {

namespace bfb = etpack::bpte_fb;
using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

// FlatBuffers' own limit on a whole buffer (offsets are 32-bit, signed in
// places); a standard-layout file must stay below it.
constexpr uint64_t kFlatbufferLimit = FLATBUFFERS_MAX_BUFFER_SIZE;
// Inline test tensors are read into the builder, so their bytes are held in
// memory while planning. Bulk test data belongs in segments.
constexpr uint64_t kMaxInlineTensorBytes = uint64_t{256} << 20;
constexpr uint64_t kMaxInlineTotalBytes = uint64_t{1} << 30;

std::string ValuePath(const BpteInput& in, size_t s, size_t c, const char* list, size_t i) {
  return "method_test_suites[" + std::to_string(s) + "] '" + in.suites[s].method_name +
         "' test_cases[" + std::to_string(c) + "]." + list + "[" + std::to_string(i) + "]";
}

// A test value as planned: where its tensor bytes go.
struct PlannedValue {
  const BundledValue* value = nullptr;
  std::string path;
  uint64_t nbytes = 0;
  int32_t segment = bpte::kNoSegment;  // index into the segment table
};

class BptePlanner {
 public:
  BptePlanner(const BpteInput& input, const BpteOptions& options)
      : in_(input), opt_(options), segmented_(options.layout == BpteLayout::kSegmented) {}

  Result<BptePlan> Plan() {
    if (segmented_) {
      ETPACK_RETURN_IF_ERROR(CheckPowerOfTwo(opt_.program_alignment, "program_alignment"));
      if (opt_.program_alignment < bpte::kMinProgramAlignmentOption) {
        return InvalidArgument("program_alignment = " + std::to_string(opt_.program_alignment) +
                               " is below " + std::to_string(bpte::kMinProgramAlignmentOption) +
                               " (the embedded program's own segment alignment)");
      }
    }
    if (in_.program.file_size == 0) {
      return InvalidArgument("program: the embedded program is empty");
    }
    // Its placements are shifted, not re-planned: one running past the
    // program's end would land in what follows it.
    Result<Segment> program = NestedSegment(
        in_.program, segmented_ ? opt_.program_alignment : bpte::kProgramVectorAlignment);
    if (!program.ok()) return program.status().WithContext("program");
    segments_.push_back(std::move(*program));
    ETPACK_RETURN_IF_ERROR(PlanValues());
    ETPACK_RETURN_IF_ERROR(CheckTables());
    try {
      return segmented_ ? Segmented() : Standard();
    } catch (const std::bad_alloc&) {
      return OutOfRange("out of memory building the BundledProgram flatbuffer");
    }
  }

 private:
  // Checks every value and decides which tensors go to segments. Segment 0
  // is the program's in the segmented layout.
  Status PlanValues() {
    uint64_t inline_total = 0;
    int32_t next_segment = 1;
    for (size_t s = 0; s < in_.suites.size(); ++s) {
      for (size_t c = 0; c < in_.suites[s].test_cases.size(); ++c) {
        const BundledTestCase& tc = in_.suites[s].test_cases[c];
        for (int out = 0; out < 2; ++out) {
          const auto& list = out ? tc.expected_outputs : tc.inputs;
          for (size_t i = 0; i < list.size(); ++i) {
            PlannedValue pv;
            pv.value = &list[i];
            pv.path = ValuePath(in_, s, c, out ? "expected_outputs" : "inputs", i);
            if (pv.value->kind == BundledValue::Kind::kTensor) {
              ETPACK_RETURN_IF_ERROR(PlanTensor(pv, next_segment, inline_total));
            }
            values_.push_back(std::move(pv));
          }
        }
      }
    }
    return Status::OK();
  }

  Status PlanTensor(PlannedValue& pv, int32_t& next_segment, uint64_t& inline_total) {
    const BundledValue& v = *pv.value;
    ETPACK_ASSIGN_OR_RETURN(pv.nbytes, LayoutNbytes(v.layout, pv.path));
    if (v.data == nullptr) return InvalidArgument(pv.path + ": tensor data source is null");
    if (v.data->size() != pv.nbytes) {
      return InvalidArgument(pv.path + ": tensor " + DescribeLayout(v.layout) + " needs " +
                             std::to_string(pv.nbytes) + " bytes but its data (" +
                             v.data->Describe() + ") holds " + std::to_string(v.data->size()));
    }
    if (segmented_ && pv.nbytes >= opt_.tensor_segment_threshold) {
      if (next_segment == INT32_MAX) return OutOfRange(pv.path + ": too many tensor segments");
      pv.segment = next_segment++;
      segments_.push_back(SourceSegment(v.data, bpte::kTensorDataAlignment));
      return Status::OK();
    }
    const std::string way_out =
        segmented_ ? "; lower tensor_segment_threshold so it goes to a segment"
                   : "; use --layout segmented, which stores large test tensors in segments";
    if (pv.nbytes > kMaxInlineTensorBytes) {
      return OutOfRange(pv.path + ": " + std::to_string(pv.nbytes) +
                        " bytes of tensor data is above the " +
                        std::to_string(kMaxInlineTensorBytes >> 20) +
                        " MiB etpack keeps inline in the flatbuffer" + way_out);
    }
    inline_total += pv.nbytes + bpte::kTensorDataAlignment;
    if (inline_total > kMaxInlineTotalBytes) {
      return OutOfRange(pv.path + ": inline test tensor data exceeds " +
                        std::to_string(kMaxInlineTotalBytes >> 20) + " MiB in total" + way_out);
    }
    return Status::OK();
  }

  // Readers verify the BundledProgram with the verifier's default limits:
  // a root, a table per suite, per case and per value and its member, and
  // per segment in the segmented layout.
  Status CheckTables() const {
    uint64_t tables = 1 + (segmented_ ? segments_.size() : 0), cases = 0;
    for (const BundledTestSuite& suite : in_.suites) {
      tables += 1 + suite.test_cases.size();
      cases += suite.test_cases.size();
    }
    tables += 2 * static_cast<uint64_t>(values_.size());
    return CheckTableCount(tables, std::to_string(values_.size()) + " test values in " +
                                       std::to_string(cases) + " cases");
  }

  Result<Offset<bfb::Tensor>> BuildTensor(FlatBufferBuilder& fbb, const PlannedValue& pv) {
    const TensorLayout& l = pv.value->layout;
    auto sizes = fbb.CreateVector(l.sizes);
    auto dim_order = fbb.CreateVector(l.dim_order);
    Offset<flatbuffers::Vector<uint8_t>> data;
    if (pv.segment == bpte::kNoSegment) {
      Result<std::vector<uint8_t>> bytes = ReadAll(*pv.value->data, kMaxInlineTensorBytes);
      if (!bytes.ok()) return bytes.status().WithContext(pv.path);
      if (bytes->size() != pv.nbytes) {
        return InvalidArgument(pv.path + ": data source returned " + std::to_string(bytes->size()) +
                               " bytes, expected " + std::to_string(pv.nbytes));
      }
      fbb.ForceVectorAlignment(bytes->size(), 1, bpte::kTensorDataAlignment);
      data = fbb.CreateVector(*bytes);
    } else {
      data = fbb.CreateVector(std::vector<uint8_t>{});
    }
    return bfb::CreateTensor(fbb, static_cast<etpack::pte_fb::ScalarType>(l.scalar_type), sizes,
                             data, dim_order, pv.segment);
  }

  Result<Offset<bfb::Value>> BuildValue(FlatBufferBuilder& fbb, const PlannedValue& pv) {
    const BundledValue& v = *pv.value;
    switch (v.kind) {
      case BundledValue::Kind::kTensor: {
        ETPACK_ASSIGN_OR_RETURN(auto t, BuildTensor(fbb, pv));
        return bfb::CreateValue(fbb, bfb::ValueUnion::Tensor, t.Union());
      }
      case BundledValue::Kind::kInt:
        return bfb::CreateValue(fbb, bfb::ValueUnion::Int, bfb::CreateInt(fbb, v.int_val).Union());
      case BundledValue::Kind::kBool:
        return bfb::CreateValue(fbb, bfb::ValueUnion::Bool,
                                bfb::CreateBool(fbb, v.bool_val).Union());
      case BundledValue::Kind::kDouble:
        return bfb::CreateValue(fbb, bfb::ValueUnion::Double,
                                bfb::CreateDouble(fbb, v.double_val).Union());
    }
    return InvalidArgument(pv.path + ": unknown value kind");
  }

  // Everything but the program vector, in input order (values_ follows it).
  Result<Offset<flatbuffers::Vector<Offset<bfb::BundledMethodTestSuite>>>> Suites(
      FlatBufferBuilder& fbb) {
    size_t next = 0;
    std::vector<Offset<bfb::BundledMethodTestSuite>> suites;
    for (const BundledTestSuite& suite : in_.suites) {
      std::vector<Offset<bfb::BundledMethodTestCase>> cases;
      for (const BundledTestCase& tc : suite.test_cases) {
        std::vector<Offset<bfb::Value>> lists[2];
        for (int out = 0; out < 2; ++out) {
          const size_t n = out ? tc.expected_outputs.size() : tc.inputs.size();
          for (size_t i = 0; i < n; ++i) {
            ETPACK_ASSIGN_OR_RETURN(auto v, BuildValue(fbb, values_[next++]));
            lists[out].push_back(v);
          }
        }
        // One statement each: the order in which a call's arguments are
        // evaluated is the compiler's (GCC 12 on x86_64 goes right to left,
        // clang left to right), and the order of creation is the layout.
        // Outputs first, as GCC built them, so GCC's bytes stay what they
        // were and every compiler's are the same.
        auto outputs = fbb.CreateVector(lists[1]);
        auto inputs = fbb.CreateVector(lists[0]);
        cases.push_back(bfb::CreateBundledMethodTestCase(fbb, inputs, outputs));
      }
      auto name = fbb.CreateString(suite.method_name);
      suites.push_back(bfb::CreateBundledMethodTestSuite(fbb, name, fbb.CreateVector(cases)));
    }
    return fbb.CreateVector(suites);
  }

  Result<BptePlan> Standard() {
    const uint64_t n = in_.program.file_size;
    if (n >= kFlatbufferLimit) return TooLarge(n);

    FlatBufferBuilder fbb(4096);
    // Created first, so it is the last object in the finished buffer. The
    // placeholder is not empty because PreAlign ignores empty vectors, and
    // Finish must pad the buffer to the vector's alignment.
    const std::vector<uint8_t> placeholder(bpte::kProgramVectorAlignment, 0);
    fbb.ForceVectorAlignment(placeholder.size(), 1, bpte::kProgramVectorAlignment);
    auto program = fbb.CreateVector(placeholder);
    ETPACK_ASSIGN_OR_RETURN(auto suites, Suites(fbb));
    fbb.Finish(bfb::CreateBundledProgram(fbb, in_.version, suites, program),
               bfb::BundledProgramIdentifier());
    std::vector<uint8_t> head(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
    fbb.Clear();

    const auto* vec = bfb::GetBundledProgram(head.data())->program();
    const uint64_t data_offset = static_cast<uint64_t>(vec->data() - head.data());
    if (data_offset + placeholder.size() != head.size() ||
        data_offset % bpte::kProgramVectorAlignment != 0) {
      return InvalidArgument(
          "internal: the program vector is not at the 32-aligned end of the "
          "BundledProgram flatbuffer (data at " +
          std::to_string(data_offset) + " of " + std::to_string(head.size()) + " bytes)");
    }
    head.resize(data_offset);  // the program's bytes take the placeholder's place
    // The vector's length field sits right before its data.
    StoreLE32(head.data() + data_offset - sizeof(flatbuffers::uoffset_t), static_cast<uint32_t>(n));
    // No header: the program follows the head as its only segment, at
    // data_offset since that is 32-aligned.
    ETPACK_ASSIGN_OR_RETURN(SegmentOffsets layout,
                            LayoutSegments(segments_, bpte::kProgramVectorAlignment));
    ETPACK_ASSIGN_OR_RETURN(Assembly a, Assemble(std::move(head), nullptr,
                                                 bpte::kProgramVectorAlignment, segments_, layout));
    if (a.artifact.file_size >= kFlatbufferLimit) return TooLarge(a.artifact.file_size);

    BptePlan plan;
    plan.layout = BpteLayout::kStandard;
    plan.program_offset = a.head.segment_base_offset;
    plan.program_size = n;
    plan.artifact = FinishedArtifact(std::move(a.artifact), Inputs(), false);
    AddProgramIntegrity(plan);
    return plan;
  }

  // The embedded program's integrity tables, moved to where it lands: the
  // writer computes them while it streams the .bpte.
  void AddProgramIntegrity(BptePlan& plan) const {
    for (IntegrityTableSpec t : in_.program.integrity) {
      t.origin += plan.program_offset;
      t.table_offset += plan.program_offset;
      for (ByteRange& r : t.ranges) r.offset += plan.program_offset;
      plan.artifact.integrity.push_back(std::move(t));
    }
  }

  // What the .bpte must not overwrite (ArtifactPlan::inputs): the program,
  // the files test values came from, and what the input was read from.
  std::vector<SourcePtr> Inputs() const {
    InputFiles files;
    files.Add(in_.program);
    for (const BundledTestSuite& suite : in_.suites) {
      for (const BundledTestCase& c : suite.test_cases) {
        for (const auto* values : {&c.inputs, &c.expected_outputs}) {
          for (const BundledValue& v : *values) files.Add(v.data);
        }
      }
    }
    files.Add(in_.read);
    return files.Take();
  }

  Status TooLarge(uint64_t size) const {
    return OutOfRange("a standard-layout .bpte holding a " + std::to_string(in_.program.file_size) +
                      "-byte program would be " +
                      (size == in_.program.file_size ? "at least " : "") + std::to_string(size) +
                      " bytes, beyond the 2 GiB FlatBuffers limit; the segmented layout has no "
                      "size limit");
  }

  Result<BptePlan> Segmented() {
    // Segment 0 (the program) starts at the base, which is program_alignment
    // aligned; tensor segments need only their data alignment.
    ETPACK_ASSIGN_OR_RETURN(SegmentOffsets layout,
                            LayoutSegments(segments_, bpte::kTensorDataAlignment));

    FlatBufferBuilder fbb(4096);
    ETPACK_ASSIGN_OR_RETURN(auto suites, Suites(fbb));
    // Present but empty, so a reader that knows nothing of segments finds
    // an empty program instead of none.
    auto program = fbb.CreateVector(std::vector<uint8_t>{});
    std::vector<Offset<bfb::DataSegment>> table;
    for (size_t j = 0; j < segments_.size(); ++j) {
      table.push_back(bfb::CreateDataSegment(fbb, layout.offsets[j], segments_[j].size));
    }
    fbb.Finish(
        bfb::CreateBundledProgram(fbb, in_.version, suites, program, 0, fbb.CreateVector(table)),
        bfb::BundledProgramIdentifier());
    std::vector<uint8_t> head(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
    fbb.Clear();

    ETPACK_ASSIGN_OR_RETURN(Assembly a, Assemble(std::move(head), &bpte::kHeaderCodec,
                                                 opt_.program_alignment, segments_, layout));
    BptePlan plan;
    plan.layout = BpteLayout::kSegmented;
    plan.program_offset = a.head.segment_base_offset + layout.offsets[0];
    plan.program_size = in_.program.file_size;
    plan.artifact = FinishedArtifact(std::move(a.artifact), Inputs(), false);
    AddProgramIntegrity(plan);
    return plan;
  }

  const BpteInput& in_;
  const BpteOptions& opt_;
  const bool segmented_;
  std::vector<PlannedValue> values_;
  // The program, then the tensor segments in value order.
  std::vector<Segment> segments_;
};

}  // namespace

Result<BptePlan> PlanBpte(const BpteInput& input, const BpteOptions& options) {
  return BptePlanner(input, options).Plan();
}

}  // namespace etpack
