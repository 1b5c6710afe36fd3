// ProgramStructure: the two forms a Program arrives in, and the one the
// planner works on (the flatbuffer, verified once: pte/program_structure.h).

#include <flatbuffers/verifier.h>

#include <limits>
#include <utility>
#include <vector>

#include "pte/program_structure.h"

#include "etpack/pte.h"
#include "flatbuffer/tree_builder.h"
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

namespace {

// The flatbuffer form's bytes, in memory and verified. A buffer that fails
// verification is read again with checks at every step, which names the
// field that fails.
Result<SourcePtr> Verified(const SourcePtr& flatbuffer) {
  const std::string what = "program flatbuffer (" + flatbuffer->Describe() + ")";
  const uint64_t size = flatbuffer->size();
  if (size < 2 * sizeof(flatbuffers::uoffset_t)) {
    return Corrupt(what + ": " + std::to_string(size) + " bytes is too short for a flatbuffer");
  }
  if (size > FLATBUFFERS_MAX_BUFFER_SIZE) {
    return OutOfRange(what + ": " + std::to_string(size) +
                      " bytes exceed the 2 GiB flatbuffer limit");
  }
  SourcePtr bytes = flatbuffer;
  if (bytes->contiguous() == nullptr) {
    Result<std::vector<uint8_t>> read = ReadAll(*flatbuffer);
    if (!read.ok()) return read.status().WithContext(what);
    bytes = OwnedSource(std::move(read).value());
  }
  const uint8_t* data = bytes->contiguous();
  // A large program has a table per value: lift the verifier's default
  // limit of a million tables.
  flatbuffers::Verifier::Options limits;
  limits.max_tables = std::numeric_limits<flatbuffers::uoffset_t>::max();
  flatbuffers::Verifier verifier(data, static_cast<size_t>(size), limits);
  if (pte_fb::VerifyProgramBuffer(verifier)) return bytes;
  if (!pte_fb::ProgramBufferHasIdentifier(data)) {
    return Corrupt(what + ": not a Program flatbuffer (file identifier is not \"" +
                   std::string(pte_fb::ProgramIdentifier()) + "\")");
  }
  TreeReadOptions options;
  options.verify = true;
  Result<json::Value> tree = FlatbufferToTree(SchemaId::kProgram, data, size, options);
  if (!tree.ok()) return tree.status().WithContext(what);
  return Corrupt(what + ": fails flatbuffers verification");
}

}  // namespace

ProgramStructure VerifiedPrograms::Of(SourcePtr bytes) {
  ProgramStructure p = ProgramStructure::FromFlatbuffer(std::move(bytes));
  p.verified_ = true;
  return p;
}

Result<const pte_fb::Program*> VerifiedPrograms::Verify(const ProgramStructure& p,
                                                        SourcePtr* keep) {
  if (p.flatbuffer_ == nullptr) {
    ETPACK_ASSIGN_OR_RETURN(*keep, ProgramStructure(p).TakeFlatbuffer());
  } else if (p.verified_) {
    *keep = p.flatbuffer_;
  } else {
    ETPACK_ASSIGN_OR_RETURN(*keep, Verified(p.flatbuffer_));
  }
  return pte_fb::GetProgram((*keep)->contiguous());
}

Result<json::Value> ProgramStructure::TakeTree() && {
  if (flatbuffer_ == nullptr) return std::move(tree_);
  SourcePtr bytes = flatbuffer_;
  if (!verified_) {
    ETPACK_ASSIGN_OR_RETURN(bytes, Verified(flatbuffer_));
  }
  Result<json::Value> tree =
      FlatbufferToTree(SchemaId::kProgram, bytes->contiguous(), bytes->size());
  if (!tree.ok()) {
    return tree.status().WithContext("program flatbuffer (" + flatbuffer_->Describe() + ")");
  }
  return tree;
}

Result<SourcePtr> ProgramStructure::TakeFlatbuffer() && {
  if (flatbuffer_ != nullptr) return verified_ ? flatbuffer_ : Verified(flatbuffer_);
  BuildOptions build;
  build.root_path = "program";
  ETPACK_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes,
                          BuildFlatbuffer(SchemaId::kProgram, tree_, build));
  tree_ = json::Value();
  return OwnedSource(std::move(bytes));
}

}  // namespace etpack
