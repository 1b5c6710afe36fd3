// etpack/ptd_file.h — open, validate and read a .ptd (external data).
//
// PtdFile::Open validates all of the file before it returns (see
// etpack/artifact_file.h for the ways to open and the error codes). Beyond
// the runtime's own checks it requires (docs/formats.md §3.4): every segment
// inside the data, every key unique and non-empty, every tensor entry with a
// valid layout, and every tensor's segment at least as large as the tensor.

#ifndef ETPACK_PTD_FILE_H_
#define ETPACK_PTD_FILE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "etpack/artifact_file.h"
#include "etpack/ptd.h"
#include "etpack/source.h"
#include "etpack/status.h"
#include "etpack/tensor_layout.h"

namespace etpack::ptd_fb {
struct FlatTensor;
}

namespace etpack {

class PtdFile : public ArtifactFileOf<PtdFile> {
 public:
  // Open(path), Open(name, file) and FromMemory(...): see ArtifactFileOf.
  ~PtdFile() override;

  const FlatTensorHeader& header() const { return header_; }

  struct Entry {
    std::string key;
    uint32_t segment_index = 0;
    std::optional<TensorLayout> layout;  // absent for opaque blobs
  };
  const std::vector<Entry>& entries() const { return entries_; }
  const PtdSegmentMap& layout() const { return layout_; }

  // Index into entries() of `key`, or -1. O(log n).
  int64_t Find(const std::string& key) const;
  // The bytes of entry i's segment (see RangeSource()).
  // REQUIRES: i < entries().size().
  SourcePtr EntrySource(size_t i) const;

  // The FlatTensor rendered like flatc --json --strict-json --defaults-json.
  Result<std::string> ToFlatcJson() const;

  // The FlatBuffers root, for a field the views above lack. Using it needs
  // the generated "flat_tensor_etpack_generated.h"; prefer the views.
  const ptd_fb::FlatTensor& flat_tensor() const { return *root_; }

 private:
  friend class ArtifactFileOf<PtdFile>;
  PtdFile() = default;
  uint64_t MappedPrefix(const uint8_t* peek, uint64_t peek_size, uint64_t file_size) const override;
  Status Validate() override;

  FlatTensorHeader header_;
  const ptd_fb::FlatTensor* root_ = nullptr;
  std::vector<Entry> entries_;
  std::vector<uint32_t> by_key_;  // entries_ indices sorted by key
  PtdSegmentMap layout_;
};

}  // namespace etpack

#endif  // ETPACK_PTD_FILE_H_
