// Reading a .bpte of either layout: map, tell the layouts apart, validate
// everything once (the embedded program included), then hand out views.
//
// The stock runtime runs no verifier on a bundled program and uses tensor
// data, sizes and dim_order pointers as they are; a file that passes here
// can be loaded and fed to its methods without out-of-bounds reads.

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <utility>

#include "bpte/bpte_format.h"
#include "bpte/bpte_header.h"
#include "bpte/bpte_values.h"
#include "bundled_program_etpack_generated.h"
#include "etpack/bpte_file.h"
#include "flatbuffer/layout_of.h"
#include "flatbuffer/scalar_type.h"
#include "flatbuffer/tree_reader.h"
#include "flatbuffer/verifier_limits.h"
#include "plan/segment_table.h"

namespace etpack {

namespace bfb = etpack::bpte_fb;

using bpte::ForEachValue;
using bpte::SuitePath;

// The segmented layout keeps the flatbuffer [0, flatbuffer_size) in memory
// and opens the embedded program (and reads test data) through the file.
// The standard layout is one flatbuffer, program included: all of it.
uint64_t BpteFile::MappedPrefix(const uint8_t* peek, uint64_t peek_size, uint64_t file_size) const {
  Result<bpte::Header> h = bpte::ParseHeader(peek, peek_size);
  if (!h.ok()) return peek_size;
  if (!h->present) return file_size < FLATBUFFERS_MAX_BUFFER_SIZE ? file_size : peek_size;
  return h->flatbuffer_size <= file_size ? h->flatbuffer_size : peek_size;
}

BpteFile::~BpteFile() = default;

Status BpteFile::Validate() {
  if (size() < 8 || std::memcmp(head() + 4, bpte::kFileIdentifier, 4) != 0) {
    return Corrupt(size() < 8 ? "file is " + std::to_string(size()) +
                                    " bytes, too short for a bundled program"
                              : "file identifier is not 'BP08' (not a bundled program)");
  }
  ETPACK_ASSIGN_OR_RETURN(bpte::Header h, bpte::ParseHeader(head(), size()));
  flatbuffer_size_ = size();
  if (h.present) {
    // As for a .pte's header (program_checks.cc): blame the field that is wrong.
    const uint64_t header_end = bpte::kHeaderOffset + h.length;
    if (header_end > size()) {
      return Corrupt("bh00 header length = " + std::to_string(h.length) +
                     " would end the header at byte " + std::to_string(header_end) +
                     ", past the end of the " + std::to_string(size()) + "-byte file");
    }
    if (h.flatbuffer_size < header_end) {
      return Corrupt("bh00 header flatbuffer size = " + std::to_string(h.flatbuffer_size) +
                     " ends before the header itself (byte " + std::to_string(header_end) +
                     ", from its length = " + std::to_string(h.length) + ")");
    }
    if (h.flatbuffer_size > size()) {
      return Corrupt("bh00 header flatbuffer size = " + std::to_string(h.flatbuffer_size) +
                     " runs past the end of the " + std::to_string(size()) + "-byte file");
    }
    if (h.segment_base_offset < h.flatbuffer_size || h.segment_base_offset > size() ||
        h.segment_data_size > size() - h.segment_base_offset) {
      return Corrupt("bh00 segment data [" + std::to_string(h.segment_base_offset) + ", +" +
                     std::to_string(h.segment_data_size) + ") is not between the flatbuffer end (" +
                     std::to_string(h.flatbuffer_size) + ") and the file end (" +
                     std::to_string(size()) + "); the file is truncated or corrupt");
    }
    flatbuffer_size_ = h.flatbuffer_size;
    segment_base_offset_ = h.segment_base_offset;
  }
  if (flatbuffer_size_ >= FLATBUFFERS_MAX_BUFFER_SIZE) {
    return Corrupt("flatbuffer region of " + std::to_string(flatbuffer_size_) +
                   " bytes exceeds the 2 GiB FlatBuffers limit" +
                   (h.present ? "" : " (a larger bundle needs the segmented layout)"));
  }
  ETPACK_RETURN_IF_ERROR(CheckInHead(flatbuffer_size_));
  ETPACK_RETURN_IF_ERROR(VerifyFlatbuffer(
      SchemaId::kBundledProgram,
      [](flatbuffers::Verifier& v) { return bfb::VerifyBundledProgramBuffer(v); }, head(),
      flatbuffer_size_, "the BundledProgram flatbuffer", "truncated or corrupt"));
  root_ = bfb::GetBundledProgram(head());
  const bfb::BundledProgram& root = *root_;
  const auto* program = root.program();
  const int32_t ps = root.program_segment();
  const auto* segments = root.segments();
  const uint32_t nseg = segments ? segments->size() : 0;

  // The three marks of the segmented layout must agree.
  if (h.present) {
    if (ps < 0) {
      return Corrupt("ambiguous layout: bh00 header at offset 8 but program_segment = " +
                     std::to_string(ps) + " (a segmented file names its program segment)");
    }
    if (program == nullptr) {
      return Corrupt(
          "segmented layout (bh00 header) but `program` is absent; it must be "
          "present and empty");
    }
    if (program->size() != 0) {
      return Corrupt("ambiguous layout: bh00 header at offset 8 and program_segment = " +
                     std::to_string(ps) + ", but `program` holds " +
                     std::to_string(program->size()) + " bytes inline (must be empty)");
    }
    layout_ = BpteLayout::kSegmented;
    if (segments == nullptr) return Corrupt("segmented layout but `segments` is missing");
    ETPACK_RETURN_IF_ERROR(CheckSegmentTable(segments, h.segment_base_offset, h.segment_data_size));
    if (static_cast<uint32_t>(ps) >= nseg) {
      return Corrupt("program_segment = " + std::to_string(ps) +
                     " is out of range: " + std::to_string(nseg) + " segments");
    }
    program_offset_ = h.segment_base_offset + segments->Get(ps)->offset();
    program_size_ = segments->Get(ps)->size();
    if (program_offset_ % bpte::kMinProgramSegmentAlignment != 0) {
      return Corrupt("program segment at file offset " + std::to_string(program_offset_) +
                     " is not " + std::to_string(bpte::kMinProgramSegmentAlignment) +
                     "-byte aligned");
    }
  } else {
    if (ps != bpte::kNoSegment) {
      return Corrupt("ambiguous layout: program_segment = " + std::to_string(ps) +
                     " but there is no bh00 header at offset 8");
    }
    if (program == nullptr) return Corrupt("program is missing");
    if (program->size() == 0) {
      return Corrupt(
          "program is empty (and there is no bh00 header, so the program is not "
          "in a segment either)");
    }
    // Without a header there is no segment data for a table to point into.
    ETPACK_RETURN_IF_ERROR(CheckSegmentTable(segments, 0, 0));
    layout_ = BpteLayout::kStandard;
    program_offset_ = static_cast<uint64_t>(program->data() - head());
    program_size_ = program->size();
    if (program_offset_ % bpte::kProgramVectorAlignment != 0) {
      return Corrupt("program data at file offset " + std::to_string(program_offset_) + " is not " +
                     std::to_string(bpte::kProgramVectorAlignment) + "-byte aligned (force_align)");
    }
  }
  if (program_size_ == 0) return Corrupt("the embedded program is empty");
  // Opened from a file, the program may lie past the head in memory. In
  // memory it is 16-byte aligned: the buffer is, and so is its offset.
  Result<std::unique_ptr<PteFile>> pte =
      from_file() ? PteFile::Open("embedded program", ProgramSource())
                  : PteFile::FromMemory("embedded program", head() + program_offset_, program_size_,
                                        keep_alive());
  if (!pte.ok()) return pte.status();
  program_ = std::move(pte).value();

  // Test values.
  const auto* suites = root.method_test_suites();
  if (suites == nullptr) return Corrupt("method_test_suites is missing");
  for (uint32_t s = 0; s < suites->size(); ++s) {
    const auto* suite = suites->Get(s);
    const std::string spath = SuitePath(s, *suite);
    if (suite->method_name() == nullptr) return Corrupt(spath + ".method_name is missing");
    if (suite->test_cases() == nullptr) return Corrupt(spath + ".test_cases is missing");
    for (uint32_t c = 0; c < suite->test_cases()->size(); ++c) {
      const auto* tc = suite->test_cases()->Get(c);
      const std::string cpath = spath + ".test_cases[" + std::to_string(c) + "]";
      if (tc->inputs() == nullptr) return Corrupt(cpath + ".inputs is missing");
      if (tc->expected_outputs() == nullptr) {
        return Corrupt(cpath + ".expected_outputs is missing");
      }
    }
  }
  return ForEachValue(root, [&](const bfb::Value& v, const std::string& path) -> Status {
    if (v.val_type() == bfb::ValueUnion::NONE || v.val() == nullptr) {
      return Corrupt(path + ": no value (val_type NONE)");
    }
    if (v.val_type() > bfb::ValueUnion::MAX) {
      return Corrupt(path + ".val_type = " + std::to_string(static_cast<int>(v.val_type())) +
                     " is not a known value kind (Tensor, Int, Bool, Double)");
    }
    const bfb::Tensor* t = v.val_as_Tensor();
    if (t == nullptr) return Status::OK();
    if (t->sizes() == nullptr) return Corrupt(path + ".sizes is missing");
    if (t->dim_order() == nullptr) return Corrupt(path + ".dim_order is missing");
    const TensorLayout layout = LayoutOf(*t);
    Result<uint64_t> nbytes = LayoutNbytes(layout, path);
    if (!nbytes.ok()) return Corrupt(nbytes.status().message());
    const int32_t ds = t->data_segment();
    uint64_t offset = 0, have = 0;
    if (ds == bpte::kNoSegment) {
      if (t->data() == nullptr) return Corrupt(path + ".data is missing");
      offset = static_cast<uint64_t>(t->data()->data() - head());
      have = t->data()->size();
    } else {
      if (layout_ != BpteLayout::kSegmented) {
        return Corrupt(path + ".data_segment = " + std::to_string(ds) +
                       " in a standard-layout file (no bh00 header)");
      }
      if (ds < 0 || static_cast<uint32_t>(ds) >= nseg) {
        return Corrupt(path + ".data_segment = " + std::to_string(ds) +
                       " is out of range: " + std::to_string(nseg) + " segments");
      }
      if (ds == ps) {
        return Corrupt(path + ".data_segment = " + std::to_string(ds) +
                       " is the program's segment");
      }
      if (t->data() != nullptr && t->data()->size() != 0) {
        return Corrupt(path + ": data_segment = " + std::to_string(ds) + " but data holds " +
                       std::to_string(t->data()->size()) + " bytes inline (must be empty)");
      }
      offset = segment_base_offset_ + segments->Get(ds)->offset();
      have = segments->Get(ds)->size();
    }
    if (have != *nbytes) {
      return Corrupt(path + ": tensor " + DescribeLayout(layout) + " needs " +
                     std::to_string(*nbytes) + " bytes but its data " +
                     (ds == bpte::kNoSegment ? std::string("holds ")
                                             : "segment " + std::to_string(ds) + " holds ") +
                     std::to_string(have));
    }
    if (have > 0 && offset % bpte::kTensorDataAlignment != 0) {
      return Corrupt(path + ": tensor data at file offset " + std::to_string(offset) + " is not " +
                     std::to_string(bpte::kTensorDataAlignment) + "-byte aligned");
    }
    return Status::OK();
  });
}

SourcePtr BpteFile::ProgramSource() const { return RangeSource(program_offset_, program_size_); }

Result<std::vector<BundledTestSuite>> BpteFile::Suites() const {
  const bfb::BundledProgram& root = *root_;
  auto convert = [&](const bfb::Value& v) {
    BundledValue out;
    switch (v.val_type()) {
      case bfb::ValueUnion::Int:
        out.kind = BundledValue::Kind::kInt;
        out.int_val = v.val_as_Int()->int_val();
        break;
      case bfb::ValueUnion::Bool:
        out.kind = BundledValue::Kind::kBool;
        out.bool_val = v.val_as_Bool()->bool_val();
        break;
      case bfb::ValueUnion::Double:
        out.kind = BundledValue::Kind::kDouble;
        out.double_val = v.val_as_Double()->double_val();
        break;
      default: {  // Tensor: Validate admits no other kind
        const bfb::Tensor& t = *v.val_as_Tensor();
        out.kind = BundledValue::Kind::kTensor;
        out.layout = LayoutOf(t);
        if (t.data_segment() == bpte::kNoSegment) {
          out.data =
              RangeSource(static_cast<uint64_t>(t.data()->data() - head()), t.data()->size());
        } else {
          const auto* seg = root.segments()->Get(static_cast<uint32_t>(t.data_segment()));
          out.data = RangeSource(segment_base_offset_ + seg->offset(), seg->size());
        }
      }
    }
    return out;
  };
  std::vector<BundledTestSuite> suites;
  for (const auto* suite : *root.method_test_suites()) {
    BundledTestSuite s;
    s.method_name = suite->method_name()->str();
    for (const auto* tc : *suite->test_cases()) {
      BundledTestCase c;
      for (const auto* v : *tc->inputs()) c.inputs.push_back(convert(*v));
      for (const auto* v : *tc->expected_outputs()) c.expected_outputs.push_back(convert(*v));
      s.test_cases.push_back(std::move(c));
    }
    suites.push_back(std::move(s));
  }
  return suites;
}

Result<std::string> BpteFile::ToFlatcJson() const {
  return FlatbufferToFlatcJson(SchemaId::kBundledProgram, head(), flatbuffer_size_);
}

namespace {

const char* KindName(BundledValue::Kind k) {
  switch (k) {
    case BundledValue::Kind::kTensor: return "Tensor";
    case BundledValue::Kind::kInt: return "Int";
    case BundledValue::Kind::kBool: return "Bool";
    case BundledValue::Kind::kDouble: return "Double";
  }
  return "unknown";
}

Status CheckTensorBytes(const BundledValue& v, const std::string& path) {
  if (v.kind != BundledValue::Kind::kTensor) return Status::OK();
  ETPACK_ASSIGN_OR_RETURN(uint64_t nbytes, LayoutNbytes(v.layout, path));
  const uint64_t have = v.data ? v.data->size() : 0;
  if (have != nbytes) {
    return InvalidArgument(path + ": tensor " + DescribeLayout(v.layout) + " needs " +
                           std::to_string(nbytes) + " bytes but its data holds " +
                           std::to_string(have));
  }
  return Status::OK();
}

}  // namespace

Status CheckAgainstProgram(const std::vector<BundledTestSuite>& suites, const PteFile& program) {
  std::map<std::pair<uint32_t, uint32_t>, const PteTensor*> tensor_at;  // (method, value)
  const std::vector<PteTensor> tensors = program.Tensors();
  for (const PteTensor& t : tensors) tensor_at[{t.method, t.value}] = &t;
  const std::vector<PteMethod>& methods = program.methods();
  for (size_t s = 0; s < suites.size(); ++s) {
    const BundledTestSuite& suite = suites[s];
    const std::string spath = "suite " + std::to_string(s) + " '" + suite.method_name + "'";
    const PteMethod* method = nullptr;
    uint32_t method_index = 0;
    std::string names;
    for (uint32_t m = 0; m < methods.size(); ++m) {
      if (methods[m].name == suite.method_name) {
        method = &methods[m];
        method_index = m;
      }
      names += (names.empty() ? "" : ", ") + methods[m].name;
    }
    if (method == nullptr) {
      return NotFound(spath + ": " + program.name() + " has no method '" + suite.method_name +
                      "' (methods: " + names + ")");
    }
    const size_t ninputs = method->inputs.size();
    for (size_t c = 0; c < suite.test_cases.size(); ++c) {
      const BundledTestCase& tc = suite.test_cases[c];
      const std::string cpath = spath + " test_cases[" + std::to_string(c) + "]";
      if (tc.inputs.size() != ninputs) {
        return InvalidArgument(cpath + ": " + std::to_string(tc.inputs.size()) +
                               " inputs, but method '" + suite.method_name + "' takes " +
                               std::to_string(ninputs));
      }
      for (size_t i = 0; i < tc.inputs.size(); ++i) {
        const BundledValue& v = tc.inputs[i];
        const std::string path = cpath + " inputs[" + std::to_string(i) + "]";
        ETPACK_RETURN_IF_ERROR(CheckTensorBytes(v, path));
        const int32_t vi = method->inputs[i];
        if (vi < 0) continue;  // not ours to judge
        auto it = tensor_at.find({method_index, static_cast<uint32_t>(vi)});
        if (it == tensor_at.end()) continue;  // not a tensor, or out of range
        const std::string method_input = "method '" + suite.method_name + "' input " +
                                         std::to_string(i) + " (values[" + std::to_string(vi) +
                                         "])";
        if (v.kind != BundledValue::Kind::kTensor) {
          return InvalidArgument(path + " is " + KindName(v.kind) + " but " + method_input +
                                 " is a Tensor");
        }
        const TensorLayout& ml = it->second->layout;
        if (v.layout.scalar_type != ml.scalar_type || v.layout.sizes.size() != ml.sizes.size()) {
          return InvalidArgument(path + ": tensor " + DescribeLayout(v.layout) +
                                 " does not match " + method_input + ", a " +
                                 ScalarTypeName(ml.scalar_type) + " tensor of rank " +
                                 std::to_string(ml.sizes.size()));
        }
      }
      for (size_t i = 0; i < tc.expected_outputs.size(); ++i) {
        ETPACK_RETURN_IF_ERROR(CheckTensorBytes(
            tc.expected_outputs[i], cpath + " expected_outputs[" + std::to_string(i) + "]"));
      }
    }
  }
  return Status::OK();
}

}  // namespace etpack
