#include "etpack/json.h"

#include <locale.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <system_error>

#include "core/utf8.h"
#include "etpack/input.h"
#include "etpack/source.h"

namespace etpack::json {

// ---------------------------------------------------------------------------
// Value

Value Value::Bool(bool b) { return Value(std::in_place_type<bool>, b); }

Value Value::Int(int64_t i) { return Value(std::in_place_type<int64_t>, i); }

Value Value::UInt(uint64_t u) {
  // One canonical kind per integer value keeps equality and the accessors
  // simple: only values above INT64_MAX are kUInt.
  if (u <= static_cast<uint64_t>(INT64_MAX)) return Int(static_cast<int64_t>(u));
  return Value(std::in_place_type<uint64_t>, u);
}

Value Value::Double(double d) { return Value(std::in_place_type<double>, d); }

Value Value::String(std::string s) { return Value(std::in_place_type<std::string>, std::move(s)); }

Value Value::Array(std::vector<Value> items) {
  return Value(std::in_place_type<std::vector<Value>>, std::move(items));
}

Value Value::Object(std::vector<Member> members) {
  return Value(std::in_place_type<std::vector<Member>>, std::move(members));
}

bool Value::as_bool() const {
  assert(kind() == Kind::kBool);
  return *std::get_if<bool>(&v_);
}

int64_t Value::as_int() const {
  assert(kind() == Kind::kInt);
  return *std::get_if<int64_t>(&v_);
}

uint64_t Value::as_uint() const {
  if (const uint64_t* u = std::get_if<uint64_t>(&v_)) return *u;
  assert(kind() == Kind::kInt && as_int() >= 0);
  return static_cast<uint64_t>(*std::get_if<int64_t>(&v_));
}

double Value::as_double() const {
  assert(is_number());
  switch (kind()) {
    case Kind::kInt: return static_cast<double>(*std::get_if<int64_t>(&v_));
    case Kind::kUInt: return static_cast<double>(*std::get_if<uint64_t>(&v_));
    default: return *std::get_if<double>(&v_);
  }
}

const std::string& Value::as_string() const {
  assert(kind() == Kind::kString);
  return *std::get_if<std::string>(&v_);
}

const std::vector<Value>& Value::items() const {
  assert(kind() == Kind::kArray);
  return *std::get_if<std::vector<Value>>(&v_);
}

std::vector<Value>& Value::items() {
  assert(kind() == Kind::kArray);
  return *std::get_if<std::vector<Value>>(&v_);
}

const std::vector<Value::Member>& Value::members() const {
  assert(kind() == Kind::kObject);
  return *std::get_if<std::vector<Member>>(&v_);
}

std::vector<Value::Member>& Value::members() {
  assert(kind() == Kind::kObject);
  return *std::get_if<std::vector<Member>>(&v_);
}

const Value* Value::Find(std::string_view key) const {
  for (const Member& m : members()) {
    if (m.first == key) return &m.second;
  }
  return nullptr;
}

Value* Value::Find(std::string_view key) {
  return const_cast<Value*>(static_cast<const Value*>(this)->Find(key));
}

Value& Value::Set(std::string_view key, Value value) {
  if (Value* existing = Find(key)) {
    *existing = std::move(value);
    return *existing;
  }
  std::vector<Member>& m = members();
  m.emplace_back(std::string(key), std::move(value));
  return m.back().second;
}

bool Value::operator==(const Value& other) const {
  if (is_integer() && other.is_integer()) {
    // UInt() normalizes, but compare by value anyway so that equality never
    // depends on how a number was built.
    const bool neg_a = kind() == Kind::kInt && as_int() < 0;
    const bool neg_b = other.kind() == Kind::kInt && other.as_int() < 0;
    if (neg_a || neg_b) return neg_a && neg_b && as_int() == other.as_int();
    return as_uint() == other.as_uint();
  }
  if (kind() != other.kind()) return false;
  switch (kind()) {
    case Kind::kNull: return true;
    case Kind::kBool: return as_bool() == other.as_bool();
    case Kind::kInt:
    case Kind::kUInt: return false;  // handled above
    case Kind::kDouble: {
      // Structural: a NaN field equals a NaN field, so a tree equals its copy.
      const double a = as_double(), b = other.as_double();
      return a == b || (std::isnan(a) && std::isnan(b));
    }
    case Kind::kString: return as_string() == other.as_string();
    case Kind::kArray: return items() == other.items();
    case Kind::kObject: {
      // Member order carries no meaning in JSON (or in flatc form), so two
      // objects are equal when they hold the same members in any order.
      const std::vector<Member>& mine = members();
      const std::vector<Member>& theirs = other.members();
      if (mine.size() != theirs.size()) return false;
      for (size_t i = 0; i < mine.size(); ++i) {
        const Member& m = mine[i];
        const Member& o = theirs[i];
        if (m.first == o.first) {  // the common case: same order
          if (m.second != o.second) return false;
          continue;
        }
        const Value* found = other.Find(m.first);
        if (found == nullptr || *found != m.second) return false;
      }
      return true;
    }
  }
  return false;
}

// ---------------------------------------------------------------------------
// Parser

namespace {

void PrintString(std::string& out, std::string_view s);  // defined with Print

constexpr int kMaxDepth = 512;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Shows one input byte in an error message.
std::string DescribeChar(unsigned char c) {
  if (c >= 0x20 && c < 0x7f) return std::string("'") + static_cast<char>(c) + "'";
  char buf[16];
  std::snprintf(buf, sizeof buf, "byte 0x%02X", c);
  return buf;
}

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Parser {
 public:
  Parser(std::string_view text, std::string_view origin)
      : begin_(text.data()), p_(text.data()), end_(text.data() + text.size()), origin_(origin) {}

  Result<Value> ParseDocument() {
    // RFC 8259 §8.1 lets a parser ignore a byte order mark.
    if (end_ - p_ >= 3 && std::memcmp(p_, "\xEF\xBB\xBF", 3) == 0) p_ += 3;
    Value v;
    SkipSpace();
    if (!ParseValue(v, 0)) return error_;
    SkipSpace();
    if (p_ != end_) {
      Fail(p_,
           "unexpected " + DescribeChar(static_cast<unsigned char>(*p_)) + " after the JSON value");
      return error_;
    }
    return v;
  }

 private:
  // Records an error at `at`. Line and column are computed only here, so the
  // hot path never counts newlines. Columns count characters, not bytes.
  bool Fail(const char* at, const std::string& what) {
    uint64_t line = 1, col = 1;
    for (const char* q = begin_; q < at; ++q) {
      if (*q == '\n') {
        ++line;
        col = 1;
      } else if ((static_cast<unsigned char>(*q) & 0xC0) != 0x80) {
        ++col;
      }
    }
    error_ = InvalidArgument(std::string(origin_) + ":" + std::to_string(line) + ":" +
                             std::to_string(col) + ": " + what);
    return false;
  }

  bool FailUnexpected(const char* at, const char* expected) {
    if (at >= end_) return Fail(at, std::string("unexpected end of input, expected ") + expected);
    if (*at == '/') return Fail(at, "comments are not allowed in JSON");
    return Fail(at, "unexpected " + DescribeChar(static_cast<unsigned char>(*at)) + ", expected " +
                        expected);
  }

  void SkipSpace() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  bool ParseValue(Value& out, int depth) {
    if (p_ >= end_) return FailUnexpected(p_, "a value");
    switch (*p_) {
      case '{': return ParseObject(out, depth + 1);
      case '[': return ParseArray(out, depth + 1);
      case '"': {
        std::string s;
        if (!ParseString(s)) return false;
        out = Value::String(std::move(s));
        return true;
      }
      case 't': return ParseLiteral("true", Value::Bool(true), out);
      case 'f': return ParseLiteral("false", Value::Bool(false), out);
      case 'n': return ParseLiteral("null", Value(), out);
      default:
        if (*p_ == '-' || IsDigit(*p_)) return ParseNumber(out);
        return FailUnexpected(p_, "a value");
    }
  }

  bool ParseLiteral(std::string_view word, Value value, Value& out) {
    if (static_cast<size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word) {
      return FailUnexpected(p_, "a value");
    }
    p_ += word.size();
    out = std::move(value);
    return true;
  }

  bool CheckDepth(int depth) {
    if (depth <= kMaxDepth) return true;
    return Fail(p_, "nesting deeper than " + std::to_string(kMaxDepth) + " levels");
  }

  bool ParseArray(Value& out, int depth) {
    if (!CheckDepth(depth)) return false;
    ++p_;  // '['
    std::vector<Value> items;
    SkipSpace();
    if (p_ < end_ && *p_ == ']') {
      ++p_;
      out = Value::Array(std::move(items));
      return true;
    }
    for (;;) {
      SkipSpace();
      if (p_ < end_ && *p_ == ']') return Fail(p_, "trailing comma before ']'");
      items.emplace_back();
      if (!ParseValue(items.back(), depth)) return false;
      SkipSpace();
      if (p_ < end_ && *p_ == ',') {
        ++p_;
        continue;
      }
      if (p_ < end_ && *p_ == ']') {
        ++p_;
        break;
      }
      return FailUnexpected(p_, "',' or ']'");
    }
    items.shrink_to_fit();
    out = Value::Array(std::move(items));
    return true;
  }

  bool ParseObject(Value& out, int depth) {
    if (!CheckDepth(depth)) return false;
    const char* open = p_;
    ++p_;  // '{'
    std::vector<Value::Member> members;
    SkipSpace();
    if (p_ < end_ && *p_ == '}') {
      ++p_;
      out = Value::Object(std::move(members));
      return true;
    }
    for (;;) {
      SkipSpace();
      if (p_ < end_ && *p_ == '}') return Fail(p_, "trailing comma before '}'");
      if (p_ >= end_ || *p_ != '"') return FailUnexpected(p_, "a member name in quotes");
      const char* key_at = p_;
      members.emplace_back();
      if (!ParseString(members.back().first)) return false;
      if (members.size() <= kLinearKeyCheck && !CheckNewKey(members, key_at)) return false;
      SkipSpace();
      if (p_ >= end_ || *p_ != ':') return FailUnexpected(p_, "':'");
      ++p_;
      SkipSpace();
      if (!ParseValue(members.back().second, depth)) return false;
      SkipSpace();
      if (p_ < end_ && *p_ == ',') {
        ++p_;
        continue;
      }
      if (p_ < end_ && *p_ == '}') {
        ++p_;
        break;
      }
      return FailUnexpected(p_, "',' or '}'");
    }
    if (!CheckUniqueKeys(members, open)) return false;
    members.shrink_to_fit();
    out = Value::Object(std::move(members));
    return true;
  }

  // RFC 8259 leaves duplicate names to the implementation; for a manifest a
  // duplicate is almost surely a mistake, and which copy wins would be
  // arbitrary, so it is an error. Small objects (nearly all of them) are
  // checked key by key, large ones once at the end by sorting.
  static constexpr size_t kLinearKeyCheck = 16;

  bool CheckNewKey(const std::vector<Value::Member>& members, const char* key_at) {
    const std::string& key = members.back().first;
    for (size_t i = 0; i + 1 < members.size(); ++i) {
      if (members[i].first == key) return DuplicateKey(key_at, key);
    }
    return true;
  }

  bool CheckUniqueKeys(const std::vector<Value::Member>& members, const char* open) {
    if (members.size() <= kLinearKeyCheck) return true;
    std::vector<const std::string*> keys;
    keys.reserve(members.size());
    for (const auto& m : members) keys.push_back(&m.first);
    std::sort(keys.begin(), keys.end(),
              [](const std::string* a, const std::string* b) { return *a < *b; });
    for (size_t i = 1; i < keys.size(); ++i) {
      if (*keys[i] == *keys[i - 1]) return DuplicateKey(open, *keys[i]);
    }
    return true;
  }

  bool DuplicateKey(const char* at, const std::string& key) {
    std::string shown;
    PrintString(shown, key);
    return Fail(at, "object has member " + shown + " more than once");
  }

  bool ParseHex4(const char* at, uint32_t& out) {
    if (end_ - at < 4) return Fail(at - 2, "truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = at[i];
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        v |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        v |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return Fail(at - 2, "invalid \\u escape \"\\u" +
                                std::string(at, std::min<size_t>(4, end_ - at)) + "\"");
      }
    }
    out = v;
    return true;
  }

  // p_ at the opening quote. Appends the decoded string to `out`.
  bool ParseString(std::string& out) {
    const char* open = p_;
    ++p_;
    // Fast path: most strings hold no escapes and only ASCII; find where the
    // plain run ends and copy it in one piece.
    const char* run = p_;
    for (;;) {
      while (p_ < end_) {
        const unsigned char c = static_cast<unsigned char>(*p_);
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
        ++p_;
      }
      if (p_ >= end_) return Fail(open, "unterminated string");
      const unsigned char c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        out.append(run, p_ - run);
        ++p_;
        return true;
      }
      if (c >= 0x80) {
        const size_t n = Utf8SequenceLength(reinterpret_cast<const unsigned char*>(p_),
                                            reinterpret_cast<const unsigned char*>(end_));
        if (n == 0) return Fail(p_, "invalid UTF-8 (" + DescribeChar(c) + ") in string");
        p_ += n;
        continue;
      }
      if (c < 0x20) {
        char buf[48];
        std::snprintf(buf, sizeof buf, "unescaped control character U+%04X in string", c);
        return Fail(p_, buf);
      }
      // Backslash: flush the plain run, decode the escape.
      if (out.capacity() < out.size() + (p_ - run) + 16) {
        out.reserve(out.size() + (p_ - run) + 16);
      }
      out.append(run, p_ - run);
      const char* esc = p_;
      if (end_ - p_ < 2) return Fail(open, "unterminated string");
      const char e = p_[1];
      p_ += 2;
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp;
          if (!ParseHex4(p_, cp)) return false;
          p_ += 4;
          if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return Fail(esc, "unpaired low surrogate \"\\u" + std::string(esc + 2, 4) + "\"");
          }
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t lo = 0;
            if (end_ - p_ < 6 || p_[0] != '\\' || p_[1] != 'u' || !ParseHex4(p_ + 2, lo) ||
                lo < 0xDC00 || lo > 0xDFFF) {
              if (!error_.ok()) return false;
              return Fail(esc, "unpaired high surrogate \"\\u" + std::string(esc + 2, 4) + "\"");
            }
            p_ += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          AppendUtf8(out, cp);
          break;
        }
        default: return Fail(esc, "invalid escape \"\\" + std::string(1, e) + "\" in string");
      }
      run = p_;
    }
  }

  bool ParseNumber(Value& out) {
    const char* start = p_;
    bool negative = false;
    if (*p_ == '-') {
      negative = true;
      ++p_;
    }
    if (p_ >= end_ || !IsDigit(*p_)) return FailUnexpected(p_, "a digit");
    const char* digits = p_;
    if (*p_ == '0') {
      ++p_;
      if (p_ < end_ && IsDigit(*p_)) {
        while (p_ < end_ && IsDigit(*p_)) ++p_;
        return Fail(start, "number " + std::string(start, p_ - start) + " has a leading zero");
      }
    } else {
      while (p_ < end_ && IsDigit(*p_)) ++p_;
    }
    const char* int_end = p_;
    bool is_double = false;
    if (p_ < end_ && *p_ == '.') {
      is_double = true;
      ++p_;
      if (p_ >= end_ || !IsDigit(*p_)) return FailUnexpected(p_, "a digit after '.'");
      while (p_ < end_ && IsDigit(*p_)) ++p_;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      is_double = true;
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ >= end_ || !IsDigit(*p_)) return FailUnexpected(p_, "a digit in the exponent");
      while (p_ < end_ && IsDigit(*p_)) ++p_;
    }
    const std::string_view literal(start, p_ - start);

    if (!is_double) {
      // Exact: accumulate the magnitude in 64 bits, never through a double.
      uint64_t mag = 0;
      for (const char* q = digits; q < int_end; ++q) {
        const uint64_t d = static_cast<uint64_t>(*q - '0');
        if (mag > (UINT64_MAX - d) / 10) return OutOfRange64(start, literal);
        mag = mag * 10 + d;
      }
      if (!negative) {
        out = Value::UInt(mag);
        return true;
      }
      constexpr uint64_t kMinMagnitude = uint64_t{1} << 63;
      if (mag > kMinMagnitude) return OutOfRange64(start, literal);
      out = Value::Int(mag == kMinMagnitude ? INT64_MIN : -static_cast<int64_t>(mag));
      return true;
    }

    // from_chars is locale independent (a process that changed LC_NUMERIC
    // must still read "1.5") and needs no NUL-terminated copy.
    double d = 0;
    const auto [ptr, ec] = std::from_chars(start, p_, d, std::chars_format::general);
    if (ec == std::errc::result_out_of_range) {
      // from_chars reports underflow and overflow alike. Underflow is
      // harmless (the nearest double is 0); overflow is refused, since JSON
      // has no infinity and a silent inf would change the value's meaning.
      static const locale_t c_locale = newlocale(LC_ALL_MASK, "C", locale_t{});
      d = strtod_l(std::string(literal).c_str(), nullptr, c_locale);
      if (std::isinf(d)) {
        return Fail(start, "number " + std::string(literal) + " is out of range for a double");
      }
    } else if (ec != std::errc() || ptr != p_) {
      return Fail(start, "invalid number " + std::string(literal));
    }
    out = Value::Double(d);
    return true;
  }

  bool OutOfRange64(const char* at, std::string_view literal) {
    return Fail(at, "integer " + std::string(literal) +
                        " does not fit in 64 bits (range -9223372036854775808 .. "
                        "18446744073709551615)");
  }

  const char* begin_;
  const char* p_;
  const char* end_;
  std::string_view origin_;
  Status error_;
};

}  // namespace

Result<Value> Parse(std::string_view text, std::string_view origin) {
  try {
    Parser parser(text, origin);
    return parser.ParseDocument();
  } catch (const std::bad_alloc&) {
    return OutOfRange(std::string(origin) + ": out of memory parsing " +
                      std::to_string(text.size()) + " bytes of JSON");
  }
}

Result<Value> ParseFile(const std::string& path, SourcePtr* file_read) {
  return ParseFile(*DefaultInputFs(), path, file_read);
}

Result<Value> ParseFile(InputFs& fs, const std::string& path, SourcePtr* file_read) {
  // Through FileSource, the one way files are opened for reading: it
  // refuses a FIFO, a device or a directory before reading.
  ETPACK_ASSIGN_OR_RETURN(const SourcePtr file, FileSource(fs, path));
  if (file_read != nullptr) *file_read = file;
  ETPACK_ASSIGN_OR_RETURN(const std::vector<uint8_t> bytes,
                          ReadAll(*file, std::numeric_limits<uint64_t>::max()));
  return Parse(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), path);
}

// ---------------------------------------------------------------------------
// Printer

namespace {

void PrintString(std::string& out, std::string_view s) {
  out += '"';
  const char* run = s.data();
  const char* end = s.data() + s.size();
  for (const char* q = run; q < end; ++q) {
    const unsigned char c = static_cast<unsigned char>(*q);
    if (c >= 0x80) {
      // Valid sequences pass through; any other byte becomes U+FFFD, so
      // the output is valid JSON whatever a corrupt file holds.
      const size_t n = Utf8SequenceLength(reinterpret_cast<const unsigned char*>(q),
                                          reinterpret_cast<const unsigned char*>(end));
      if (n > 0) {
        q += n - 1;
        continue;
      }
      out.append(run, q - run);
      run = q + 1;
      out += "\xEF\xBF\xBD";
      continue;
    }
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(run, q - run);
    run = q + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default: {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04X", c);
        out += buf;
      }
    }
  }
  out.append(run, end - run);
  out += '"';
}

void PrintDouble(std::string& out, double d) {
  if (std::isnan(d)) {
    out += "\"nan\"";
    return;
  }
  if (std::isinf(d)) {
    out += d < 0 ? "\"-inf\"" : "\"inf\"";
    return;
  }
  char buf[40];
  // Same digits as %.17g, but independent of the C locale.
  const auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::general, 17);
  assert(ec == std::errc());
  (void)ec;
  const std::string_view text(buf, ptr - buf);
  out += text;
  // An integral double printed as "1" would read back as an integer; keep
  // the kind across a round trip.
  if (text.find_first_of(".e") == std::string_view::npos) out += ".0";
}

class Printer {
 public:
  Printer(std::string& out, int indent) : out_(out), indent_(indent) {}

  void Print(const Value& v, int level) {
    switch (v.kind()) {
      case Kind::kNull: out_ += "null"; return;
      case Kind::kBool: out_ += v.as_bool() ? "true" : "false"; return;
      case Kind::kInt: out_ += std::to_string(v.as_int()); return;
      case Kind::kUInt: out_ += std::to_string(v.as_uint()); return;
      case Kind::kDouble: PrintDouble(out_, v.as_double()); return;
      case Kind::kString: PrintString(out_, v.as_string()); return;
      case Kind::kArray: {
        const auto& items = v.items();
        if (items.empty()) {
          out_ += "[]";
          return;
        }
        out_ += '[';
        for (size_t i = 0; i < items.size(); ++i) {
          if (i > 0) out_ += ',';
          NewLine(level + 1);
          Print(items[i], level + 1);
        }
        NewLine(level);
        out_ += ']';
        return;
      }
      case Kind::kObject: {
        const auto& members = v.members();
        if (members.empty()) {
          out_ += "{}";
          return;
        }
        out_ += '{';
        for (size_t i = 0; i < members.size(); ++i) {
          if (i > 0) out_ += ',';
          NewLine(level + 1);
          Member(members[i].first);
          Print(members[i].second, level + 1);
        }
        NewLine(level);
        out_ += '}';
        return;
      }
    }
  }

 private:
  void NewLine(int level) {
    if (indent_ < 0) return;
    out_ += '\n';
    out_.append(static_cast<size_t>(level) * static_cast<size_t>(indent_), ' ');
  }

  void Member(std::string_view name) {
    PrintString(out_, name);
    out_ += indent_ < 0 ? ":" : ": ";
  }

  std::string& out_;
  int indent_;
};

}  // namespace

std::string Print(const Value& value, int indent) {
  std::string out;
  Printer(out, indent).Print(value, 0);
  return out;
}

void StreamPrinter::NewLine(size_t level) {
  if (indent_ < 0) return;
  buffer_ += '\n';
  buffer_.append(level * static_cast<size_t>(indent_), ' ');
}

void StreamPrinter::BeforeValue() {
  if (keyed_) {  // the separator came with the key
    keyed_ = false;
    return;
  }
  if (open_.empty()) return;
  Level& l = open_.back();
  if (l.count++ > 0) buffer_ += ',';
  NewLine(open_.size());
}

void StreamPrinter::Key(std::string_view key) {
  Level& l = open_.back();
  if (l.count++ > 0) buffer_ += ',';
  NewLine(open_.size());
  PrintString(buffer_, key);
  buffer_ += indent_ < 0 ? ":" : ": ";
  keyed_ = true;
}

void StreamPrinter::Open(bool object) {
  BeforeValue();
  buffer_ += object ? '{' : '[';
  open_.push_back({object, 0});
}

void StreamPrinter::Put(const Value& value) {
  BeforeValue();
  Printer(buffer_, indent_).Print(value, static_cast<int>(open_.size()));
  // Handed on an element at a time: the text never grows with the document.
  if (buffer_.size() >= (64 << 10)) {
    write_(buffer_);
    buffer_.clear();
  }
}

void StreamPrinter::End() {
  const Level l = open_.back();
  open_.pop_back();
  if (l.count > 0) NewLine(open_.size());
  buffer_ += l.object ? '}' : ']';
  if (open_.empty()) {
    write_(buffer_);
    buffer_.clear();
  }
}

}  // namespace etpack::json
