// etpack/json.h — a JSON document tree, used as the program structure.
//
// An ExecuTorch program is a deep flatbuffer whose shape is fixed by the
// schema. etpack takes it, like the reference exporter hands it to flatc, as
// a JSON tree in "flatc form": one object per table, member names = schema
// field names, unions as `<field>_type` (member table name) + `<field>`,
// enums as integers or names, `null` = absent field, `[]` = present empty
// vector. The tree keeps exactly that distinction, keeps integers exact to
// 64 bits (never through a double) and keeps member order.
//
// The tree is plain JSON: bulk bytes (weights, delegate payloads) never
// enter it; they travel beside it as sources (etpack/pte.h).

#ifndef ETPACK_JSON_H_
#define ETPACK_JSON_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "etpack/source.h"
#include "etpack/status.h"

namespace etpack::json {

enum class Kind { kNull, kBool, kInt, kUInt, kDouble, kString, kArray, kObject };

class Value {
 public:
  using Member = std::pair<std::string, Value>;

  Value() = default;  // null
  static Value Null() { return Value(); }
  static Value Bool(bool b);
  static Value Int(int64_t i);
  // Stored as kInt when it fits in int64, kUInt above that.
  static Value UInt(uint64_t u);
  static Value Double(double d);
  static Value String(std::string s);
  static Value Array(std::vector<Value> items = {});
  static Value Object(std::vector<Member> members = {});

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_null() const { return kind() == Kind::kNull; }
  bool is_number() const {
    return kind() == Kind::kInt || kind() == Kind::kUInt || kind() == Kind::kDouble;
  }
  bool is_integer() const { return kind() == Kind::kInt || kind() == Kind::kUInt; }

  // Typed access. REQUIRES: the matching kind (asserted in debug builds).
  bool as_bool() const;
  int64_t as_int() const;    // kInt only
  uint64_t as_uint() const;  // kUInt, or kInt >= 0
  double as_double() const;  // any number
  const std::string& as_string() const;
  const std::vector<Value>& items() const;
  std::vector<Value>& items();
  const std::vector<Member>& members() const;
  std::vector<Member>& members();

  // Object member lookup; nullptr when absent. A member whose value is null
  // is returned (callers test is_null()). REQUIRES: kind() == kObject.
  const Value* Find(std::string_view key) const;
  Value* Find(std::string_view key);
  // Sets (replacing or appending) a member. REQUIRES: kind() == kObject.
  Value& Set(std::string_view key, Value value);

  // Structural equality.
  bool operator==(const Value& other) const;
  bool operator!=(const Value& other) const { return !(*this == other); }

 private:
  // Alternatives in the order of Kind, so kind() is the index. A tree of a
  // large program holds millions of values: one word plus the largest
  // alternative keeps each small.
  using Storage = std::variant<std::monostate, bool, int64_t, uint64_t, double, std::string,
                               std::vector<Value>, std::vector<Member>>;
  static_assert(std::variant_size_v<Storage> == static_cast<size_t>(Kind::kObject) + 1);
  // Builds the alternative in place (a moved Storage temporary trips GCC
  // 12's maybe-uninitialized under sanitizers).
  template <typename T, typename... Args>
  explicit Value(std::in_place_type_t<T> type, Args&&... args)
      : v_(type, std::forward<Args>(args)...) {}
  Storage v_;
};

// Parses RFC 8259 JSON. Integers without fraction or exponent become kInt
// or kUInt (exact); other numbers kDouble; an integer outside 64 bits is an
// error. Errors (kInvalidArgument; kOutOfRange for a number beyond 64 bits)
// name `origin` (a file name) with line and column.
// Limits: nesting depth 512.
Result<Value> Parse(std::string_view text, std::string_view origin = "<json>");

// Serializes compactly (indent < 0) or pretty-printed with `indent` spaces.
// Doubles print with 17 significant digits; inf/nan print as strings
// "inf", "-inf", "nan". The output is always valid JSON: in a string that
// is not valid UTF-8 (a name read from a corrupt file), every byte that does
// not begin a valid sequence prints as U+FFFD, the replacement character.
std::string Print(const Value& value, int indent = -1);

// Prints one document piece by piece, exactly as Print(tree, indent) prints
// the tree made of the same pieces, handing the text to `write` as it goes:
// a document of a million elements never exists whole, as a tree or as
// text. Usage: BeginObject(); Key("a"); Put(v); Key("b"); BeginArray();
// Put(x); ... End(); End(). REQUIRES: Key before every value inside an
// object and never elsewhere; End matches a Begin.
class StreamPrinter {
 public:
  using Write = std::function<void(std::string_view)>;
  StreamPrinter(Write write, int indent = -1) : write_(std::move(write)), indent_(indent) {}

  void BeginObject() { Open(true); }
  void BeginArray() { Open(false); }
  void Key(std::string_view key);
  void Put(const Value& value);
  void End();

 private:
  struct Level {
    bool object = false;
    size_t count = 0;
  };
  void BeforeValue();  // the separator and indentation a new element needs
  void Open(bool object);
  void NewLine(size_t level);

  Write write_;
  int indent_;
  std::vector<Level> open_;
  bool keyed_ = false;  // a Key was written and awaits its value
  std::string buffer_;
};

// Reads and parses a whole file; errors name the file: kNotFound when it
// does not exist, kInvalidArgument for anything but a regular file (a
// directory, a FIFO: refused without blocking), kIoError when it cannot be
// read, else as Parse. `file`, when given, receives the file read (a
// FileSource), for a plan's inputs (ArtifactPlan::inputs).
Result<Value> ParseFile(const std::string& path, SourcePtr* file = nullptr);
// The same, opened and read through `fs` (etpack/input.h). REQUIRES: `fs`
// outlives the call and `*file`.
Result<Value> ParseFile(InputFs& fs, const std::string& path, SourcePtr* file = nullptr);

}  // namespace etpack::json

#endif  // ETPACK_JSON_H_
