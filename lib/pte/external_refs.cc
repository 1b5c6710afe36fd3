// Where each EXTERNAL tensor of a program finds its bytes in the data files
// given with it, and what the runtime asks of those files together: one
// key space (CheckDataSet), every EXTERNAL tensor resolved with its layout
// (CheckExternalReferences), the layouts a .ptd must state
// (ExternalTensorLayouts).

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/quote.h"
#include "etpack/external_data.h"
#include "flatbuffer/layout_of.h"
#include "flatbuffer/scalar_type.h"
#include "program_etpack_generated.h"
#include "pte/external_refs.h"
#include "pte/program_structure.h"
#include "pte/program_walk.h"

namespace etpack {

namespace fb = etpack::pte_fb;

namespace {

struct Where {
  const PtdFile* file;
  size_t entry;
};

// Every key of `data` and where it is; a key in two files is an error.
Result<std::unordered_map<std::string, Where>> MergeKeys(const std::vector<const PtdFile*>& data) {
  std::unordered_map<std::string, Where> keys;
  for (const PtdFile* f : data) {
    for (size_t i = 0; i < f->entries().size(); ++i) {
      const std::string& key = f->entries()[i].key;
      const auto [it, fresh] = keys.emplace(key, Where{f, i});
      if (!fresh) return KeyInTwoFiles(key, it->second.file->name(), f->name());
    }
  }
  return keys;
}

}  // namespace

Status KeyInTwoFiles(const std::string& key, const std::string& first, const std::string& second) {
  return InvalidArgument("key " + Quote(key) + " is in both " + first + " and " + second);
}

Status CheckDataSet(const std::vector<const PtdFile*>& data) { return MergeKeys(data).status(); }

Result<std::vector<ExternalRef>> ResolveExternalTensors(const PteFile& pte,
                                                        const std::vector<const PtdFile*>& data) {
  ETPACK_ASSIGN_OR_RETURN(const auto keys, MergeKeys(data));
  std::string file_list;
  for (const PtdFile* f : data) file_list += (file_list.empty() ? "" : ", ") + f->name();

  std::vector<ExternalRef> refs;
  ETPACK_RETURN_IF_ERROR(
      ForEachTensor(pte.program(), [&](uint32_t p, uint32_t v, const fb::Tensor& t) -> Status {
        if (!IsExternal(t)) return Status::OK();
        const std::string what = pte.name() + ": " + TensorPath(p, v);
        const flatbuffers::String* fqn = t.extra_tensor_info()->fully_qualified_name();
        if (fqn == nullptr || fqn->size() == 0) {
          return InvalidArgument(what + " is EXTERNAL but has no fully_qualified_name");
        }
        const std::string key = fqn->str();
        auto it = keys.find(key);
        if (it == keys.end()) {
          return NotFound(what + ": EXTERNAL key " + Quote(key) + " is not in " +
                          (data.empty() ? std::string("any data file (none given)") : file_list));
        }
        const PtdFile& f = *it->second.file;
        const PtdFile::Entry& e = f.entries()[it->second.entry];
        const std::string theirs = "key " + Quote(key) + " in " + f.name();
        if (!e.layout) {
          return InvalidArgument(what + ": " + theirs + " is an opaque blob without tensor_layout");
        }
        ETPACK_ASSIGN_OR_RETURN(TensorLayout mine, LayoutOf(t, what));
        if (mine != *e.layout) {
          return InvalidArgument(what + ": tensor " + DescribeLayout(mine) + " but " + theirs +
                                 " is " + DescribeLayout(*e.layout));
        }
        ETPACK_ASSIGN_OR_RETURN(uint64_t nbytes, TensorNbytes(mine.scalar_type, mine.sizes, what));
        const uint64_t have = f.layout().segments[e.segment_index].size;
        if (have < nbytes) {
          return Corrupt(what + ": tensor " + DescribeLayout(mine) + " needs " +
                         std::to_string(nbytes) + " bytes but the segment of " + theirs +
                         " holds " + std::to_string(have));
        }
        refs.push_back({p, v, &f, it->second.entry});
        return Status::OK();
      }));
  return refs;
}

Status CheckExternalReferences(const PteFile& pte, const std::vector<const PtdFile*>& data,
                               uint64_t* resolved) {
  ETPACK_ASSIGN_OR_RETURN(const std::vector<ExternalRef> refs, ResolveExternalTensors(pte, data));
  if (resolved != nullptr) *resolved = refs.size();
  return Status::OK();
}

Result<std::map<std::string, TensorLayout>> ExternalTensorLayouts(const ProgramStructure& program) {
  // Not verified again when the library built it (the exporter's objects).
  SourcePtr bytes;
  ETPACK_ASSIGN_OR_RETURN(const fb::Program* verified, VerifiedPrograms::Verify(program, &bytes));
  std::map<std::string, TensorLayout> layouts;
  ETPACK_RETURN_IF_ERROR(ForEachTensor(*verified, [&](uint32_t, uint32_t, const fb::Tensor& t) {
    if (IsExternal(t) && t.extra_tensor_info()->fully_qualified_name() != nullptr) {
      layouts[t.extra_tensor_info()->fully_qualified_name()->str()] = LayoutOf(t);
    }
    return Status::OK();
  }));
  return layouts;
}

}  // namespace etpack
