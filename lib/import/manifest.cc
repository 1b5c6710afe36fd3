#include "etpack/manifest.h"

#include <array>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/base64.h"
#include "core/json_document.h"
#include "etpack/fat_delegate.h"
#include "import/json_layout.h"
#include "plan/named_store.h"
#include "plan/segments.h"

namespace etpack {
namespace {

// Optional unsigned member: absent or null gives `fallback`.
Result<uint64_t> GetUIntOr(const JsonDocument& cx, const json::Value& obj,
                           const std::string& obj_path, std::string_view key, uint64_t fallback) {
  const json::Value* v = obj.Find(key);
  if (v == nullptr || v->is_null()) return fallback;
  return cx.GetUInt(*v, MemberPath(obj_path, key));
}

Result<uint64_t> GetAlignmentOr(const JsonDocument& cx, const json::Value& obj,
                                const std::string& obj_path, std::string_view key,
                                uint64_t fallback, uint64_t max = kMaxAlignment) {
  ETPACK_ASSIGN_OR_RETURN(uint64_t a, GetUIntOr(cx, obj, obj_path, key, fallback));
  ETPACK_RETURN_IF_ERROR(CheckPowerOfTwo(a, cx.origin() + ": " + MemberPath(obj_path, key), max));
  return a;
}

// Optional boolean member: absent or null leaves `out` as it is.
Status GetBoolOr(const JsonDocument& cx, const json::Value& obj, const std::string& obj_path,
                 std::string_view key, bool& out) {
  const json::Value* v = obj.Find(key);
  if (v == nullptr || v->is_null()) return Status::OK();
  if (v->kind() != json::Kind::kBool) {
    return cx.BadValue(MemberPath(obj_path, key), *v, "is not true or false");
  }
  out = v->as_bool();
  return Status::OK();
}

Result<std::vector<uint8_t>> Base64Bytes(const JsonDocument& cx, const json::Value& value,
                                         const std::string& path) {
  std::vector<uint8_t> out;
  std::string why;
  if (!etpack::DecodeBase64(value.as_string(), &out, &why)) {
    return cx.BadValue(path, value, "is not base64: " + why);
  }
  return out;
}

bool IsBlobObject(const json::Value& v) {
  return v.kind() == json::Kind::kObject &&
         (v.Find("base64") != nullptr || v.Find("file") != nullptr);
}

Result<SourcePtr> InlineBlob(const JsonDocument& cx, const json::Value& obj,
                             const std::string& path) {
  ETPACK_RETURN_IF_ERROR(cx.CheckMembers(obj, path, {"base64", "size"}));
  const json::Value& b64 = *obj.Find("base64");
  const std::string b64_path = MemberPath(path, "base64");
  if (b64.kind() != json::Kind::kString) return cx.BadValue(b64_path, b64, "is not a string");
  const json::Value* size = obj.Find("size");
  if (size == nullptr) {
    return cx.Error(path, "inline blob has no \"size\" (the decoded byte count)");
  }
  ETPACK_ASSIGN_OR_RETURN(uint64_t n, cx.GetUInt(*size, MemberPath(path, "size")));
  ETPACK_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, Base64Bytes(cx, b64, b64_path));
  if (bytes.size() != n) {
    return cx.BadValue(MemberPath(path, "size"), *size,
                       "but " + b64_path + " = " + ShownValue(b64) + " decodes to " +
                           std::to_string(bytes.size()) + " bytes");
  }
  return OwnedSource(std::move(bytes));
}

Result<SourcePtr> FileBlob(const JsonDocument& cx, const json::Value& obj,
                           const std::string& path) {
  ETPACK_RETURN_IF_ERROR(cx.CheckMembers(obj, path, {"file", "offset", "length"}));
  return cx.FileRange(obj, path);
}

// The source a blob object stands for.
Result<SourcePtr> BlobAt(const JsonDocument& cx, const json::Value& v, const std::string& path) {
  const bool inline_blob = v.Find("base64") != nullptr;
  if (inline_blob && v.Find("file") != nullptr) {
    return cx.Error(path, "a blob has either \"base64\" or \"file\", not both");
  }
  return inline_blob ? InlineBlob(cx, v, path) : FileBlob(cx, v, path);
}

// The program tree is plain JSON: blobs left in it (small [ubyte] fields
// such as CompileSpec.value) are read and spelled out as byte arrays.
Status ResolveAt(const JsonDocument& cx, json::Value& v, std::string& path) {
  switch (v.kind()) {
    case json::Kind::kObject: {
      if (IsBlobObject(v)) {
        ETPACK_ASSIGN_OR_RETURN(SourcePtr src, BlobAt(cx, v, path));
        Result<std::vector<uint8_t>> bytes = ReadAll(*src);
        if (!bytes.ok()) return cx.Wrap(path, bytes.status());
        std::vector<json::Value> items;
        items.reserve(bytes->size());
        for (uint8_t b : *bytes) items.push_back(json::Value::Int(b));
        v = json::Value::Array(std::move(items));
        return Status::OK();
      }
      // `path` is one growing buffer; each level appends and truncates.
      const size_t len = path.size();
      for (auto& m : v.members()) {
        if (len != 0) path += '.';
        path += m.first;
        ETPACK_RETURN_IF_ERROR(ResolveAt(cx, m.second, path));
        path.resize(len);
      }
      return Status::OK();
    }
    case json::Kind::kArray: {
      const size_t len = path.size();
      auto& items = v.items();
      for (size_t i = 0; i < items.size(); ++i) {
        if (items[i].kind() != json::Kind::kObject && items[i].kind() != json::Kind::kArray) {
          continue;  // a byte array: nothing to resolve, skip the path work
        }
        path += '[';
        path += std::to_string(i);
        path += ']';
        ETPACK_RETURN_IF_ERROR(ResolveAt(cx, items[i], path));
        path.resize(len);
      }
      return Status::OK();
    }
    default: return Status::OK();
  }
}

// `v` must be a blob object.
Result<SourcePtr> RequireBlob(const JsonDocument& cx, const json::Value& v,
                              const std::string& path) {
  if (!IsBlobObject(v)) {
    return cx.BadValue(path, v,
                       "is not a blob ({\"base64\": ..., \"size\": N} or {\"file\": ...})");
  }
  return BlobAt(cx, v, path);
}

// Takes the [ubyte] member `field` of every object in the program's array
// `array` out of the tree into `out`, by index: a blob, an array of byte
// values, or nothing (empty). Malformed entries are left for the planner,
// which names them.
Status TakeBytes(const JsonDocument& cx, json::Value& program, const char* array, const char* field,
                 std::vector<SourcePtr>& out) {
  json::Value* entries = program.Find(array);
  if (entries == nullptr || entries->kind() != json::Kind::kArray) return Status::OK();
  const std::string array_path = MemberPath("program", array);
  out.reserve(entries->items().size());
  for (size_t i = 0; i < entries->items().size(); ++i) {
    json::Value& item = entries->items()[i];
    if (item.kind() != json::Kind::kObject) return Status::OK();
    json::Value* bytes = item.Find(field);
    const std::string path = MemberPath(IndexPath(array_path, i), field);
    if (bytes == nullptr || bytes->is_null()) {
      out.push_back(OwnedSource({}));
      continue;
    }
    if (IsBlobObject(*bytes)) {
      ETPACK_ASSIGN_OR_RETURN(SourcePtr src, BlobAt(cx, *bytes, path));
      out.push_back(std::move(src));
    } else if (bytes->kind() == json::Kind::kArray) {
      std::vector<uint8_t> b;
      b.reserve(bytes->items().size());
      for (size_t k = 0; k < bytes->items().size(); ++k) {
        const json::Value& x = bytes->items()[k];
        if (!x.is_integer() || x.as_double() < 0 || x.as_double() > 255) {
          return cx.BadValue(IndexPath(path, k), x, "is not a byte value 0..255");
        }
        b.push_back(static_cast<uint8_t>(x.as_uint()));
      }
      out.push_back(OwnedSource(std::move(b)));
    } else {
      return cx.BadValue(path, *bytes, "is not a blob or an array of bytes");
    }
    item.Set(field, json::Value::Null());
  }
  return Status::OK();
}

Status ReadOptions(const JsonDocument& cx, const json::Value* opts, PteOptions& out) {
  if (opts == nullptr || opts->is_null()) return Status::OK();
  const std::string path = "serializer_options";
  if (opts->kind() != json::Kind::kObject) return cx.BadValue(path, *opts, "is not an object");
  ETPACK_RETURN_IF_ERROR(cx.CheckMembers(
      *opts, path,
      {"segment_alignment", "constant_tensor_alignment", "delegate_alignment",
       "extract_delegate_segments", "strictest_shared_alignment", "dedup_constants"}));
  // null means "the serializer's default" for every option, as in the
  // reference serializer's options object.
  ETPACK_ASSIGN_OR_RETURN(out.segment_alignment,
                          GetAlignmentOr(cx, *opts, path, "segment_alignment", 128));
  ETPACK_ASSIGN_OR_RETURN(
      out.constant_tensor_alignment,
      GetAlignmentOr(cx, *opts, path, "constant_tensor_alignment", 16, kMaxInlineAlignment));
  ETPACK_ASSIGN_OR_RETURN(
      out.delegate_alignment,
      GetAlignmentOr(cx, *opts, path, "delegate_alignment", 16, kMaxInlineAlignment));
  const json::Value* extract = opts->Find("extract_delegate_segments");
  if (extract != nullptr && !extract->is_null()) {
    if (extract->kind() != json::Kind::kBool) {
      return cx.BadValue(MemberPath(path, "extract_delegate_segments"), *extract,
                         "is not true or false");
    }
    out.extract_delegate_segments = extract->as_bool();
  }
  ETPACK_RETURN_IF_ERROR(
      GetBoolOr(cx, *opts, path, "strictest_shared_alignment", out.strictest_shared_alignment));
  return GetBoolOr(cx, *opts, path, "dedup_constants", out.dedup_constants);
}

Status ReadMutableData(const JsonDocument& cx, json::Value* md, PteInput& input) {
  if (md == nullptr || md->is_null()) return Status::OK();
  const std::string path = "mutable_data";
  if (md->kind() != json::Kind::kArray) return cx.BadValue(path, *md, "is not an array or null");
  input.mutable_data.reserve(md->items().size());
  for (size_t i = 0; i < md->items().size(); ++i) {
    json::Value& item = md->items()[i];
    const std::string item_path = IndexPath(path, i);
    if (item.kind() != json::Kind::kObject) {
      return cx.BadValue(item_path, item, "is not an object {\"storage\": BLOB}");
    }
    ETPACK_RETURN_IF_ERROR(cx.CheckMembers(item, item_path, {"storage"}));
    const json::Value* storage = item.Find("storage");
    if (storage == nullptr) return cx.Error(item_path, "has no \"storage\"");
    ETPACK_ASSIGN_OR_RETURN(SourcePtr src,
                            RequireBlob(cx, *storage, MemberPath(item_path, "storage")));
    input.mutable_data.push_back(std::move(src));
  }
  return Status::OK();
}

// One tensor_layout: {"scalar_type", "sizes", "dim_order"}, or null.
Result<std::optional<TensorLayout>> ReadLayout(const JsonDocument& cx, const json::Value* v,
                                               const std::string& path) {
  if (v == nullptr || v->is_null()) return std::optional<TensorLayout>();
  if (v->kind() != json::Kind::kObject) {
    return cx.BadValue(path, *v,
                       "is not an object {\"scalar_type\", \"sizes\", \"dim_order\"} or null");
  }
  ETPACK_RETURN_IF_ERROR(cx.CheckMembers(*v, path, {"scalar_type", "sizes", "dim_order"}));
  const json::Value* st = v->Find("scalar_type");
  if (st == nullptr) return cx.Error(path, "has no \"scalar_type\"");
  ETPACK_ASSIGN_OR_RETURN(const int scalar_type,
                          JsonScalarType(cx, *st, MemberPath(path, "scalar_type")));
  const json::Value* sizes = v->Find("sizes");
  if (sizes == nullptr) return cx.Error(path, "has no \"sizes\"");
  const json::Value* order = v->Find("dim_order");
  if (order == nullptr) return cx.Error(path, "has no \"dim_order\"");
  ETPACK_ASSIGN_OR_RETURN(TensorLayout layout, JsonLayout(cx, scalar_type, *sizes, order, path));
  return std::optional<TensorLayout>(std::move(layout));
}

// The buffers + entries pair that a .pte's named_data and a .ptd share.
// `obj` is the object holding both, at `path` ("" for the top level).
// Without `layouts`, tensor_layout is accepted and ignored.
Status ReadBuffersAndEntries(const JsonDocument& cx, json::Value& obj, const std::string& path,
                             bool layouts, std::vector<SourcePtr>& buffers_out,
                             std::vector<PtdEntry>& entries_out) {
  json::Value* buffers = obj.Find("buffers");
  const std::string buffers_path = MemberPath(path, "buffers");
  if (buffers == nullptr) return cx.Error(path, "has no \"buffers\"");
  if (buffers->kind() != json::Kind::kArray) {
    return cx.BadValue(buffers_path, *buffers, "is not an array");
  }
  buffers_out.reserve(buffers->items().size());
  for (size_t i = 0; i < buffers->items().size(); ++i) {
    ETPACK_ASSIGN_OR_RETURN(SourcePtr src,
                            RequireBlob(cx, buffers->items()[i], IndexPath(buffers_path, i)));
    buffers_out.push_back(std::move(src));
  }

  const json::Value* entries = obj.Find("entries");
  const std::string entries_path = MemberPath(path, "entries");
  if (entries == nullptr) return cx.Error(path, "has no \"entries\"");
  if (entries->kind() != json::Kind::kArray) {
    return cx.BadValue(entries_path, *entries, "is not an array");
  }
  std::unordered_map<std::string_view, size_t> seen;
  entries_out.reserve(entries->items().size());
  for (size_t i = 0; i < entries->items().size(); ++i) {
    const json::Value& e = entries->items()[i];
    const std::string e_path = IndexPath(entries_path, i);
    if (e.kind() != json::Kind::kObject) return cx.BadValue(e_path, e, "is not an object");
    ETPACK_RETURN_IF_ERROR(
        cx.CheckMembers(e, e_path, {"key", "buffer_index", "alignment", "tensor_layout"}));
    PtdEntry entry;
    const json::Value* key = e.Find("key");
    if (key == nullptr) return cx.Error(e_path, "has no \"key\"");
    if (key->kind() != json::Kind::kString) {
      return cx.BadValue(MemberPath(e_path, "key"), *key, "is not a string");
    }
    // The planners' key rule, checked here to name the manifest's path.
    ETPACK_RETURN_IF_ERROR(CheckDataKey(key->as_string(), cx.Where(e_path)));
    entry.key = key->as_string();
    const auto [it, fresh] = seen.emplace(key->as_string(), i);
    if (!fresh) {
      return cx.BadValue(MemberPath(e_path, "key"), *key,
                         "repeats " + IndexPath(entries_path, it->second) + ".key");
    }
    const json::Value* index = e.Find("buffer_index");
    const std::string index_path = MemberPath(e_path, "buffer_index");
    if (index == nullptr) return cx.Error(e_path, "has no \"buffer_index\"");
    ETPACK_ASSIGN_OR_RETURN(uint64_t bi, cx.GetUInt(*index, index_path));
    if (bi >= buffers_out.size()) {
      return cx.BadValue(index_path, *index,
                         "is out of range (" + std::to_string(buffers_out.size()) + " buffers in " +
                             buffers_path + ")");
    }
    entry.buffer_index = static_cast<uint32_t>(bi);
    ETPACK_ASSIGN_OR_RETURN(entry.alignment, GetAlignmentOr(cx, e, e_path, "alignment", 1));
    if (layouts) {
      const std::string l_path = MemberPath(e_path, "tensor_layout");
      ETPACK_ASSIGN_OR_RETURN(entry.layout, ReadLayout(cx, e.Find("tensor_layout"), l_path));
      if (entry.layout) {
        ETPACK_ASSIGN_OR_RETURN(uint64_t nbytes,
                                LayoutNbytes(*entry.layout, cx.origin() + ": " + l_path));
        const uint64_t have = buffers_out[bi]->size();
        if (have < nbytes) {
          return cx.Error(e_path, "tensor_layout " + DescribeLayout(*entry.layout) + " needs " +
                                      std::to_string(nbytes) + " bytes but " +
                                      IndexPath(buffers_path, bi) + " holds " +
                                      std::to_string(have));
        }
      }
    }
    entries_out.push_back(std::move(entry));
  }
  return Status::OK();
}

Result<PteManifest> FromJson(json::Value& doc, const JsonDocument& cx);

// A named_data object ({"buffers", "entries"}) as a list of NamedData.
Status ReadNamedDataList(const JsonDocument& cx, json::Value& nd, const std::string& path,
                         std::vector<NamedData>& out) {
  if (nd.kind() != json::Kind::kObject) return cx.BadValue(path, nd, "is not an object or null");
  ETPACK_RETURN_IF_ERROR(cx.CheckMembers(nd, path, {"buffers", "entries"}));
  // tensor_layout describes .ptd tensors; named data is stored as plain
  // bytes, so it is accepted and ignored.
  // Entries that share a buffer_index share its source, and so its segment.
  std::vector<SourcePtr> buffers;
  std::vector<PtdEntry> entries;
  ETPACK_RETURN_IF_ERROR(ReadBuffersAndEntries(cx, nd, path, /*layouts=*/false, buffers, entries));
  out.reserve(out.size() + entries.size());
  for (PtdEntry& e : entries) {
    out.push_back({std::move(e.key), buffers[e.buffer_index], e.alignment});
  }
  return Status::OK();
}

// One NFAT entry: {"backend_id", "data": BLOB | "program": MANIFEST,
// "named_data"}. A program entry is a whole .pte manifest (its own
// serializer_options, program, ...) planned here; it must plan to a bare
// flatbuffer, since a delegate cannot reach the outer file's segments.
Result<FatEntry> ReadFatEntry(const JsonDocument& cx, json::Value& e, const std::string& path) {
  if (e.kind() != json::Kind::kObject) return cx.BadValue(path, e, "is not an object");
  ETPACK_RETURN_IF_ERROR(cx.CheckMembers(e, path, {"backend_id", "data", "program", "named_data"}));
  FatEntry out;
  const json::Value* id = e.Find("backend_id");
  if (id == nullptr) return cx.Error(path, "has no \"backend_id\"");
  if (id->kind() != json::Kind::kString) {
    return cx.BadValue(MemberPath(path, "backend_id"), *id, "is not a string");
  }
  out.backend_id = id->as_string();
  json::Value* data = e.Find("data");
  json::Value* program = e.Find("program");
  if ((data == nullptr) == (program == nullptr)) {
    return cx.Error(path,
                    "needs exactly one of \"data\" (a blob) and \"program\" (a .pte manifest)");
  }
  if (data != nullptr) {
    ETPACK_ASSIGN_OR_RETURN(SourcePtr src, RequireBlob(cx, *data, MemberPath(path, "data")));
    out.payload = WholeSourcePlan(std::move(src));
  } else {
    const std::string program_path = MemberPath(path, "program");
    ETPACK_ASSIGN_OR_RETURN(
        PteManifest nested,
        FromJson(*program, JsonDocument(cx.Where(program_path), cx.base_dir(), cx.fs())));
    Result<PtePlan> plan = PlanPte(std::move(nested.input), nested.options);
    if (!plan.ok()) return cx.Wrap(program_path, plan.status());
    if (plan->layout.segment_data_size > 0) {
      return cx.Error(program_path,
                      "plans to " + std::to_string(plan->layout.segment_data_size) +
                          " bytes of segment data, which a program inside a delegate cannot "
                          "reach; make its constants EXTERNAL and give their bytes as this "
                          "entry's named_data");
    }
    out.payload = std::move(plan->artifact);
  }
  if (json::Value* nd = e.Find("named_data"); nd != nullptr && !nd->is_null()) {
    ETPACK_RETURN_IF_ERROR(
        ReadNamedDataList(cx, *nd, MemberPath(path, "named_data"), out.named_data));
  }
  return out;
}

// Fat delegates: backend_delegate_data[i].data = {"nfat": {...}}. Each is
// planned (PlanFatDelegate) into delegates[i]; its merged named data is
// appended to `named`. The data member is cleared for TakeBytes.
Status TakeFatDelegates(const JsonDocument& cx, json::Value& program, PteInput& input,
                        std::vector<NamedData>& named) {
  json::Value* entries = program.Find("backend_delegate_data");
  if (entries == nullptr || entries->kind() != json::Kind::kArray) return Status::OK();
  for (size_t i = 0; i < entries->items().size(); ++i) {
    json::Value& item = entries->items()[i];
    if (item.kind() != json::Kind::kObject) return Status::OK();  // TakeBytes names it
    json::Value* data = item.Find("data");
    if (data == nullptr || data->kind() != json::Kind::kObject) continue;
    json::Value* nfat = data->Find("nfat");
    if (nfat == nullptr) continue;
    const std::string data_path = MemberPath(IndexPath("program.backend_delegate_data", i), "data");
    const std::string path = MemberPath(data_path, "nfat");
    ETPACK_RETURN_IF_ERROR(cx.CheckMembers(*data, data_path, {"nfat"}));
    if (nfat->kind() != json::Kind::kObject) return cx.BadValue(path, *nfat, "is not an object");
    ETPACK_RETURN_IF_ERROR(cx.CheckMembers(*nfat, path, {"payload_alignment", "entries"}));
    NfatOptions options;
    ETPACK_ASSIGN_OR_RETURN(
        options.payload_alignment,
        GetAlignmentOr(cx, *nfat, path, "payload_alignment", options.payload_alignment));
    json::Value* list = nfat->Find("entries");
    const std::string list_path = MemberPath(path, "entries");
    if (list == nullptr) return cx.Error(path, "has no \"entries\"");
    if (list->kind() != json::Kind::kArray) return cx.BadValue(list_path, *list, "is not an array");
    std::vector<FatEntry> fat_entries;
    for (size_t k = 0; k < list->items().size(); ++k) {
      ETPACK_ASSIGN_OR_RETURN(FatEntry e,
                              ReadFatEntry(cx, list->items()[k], IndexPath(list_path, k)));
      fat_entries.push_back(std::move(e));
    }
    Result<FatDelegate> fat = PlanFatDelegate(std::move(fat_entries), options);
    if (!fat.ok()) return cx.Wrap(path, fat.status());
    if (input.delegates.size() <= i) input.delegates.resize(i + 1);
    input.delegates[i] = fat->payload;
    named.insert(named.end(), fat->named_data.begin(), fat->named_data.end());
    item.Set("data", json::Value::Null());
  }
  return Status::OK();
}

Status ReadNamedData(const JsonDocument& cx, json::Value* nd, PteInput& input) {
  if (nd == nullptr || nd->is_null()) return Status::OK();
  return ReadNamedDataList(cx, *nd, "named_data", input.named_data);
}

// Takes `doc` apart: the program subtree is moved, not copied.
Result<PteManifest> FromJson(json::Value& doc, const JsonDocument& cx) {
  if (doc.kind() != json::Kind::kObject) return cx.BadValue("", doc, "is not a JSON object");
  ETPACK_RETURN_IF_ERROR(
      cx.CheckMembers(doc, "",
                      {"format", "serializer_options", "program", "mutable_data", "named_data",
                       // Descriptive members of the golden inputs; nothing to write.
                       "case", "description", "effective_alignments"}));

  if (const json::Value* format = doc.Find("format")) {
    if (format->kind() != json::Kind::kString || format->as_string() != "pte") {
      return cx.BadValue("format", *format, "is not supported here (expected \"pte\")");
    }
  }

  PteManifest m;
  ETPACK_RETURN_IF_ERROR(ReadOptions(cx, doc.Find("serializer_options"), m.options));

  json::Value* program = doc.Find("program");
  if (program == nullptr) return cx.Error("", "has no \"program\" member");
  if (program->kind() != json::Kind::kObject) {
    return cx.BadValue("program", *program, "is not an object");
  }
  // Constants and delegate payloads go beside the tree, by index; fat
  // delegates are planned first and their payloads put in place after.
  std::vector<SourcePtr> fat_payloads;
  std::vector<NamedData> fat_named;
  {
    PteInput fat;
    ETPACK_RETURN_IF_ERROR(TakeFatDelegates(cx, *program, fat, fat_named));
    fat_payloads = std::move(fat.delegates);
  }
  ETPACK_RETURN_IF_ERROR(TakeBytes(cx, *program, "constant_buffer", "storage", m.input.constants));
  ETPACK_RETURN_IF_ERROR(
      TakeBytes(cx, *program, "backend_delegate_data", "data", m.input.delegates));
  for (size_t i = 0; i < fat_payloads.size() && i < m.input.delegates.size(); ++i) {
    if (fat_payloads[i] != nullptr) m.input.delegates[i] = std::move(fat_payloads[i]);
  }
  std::string path = "program";
  ETPACK_RETURN_IF_ERROR(ResolveAt(cx, *program, path));
  m.input.program = ProgramStructure::FromTree(std::move(*program));

  ETPACK_RETURN_IF_ERROR(ReadMutableData(cx, doc.Find("mutable_data"), m.input));
  ETPACK_RETURN_IF_ERROR(ReadNamedData(cx, doc.Find("named_data"), m.input));
  // The fat delegates' named data after the program's own.
  m.input.named_data.insert(m.input.named_data.end(), std::make_move_iterator(fat_named.begin()),
                            std::make_move_iterator(fat_named.end()));
  return m;
}

Result<PtdManifest> PtdFromJson(json::Value& doc, const JsonDocument& cx) {
  if (doc.kind() != json::Kind::kObject) return cx.BadValue("", doc, "is not a JSON object");
  ETPACK_RETURN_IF_ERROR(cx.CheckMembers(
      doc, "", {"format", "serializer_options", "buffers", "entries", "case", "description"}));
  if (const json::Value* format = doc.Find("format")) {
    if (format->kind() != json::Kind::kString || format->as_string() != "ptd") {
      return cx.BadValue("format", *format, "is not supported here (expected \"ptd\")");
    }
  }
  PtdManifest m;
  if (const json::Value* opts = doc.Find("serializer_options"); opts && !opts->is_null()) {
    const std::string path = "serializer_options";
    if (opts->kind() != json::Kind::kObject) return cx.BadValue(path, *opts, "is not an object");
    ETPACK_RETURN_IF_ERROR(
        cx.CheckMembers(*opts, path, {"segment_alignment", "strictest_shared_alignment"}));
    ETPACK_ASSIGN_OR_RETURN(m.options.segment_alignment,
                            GetAlignmentOr(cx, *opts, path, "segment_alignment", 128));
    ETPACK_RETURN_IF_ERROR(GetBoolOr(cx, *opts, path, "strictest_shared_alignment",
                                     m.options.strictest_shared_alignment));
  }
  ETPACK_RETURN_IF_ERROR(
      ReadBuffersAndEntries(cx, doc, "", /*layouts=*/true, m.input.buffers, m.input.entries));
  return m;
}

std::string DirName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return "";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

Result<SourcePtr> BlobSource(const json::Value& blob, const std::string& base_dir,
                             const std::string& origin, const std::string& path, const Env& env) {
  return RequireBlob(JsonDocument(origin, base_dir, env.in()), blob, path);
}

Result<PteManifest> PteManifestFromJson(const json::Value& doc, const std::string& base_dir,
                                        const std::string& origin, const Env& env) {
  json::Value copy = doc;
  return FromJson(copy, JsonDocument(origin, base_dir, env.in()));
}

Result<PteManifest> LoadPteManifest(const std::string& path, const Env& env) {
  SourcePtr file;
  ETPACK_ASSIGN_OR_RETURN(json::Value doc, json::ParseFile(env.in(), path, &file));
  ETPACK_ASSIGN_OR_RETURN(PteManifest m,
                          FromJson(doc, JsonDocument(path, DirName(path), env.in())));
  m.input.read.push_back(std::move(file));
  return m;
}

Result<PtdManifest> PtdManifestFromJson(const json::Value& doc, const std::string& base_dir,
                                        const std::string& origin, const Env& env) {
  json::Value copy = doc;
  return PtdFromJson(copy, JsonDocument(origin, base_dir, env.in()));
}

Result<PtdManifest> LoadPtdManifest(const std::string& path, const Env& env) {
  SourcePtr file;
  ETPACK_ASSIGN_OR_RETURN(json::Value doc, json::ParseFile(env.in(), path, &file));
  ETPACK_ASSIGN_OR_RETURN(PtdManifest m,
                          PtdFromJson(doc, JsonDocument(path, DirName(path), env.in())));
  m.input.read.push_back(std::move(file));
  return m;
}

Result<AnyManifest> LoadManifest(const std::string& path, const Env& env) {
  SourcePtr file;
  ETPACK_ASSIGN_OR_RETURN(json::Value doc, json::ParseFile(env.in(), path, &file));
  const JsonDocument cx(path, DirName(path), env.in());
  const bool object = doc.kind() == json::Kind::kObject;
  const json::Value* format = object ? doc.Find("format") : nullptr;
  if (object && format == nullptr && doc.Find("program") == nullptr &&
      (doc.Find("buffers") != nullptr || doc.Find("entries") != nullptr)) {
    // Without "format" a manifest is a .pte's; "buffers" and "entries" at
    // the top level say which member is really missing.
    return InvalidArgument(path +
                           ": has no \"format\" member; a .ptd manifest (top-level \"buffers\" "
                           "and \"entries\") needs \"format\": \"ptd\"");
  }
  if (format == nullptr ||
      (format->kind() == json::Kind::kString && format->as_string() == "pte")) {
    ETPACK_ASSIGN_OR_RETURN(PteManifest m, FromJson(doc, cx));
    m.input.read.push_back(std::move(file));
    return AnyManifest(std::move(m));
  }
  if (format->kind() == json::Kind::kString && format->as_string() == "ptd") {
    ETPACK_ASSIGN_OR_RETURN(PtdManifest m, PtdFromJson(doc, cx));
    m.input.read.push_back(std::move(file));
    return AnyManifest(std::move(m));
  }
  return InvalidArgument(path + ": format = " + ShownValue(*format) +
                         " is not supported (expected \"pte\" or \"ptd\")");
}

}  // namespace etpack
