#include "core/json_document.h"

#include <optional>

namespace etpack {

std::string ShownValue(const json::Value& v) {
  constexpr size_t kMax = 64;
  std::string s = json::Print(v);
  if (s.size() > kMax) {
    s.resize(kMax);
    // Do not cut a UTF-8 sequence in half.
    while (!s.empty() && (static_cast<unsigned char>(s.back()) & 0xC0) == 0x80) s.pop_back();
    if (!s.empty() && static_cast<unsigned char>(s.back()) >= 0xC0) s.pop_back();
    s += "...";
  }
  return s;
}

std::string QuotedText(std::string_view s) {
  return ShownValue(json::Value::String(std::string(s)));
}

std::string MemberPath(const std::string& path, std::string_view member) {
  return path.empty() ? std::string(member) : path + "." + std::string(member);
}

std::string IndexPath(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

Status JsonDocument::Error(const std::string& path, const std::string& what) const {
  return InvalidArgument(origin_ + ": " + (path.empty() ? "" : path + ": ") + what);
}

Status JsonDocument::BadValue(const std::string& path, const json::Value& v,
                              const std::string& what) const {
  return InvalidArgument(origin_ + ": " + (path.empty() ? "document" : path) + " = " +
                         ShownValue(v) + " " + what);
}

std::string JsonDocument::Where(const std::string& path) const { return origin_ + ": " + path; }

Status JsonDocument::Wrap(const std::string& path, const Status& s) const {
  return s.WithContext(Where(path));
}

Result<SourcePtr> JsonDocument::FileRange(const json::Value& obj, const std::string& path) const {
  const std::string file_path = MemberPath(path, "file");
  const json::Value* file = obj.Find("file");
  if (file == nullptr) return Error(path, "\"file\" is missing");
  if (file->kind() != json::Kind::kString || file->as_string().empty()) {
    return BadValue(file_path, *file, "is not a file name");
  }
  const std::string& name = file->as_string();
  if (name.find('\0') != std::string::npos) {
    return BadValue(file_path, *file,
                    "contains a NUL byte (the system would open " + QuotedText(name.c_str()) + ")");
  }
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  if (const json::Value* v = obj.Find("offset"); v != nullptr && !v->is_null()) {
    ETPACK_ASSIGN_OR_RETURN(offset, GetUInt(*v, MemberPath(path, "offset")));
  }
  if (const json::Value* v = obj.Find("length"); v != nullptr && !v->is_null()) {
    ETPACK_ASSIGN_OR_RETURN(length, GetUInt(*v, MemberPath(path, "length")));
  }
  Result<SourcePtr> src = length ? FileSource(*fs_, Resolve(name), offset, *length)
                                 : FileSource(*fs_, Resolve(name), offset);
  if (src.ok()) return src;
  std::string what = Where(file_path) + " = " + QuotedText(name);
  if (obj.Find("offset") != nullptr) what += ", offset = " + std::to_string(offset);
  if (length) what += ", length = " + std::to_string(*length);
  return src.status().WithContext(what);
}

std::string JsonDocument::Resolve(const std::string& name) const {
  if ((!name.empty() && name[0] == '/') || base_dir_.empty()) return name;
  return base_dir_.back() == '/' ? base_dir_ + name : base_dir_ + "/" + name;
}

Status JsonDocument::CheckMembers(const json::Value& obj, const std::string& path,
                                  std::initializer_list<std::string_view> known) const {
  for (const auto& m : obj.members()) {
    bool ok = false;
    for (std::string_view k : known) ok = ok || m.first == k;
    if (ok) continue;
    std::string list;
    for (std::string_view k : known) {
      if (!list.empty()) list += ", ";
      list += k;
    }
    return Error(path,
                 "unknown member " + QuotedText(m.first) + " (expected one of: " + list + ")");
  }
  return Status::OK();
}

Result<uint64_t> JsonDocument::GetUInt(const json::Value& v, const std::string& path) const {
  if (v.kind() == json::Kind::kUInt || (v.kind() == json::Kind::kInt && v.as_int() >= 0)) {
    return v.as_uint();
  }
  return BadValue(path, v, "is not a non-negative integer");
}

}  // namespace etpack
