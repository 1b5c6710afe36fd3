// etpack/bpte_file.h — open, validate and read a bundled program (.bpte).
//
// BpteFile::Open validates all of the file before it returns (see
// etpack/artifact_file.h for the ways to open and the error codes), in
// either layout (etpack/bpte.h): the BP08 flatbuffer, the embedded program
// (as a PteFile) and every test tensor.

#ifndef ETPACK_BPTE_FILE_H_
#define ETPACK_BPTE_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "etpack/artifact_file.h"
#include "etpack/bpte.h"
#include "etpack/pte_file.h"
#include "etpack/source.h"
#include "etpack/status.h"

namespace etpack::bpte_fb {
struct BundledProgram;
}

namespace etpack {

class BpteFile : public ArtifactFileOf<BpteFile> {
 public:
  // Open(path), Open(name, file) and FromMemory(...): see ArtifactFileOf.
  ~BpteFile() override;

  BpteLayout layout() const { return layout_; }

  uint64_t program_offset() const { return program_offset_; }
  uint64_t program_size() const { return program_size_; }
  // The embedded .pte bytes (see RangeSource()).
  SourcePtr ProgramSource() const;
  // The embedded program, validated; named "embedded program" in errors.
  const PteFile& program() const { return *program_; }

  // The test suites with tensor data as sources (for re-bundling).
  Result<std::vector<BundledTestSuite>> Suites() const;

  // The flatbuffer region rendered like flatc --json --strict-json --defaults-json.
  Result<std::string> ToFlatcJson() const;

  // The FlatBuffers root, for a field the views above lack. Using it needs
  // the generated "bundled_program_etpack_generated.h"; prefer the views.
  const bpte_fb::BundledProgram& bundled() const { return *root_; }

 private:
  friend class ArtifactFileOf<BpteFile>;
  BpteFile() = default;
  uint64_t MappedPrefix(const uint8_t* peek, uint64_t peek_size, uint64_t file_size) const override;
  Status Validate() override;

  BpteLayout layout_ = BpteLayout::kStandard;
  const bpte_fb::BundledProgram* root_ = nullptr;
  uint64_t flatbuffer_size_ = 0;
  uint64_t segment_base_offset_ = 0;
  uint64_t program_offset_ = 0;
  uint64_t program_size_ = 0;
  std::unique_ptr<PteFile> program_;
};

}  // namespace etpack

#endif  // ETPACK_BPTE_FILE_H_
