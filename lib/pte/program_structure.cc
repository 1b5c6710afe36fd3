// ProgramStructure: the two forms a Program arrives in, and the one the
// planner works on (the tree).

#include <flatbuffers/verifier.h>

#include <limits>
#include <utility>
#include <vector>

#include "etpack/pte.h"
#include "flatbuffer/tree_reader.h"
#include "program_etpack_generated.h"

namespace etpack {

ProgramStructure ProgramStructure::FromTree(json::Value tree) {
  ProgramStructure p;
  p.tree_ = std::move(tree);
  return p;
}

ProgramStructure ProgramStructure::FromFlatbuffer(SourcePtr bytes) {
  ProgramStructure p;
  p.tree_ = json::Value();
  p.flatbuffer_ = std::move(bytes);
  return p;
}

Result<json::Value> ProgramStructure::TakeTree() && {
  if (flatbuffer_ == nullptr) return std::move(tree_);
  const std::string what = "program flatbuffer (" + flatbuffer_->Describe() + ")";
  const uint64_t size = flatbuffer_->size();
  if (size < 2 * sizeof(flatbuffers::uoffset_t)) {
    return Corrupt(what + ": " + std::to_string(size) + " bytes is too short for a flatbuffer");
  }
  if (size > FLATBUFFERS_MAX_BUFFER_SIZE) {
    return OutOfRange(what + ": " + std::to_string(size) +
                      " bytes exceed the 2 GiB flatbuffer limit");
  }
  std::vector<uint8_t> copy;
  const uint8_t* data = flatbuffer_->contiguous();
  if (data == nullptr) {
    Result<std::vector<uint8_t>> read = ReadAll(*flatbuffer_);
    if (!read.ok()) return read.status().WithContext(what);
    copy = std::move(read).value();
    data = copy.data();
  }
  // A large program has a table per value: lift the verifier's default
  // limit of a million tables.
  flatbuffers::Verifier::Options limits;
  limits.max_tables = std::numeric_limits<flatbuffers::uoffset_t>::max();
  flatbuffers::Verifier verifier(data, static_cast<size_t>(size), limits);
  const bool valid = pte_fb::VerifyProgramBuffer(verifier);
  if (!valid && !pte_fb::ProgramBufferHasIdentifier(data)) {
    return Corrupt(what + ": not a Program flatbuffer (file identifier is not \"" +
                   std::string(pte_fb::ProgramIdentifier()) + "\")");
  }
  // An invalid buffer is read again with checks at every step, which names
  // the field that fails.
  TreeReadOptions options;
  options.verify = !valid;
  Result<json::Value> tree = FlatbufferToTree(SchemaId::kProgram, data, size, options);
  if (!tree.ok()) return tree.status().WithContext(what);
  if (!valid) return Corrupt(what + ": fails flatbuffers verification");
  return tree;
}

}  // namespace etpack
