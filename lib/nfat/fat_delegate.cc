// PlanFatDelegate: the container is PlanNfat's; the named data goes through
// the same store (plan/named_store.h) that PlanPte and PlanPtd use, here
// only to find shared contents and clashes while each entry can still be
// named.

#include "etpack/fat_delegate.h"

#include <utility>

#include "etpack/artifact_source.h"
#include "nfat/nfat_format.h"
#include "plan/named_store.h"

namespace etpack {

Result<FatDelegate> PlanFatDelegate(std::vector<FatEntry> entries, const NfatOptions& options) {
  FatDelegate out;
  // Tags: (entry, named_data index) as entry << 32 | index.
  NamedDataStore store(SharedAlignment::kFirstKey, [&entries](size_t tag) {
    const size_t i = tag >> 32;
    return "NFAT entries[" + std::to_string(i) + "] " + nfat::ShownId(entries[i].backend_id) +
           " named_data[" + std::to_string(tag & 0xffffffffu) + "]";
  });
  for (size_t i = 0; i < entries.size(); ++i) {
    const FatEntry& e = entries[i];
    for (size_t j = 0; j < e.named_data.size(); ++j) {
      const NamedData& nd = e.named_data[j];
      ETPACK_ASSIGN_OR_RETURN(
          NamedDataStore::Added added,
          store.Add(nd.key, nd.source, nd.alignment, uint64_t{i} << 32 | uint64_t{j}));
      const size_t buffer = store.keys()[added.key].buffer;
      out.named_data.push_back({nd.key, store.buffers()[buffer].source, nd.alignment});
    }
  }
  if (entries.size() == 1) {
    // Checked as a container entry would be, then used bare.
    ETPACK_RETURN_IF_ERROR(
        PlanNfat({{entries[0].backend_id, entries[0].payload}}, options).status());
    ETPACK_ASSIGN_OR_RETURN(out.payload,
                            ArtifactSource(std::move(entries[0].payload), entries[0].backend_id));
    return out;
  }
  std::vector<NfatEntryInput> inputs;
  inputs.reserve(entries.size());
  for (FatEntry& e : entries) inputs.push_back({std::move(e.backend_id), std::move(e.payload)});
  ETPACK_ASSIGN_OR_RETURN(NfatPlan nfat, PlanNfat(inputs, options));
  out.entries = std::move(nfat.entries);
  ETPACK_ASSIGN_OR_RETURN(out.payload, ArtifactSource(std::move(nfat.artifact), "NFAT container"));
  return out;
}

PtdInput PtdInputOf(const std::vector<NamedData>& named_data) {
  PtdInput out;
  SourceIndex buffers(&out.buffers);
  for (const NamedData& nd : named_data) {
    out.entries.push_back({nd.key, buffers.Add(nd.source), nd.alignment, std::nullopt});
  }
  return out;
}

}  // namespace etpack
