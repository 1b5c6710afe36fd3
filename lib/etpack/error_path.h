// etpack/error_path.h — where a walk of a document or an object tree is, for
// error messages: "program.execution_plan[0].values[3].val". Every walk
// that names a field in its errors (the flatbuffer builders and reader, the
// Python module's walk of the exporter's objects) keeps its place with one.
//
// Fields and list indices are pushed and popped as the walk descends,
// without building any text (a tree of a million tables would otherwise
// edit the text at every field); the text is made only for an error.

#ifndef ETPACK_ERROR_PATH_H_
#define ETPACK_ERROR_PATH_H_

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace etpack {

// Appends a field name (".name"; no dot at the start of an empty path), a
// list index ("[i]") or a mapping's key ("['key']") to a path's text.
inline void AppendPathName(std::string& path, std::string_view name) {
  if (!path.empty()) path += '.';
  path += name;
}
inline void AppendPathIndex(std::string& path, size_t index) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, index);
  path += '[';
  path.append(buf, r.ptr);
  path += ']';
}
inline void AppendPathKey(std::string& path, std::string_view key) {
  path += "['";
  path += key;
  path += "']";
}

class ErrorPath {
 public:
  explicit ErrorPath(std::string root = {}) : root_(std::move(root)) {}

  // The text before the first field, set before the walk starts.
  std::string& root() { return root_; }

  // Tags a Push of a mapping's key, which a name would be taken for.
  struct Key {
    std::string_view key;
  };

  // A field, a mapping's key (neither copied: it must outlive the frame) or
  // a list index on the path for the life of the object.
  class Push {
   public:
    Push(ErrorPath& p, std::string_view name) : p_(p) { p.Add(name.data(), name.size(), kName); }
    Push(ErrorPath& p, Key key) : p_(p) { p.Add(key.key.data(), key.key.size(), kKey); }
    Push(ErrorPath& p, size_t index) : p_(p) { p.Add(nullptr, 0, index); }
    ~Push() { p_.frames_.pop_back(); }
    Push(const Push&) = delete;
    Push& operator=(const Push&) = delete;

   private:
    ErrorPath& p_;
  };

  // The root, then ".name" for each field, "['key']" for each key and
  // "[i]" for each index.
  std::string Text() const {
    std::string text = root_;
    for (const Frame& f : frames_) {
      if (f.index == kName) {
        AppendPathName(text, std::string_view(f.name, f.name_size));
      } else if (f.index == kKey) {
        AppendPathKey(text, std::string_view(f.name, f.name_size));
      } else {
        AppendPathIndex(text, f.index);
      }
    }
    return text;
  }

 private:
  static constexpr size_t kName = SIZE_MAX;     // a frame that is a field
  static constexpr size_t kKey = SIZE_MAX - 1;  // a frame that is a mapping's key
  // Three words stored one by one: a walk pushes one per field it enters,
  // and a string_view copied as one 16-byte unit right after it was
  // stored as two words stalls the store buffer on every push.
  struct Frame {
    const char* name;
    size_t name_size;
    size_t index;
  };
  void Add(const char* name, size_t name_size, size_t index) {
    Frame& f = frames_.emplace_back();
    f.name = name;
    f.name_size = name_size;
    f.index = index;
  }
  std::string root_;
  std::vector<Frame> frames_;
};

}  // namespace etpack

#endif  // ETPACK_ERROR_PATH_H_
