// json_document.h (internal) — reading a JSON input document (a manifest,
// a CASES.json) with errors that name the document, the JSON path and the
// offending value: "m.json: program.constant_buffer[3].storage = 7 is not a
// blob". Shared by every reader of user-written JSON.

#ifndef ETPACK_JSON_DOCUMENT_H_
#define ETPACK_JSON_DOCUMENT_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "etpack/input.h"
#include "etpack/json.h"
#include "etpack/source.h"
#include "etpack/status.h"

namespace etpack {

// A value as it appears in an error message: compact JSON, cut short so a
// megabyte of base64 does not end up in one line of text.
std::string ShownValue(const json::Value& v);
// A string quoted and cut the same way.
std::string QuotedText(std::string_view s);

// JSON paths: Join("a.b", "c") = "a.b.c", Index("a", 2) = "a[2]".
std::string MemberPath(const std::string& path, std::string_view member);
std::string IndexPath(const std::string& path, size_t i);

// The document being read: its name for messages, the folder its
// relative file names resolve against and the file system they are opened
// through. REQUIRES: `fs` outlives the document and the sources it opens.
class JsonDocument {
 public:
  JsonDocument(std::string origin, std::string base_dir, InputFs& fs)
      : origin_(std::move(origin)), base_dir_(std::move(base_dir)), fs_(&fs) {}

  const std::string& origin() const { return origin_; }
  const std::string& base_dir() const { return base_dir_; }
  InputFs& fs() const { return *fs_; }

  // "<origin>: <path>: <what>", or "<origin>: <what>" at the top level.
  Status Error(const std::string& path, const std::string& what) const;
  // "<origin>: <path> = <value> <what>"
  Status BadValue(const std::string& path, const json::Value& v, const std::string& what) const;
  // "<origin>: <path>", to name a place in lower layers' messages.
  std::string Where(const std::string& path) const;
  // A lower layer's failure (a file, an .npy) prefixed with where it was asked for.
  Status Wrap(const std::string& path, const Status& s) const;
  // A file name from the document: absolute as is, else under base_dir().
  std::string Resolve(const std::string& name) const;

  // kInvalidArgument naming the first member of `obj` not in `known`.
  Status CheckMembers(const json::Value& obj, const std::string& path,
                      std::initializer_list<std::string_view> known) const;
  // A non-negative integer, exactly.
  Result<uint64_t> GetUInt(const json::Value& v, const std::string& path) const;
  // The bytes a {"file": NAME, "offset": N, "length": N} object at `path`
  // names, the one rule for file ranges in documents: NAME is a non-empty
  // file name without NUL bytes (resolved by Resolve()), offset defaults to
  // 0, and without length (absent or null) the range runs to the end of the
  // file; a length is always a length. Other members are the caller's to
  // check. Errors name the document, the path and the members given.
  Result<SourcePtr> FileRange(const json::Value& obj, const std::string& path) const;

 private:
  std::string origin_;
  std::string base_dir_;
  InputFs* fs_;
};

}  // namespace etpack

#endif  // ETPACK_JSON_DOCUMENT_H_
