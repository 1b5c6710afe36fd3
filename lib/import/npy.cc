#include "etpack/npy.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace etpack {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
// numpy's own limit on the number of dimensions (NPY_MAXDIMS, numpy 2).
constexpr size_t kMaxRank = 64;

struct DescrInfo {
  char kind;
  int itemsize;
  int scalar_type;
};

constexpr DescrInfo kDescrs[] = {
    {'f', 2, 5},  {'f', 4, 6},  {'f', 8, 7},                 // HALF FLOAT DOUBLE
    {'i', 1, 1},  {'i', 2, 2},  {'i', 4, 3},  {'i', 8, 4},   // CHAR SHORT INT LONG
    {'u', 1, 0},  {'u', 2, 27}, {'u', 4, 28}, {'u', 8, 29},  // BYTE UINT16/32/64
    {'b', 1, 11},                                            // BOOL
};

const DescrInfo* FindDescr(char kind, std::string_view size_text) {
  for (const DescrInfo& d : kDescrs) {
    if (d.kind == kind && size_text.size() == 1 && size_text[0] == '0' + d.itemsize) return &d;
  }
  return nullptr;
}

// A value of the header's dict literal. Only what numpy writes is modelled.
struct PyValue {
  enum class Kind { kString, kBool, kTuple };
  Kind kind = Kind::kString;
  std::string str;
  bool boolean = false;
  std::vector<int64_t> ints;  // a tuple's; their range is LayoutOfInts'
};

// Parser for the header's Python dict literal. Deliberately narrow: strings
// without escapes, True/False and tuples of non-negative integers are the
// only values numpy.save produces for the three keys it writes.
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : s_(text) {}

  // Parses the whole header; on failure error() says what and where.
  bool ParseDict(std::vector<std::pair<std::string, PyValue>>* out) {
    SkipSpace();
    if (!Expect('{')) return false;
    SkipSpace();
    while (!AtEnd() && Peek() != '}') {
      std::pair<std::string, PyValue> entry;
      if (Peek() != '\'' && Peek() != '"') return Fail("expected a quoted key");
      if (!ParseString(&entry.first)) return false;
      SkipSpace();
      if (!Expect(':')) return false;
      SkipSpace();
      if (!ParseValue(entry.first, &entry.second)) return false;
      out->push_back(std::move(entry));
      SkipSpace();
      if (!AtEnd() && Peek() == ',') {
        ++pos_;
        SkipSpace();
      } else if (AtEnd() || Peek() != '}') {
        return Fail("expected ',' or '}'");
      }
    }
    if (!Expect('}')) return false;
    SkipSpace();
    if (!AtEnd()) return Fail("unexpected text after the closing '}'");
    return true;
  }

  const std::string& error() const { return error_; }

 private:
  bool AtEnd() const { return pos_ >= s_.size(); }
  char Peek() const { return s_[pos_]; }

  void SkipSpace() {
    while (!AtEnd() && (Peek() == ' ' || Peek() == '\t' || Peek() == '\n' || Peek() == '\r')) {
      ++pos_;
    }
  }

  bool Fail(const std::string& what) {
    error_ = what + " at header offset " + std::to_string(pos_);
    if (!AtEnd()) {
      const unsigned char c = static_cast<unsigned char>(Peek());
      error_ += c >= 0x20 && c < 0x7f ? std::string(" (found '") + Peek() + "')"
                                      : " (found byte " + std::to_string(c) + ")";
    } else {
      error_ += " (end of header)";
    }
    return false;
  }

  bool Expect(char c) {
    if (AtEnd() || Peek() != c) return Fail(std::string("expected '") + c + "'");
    ++pos_;
    return true;
  }

  bool ParseString(std::string* out) {
    const char quote = Peek();
    ++pos_;
    const size_t start = pos_;
    while (!AtEnd() && Peek() != quote) {
      if (Peek() == '\\') return Fail("escape sequences in strings are not supported");
      if (Peek() == '\n') return Fail("unterminated string");
      ++pos_;
    }
    if (AtEnd()) return Fail("unterminated string");
    out->assign(s_.substr(start, pos_ - start));
    ++pos_;
    return true;
  }

  bool ParseWord(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    const size_t end = pos_ + word.size();
    if (end < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[end])) || s_[end] == '_')) {
      return false;
    }
    pos_ = end;
    return true;
  }

  bool ParseValue(const std::string& key, PyValue* out) {
    if (AtEnd()) return Fail("expected a value for '" + key + "'");
    const char c = Peek();
    if (c == '\'' || c == '"') {
      out->kind = PyValue::Kind::kString;
      return ParseString(&out->str);
    }
    if (c == '(') {
      out->kind = PyValue::Kind::kTuple;
      return ParseTuple(key, &out->ints);
    }
    if (c == '[') {
      return Fail("'" + key + "' is a list; structured dtypes and lists are not supported");
    }
    out->kind = PyValue::Kind::kBool;
    if (ParseWord("True")) {
      out->boolean = true;
      return true;
    }
    if (ParseWord("False")) {
      out->boolean = false;
      return true;
    }
    return Fail("expected a string, True, False or a tuple for '" + key + "'");
  }

  // "()", "(5,)", "(2, 3)", "(2, 3,)"; Python 2's "2L" spelling is accepted.
  // "(5)" is the integer 5 in Python, not a tuple, and is refused as numpy
  // refuses it.
  bool ParseTuple(const std::string& key, std::vector<int64_t>* out) {
    ++pos_;  // '('
    SkipSpace();
    bool trailing_comma = false;
    while (!AtEnd() && Peek() != ')') {
      const size_t start = pos_;
      if (Peek() == '-') return Fail("negative dimension in '" + key + "'");
      uint64_t v = 0;
      bool too_big = false;  // beyond int64: no layout range can even hold it
      while (!AtEnd() && Peek() >= '0' && Peek() <= '9') {
        const uint64_t digit = static_cast<uint64_t>(Peek() - '0');
        if (v > (uint64_t{INT64_MAX} - digit) / 10) too_big = true;
        if (!too_big) v = v * 10 + digit;
        ++pos_;
      }
      if (pos_ == start) return Fail("expected a non-negative integer in '" + key + "'");
      const std::string digits(s_.substr(start, pos_ - start));
      if (!AtEnd() && Peek() == 'L') ++pos_;
      if (too_big) {
        pos_ = start;
        return Fail("'" + key + "'[" + std::to_string(out->size()) + "] = " + digits +
                    " is not a 64-bit integer");
      }
      out->push_back(static_cast<int64_t>(v));
      if (out->size() > kMaxRank) {
        return Fail("'" + key + "' has more than " + std::to_string(kMaxRank) + " dimensions");
      }
      SkipSpace();
      trailing_comma = false;
      if (!AtEnd() && Peek() == ',') {
        ++pos_;
        trailing_comma = true;
        SkipSpace();
      } else if (AtEnd() || Peek() != ')') {
        return Fail("expected ',' or ')' in '" + key + "'");
      }
    }
    if (!Expect(')')) return false;
    if (out->size() == 1 && !trailing_comma) {
      return Fail("'" + key + "' is a parenthesized integer, not a tuple (write (n,))");
    }
    return true;
  }

  std::string_view s_;
  size_t pos_ = 0;
  std::string error_;
};

std::string ShapeText(const std::vector<int32_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

// Why `descr` is refused; completes "descr '<descr>' ...".
std::string DescrProblem(const std::string& descr) {
  if (descr == "O" || (descr.size() >= 2 && descr[1] == 'O')) {
    return "is an object array (pickled Python objects), which is not supported";
  }
  if (descr.size() == 3 && descr[0] == '>' &&
      FindDescr(descr[1], std::string_view(descr).substr(2)) != nullptr) {
    return "is big-endian, which is not supported; save a little-endian copy with "
           "arr.astype(arr.dtype.newbyteorder('<'))";
  }
  return "is not supported (supported: <f2 <f4 <f8 |i1 <i2 <i4 <i8 |u1 <u2 <u4 <u8 |b1)";
}

}  // namespace

int ScalarTypeForNpyDescr(const std::string& descr) {
  if (descr.size() != 3) return -1;
  const DescrInfo* d = FindDescr(descr[1], std::string_view(descr).substr(2));
  if (d == nullptr) return -1;
  const char order = descr[0];
  // A byte order means nothing for one-byte items; numpy writes '|'.
  const bool order_ok = d->itemsize == 1
                            ? (order == '|' || order == '<' || order == '>' || order == '=')
                            : order == '<';
  return order_ok ? d->scalar_type : -1;
}

Result<NpyArray> ReadNpy(const std::string& path, const Env& env) {
  ETPACK_ASSIGN_OR_RETURN(const SourcePtr file, FileSource(env.in(), path));
  const uint64_t file_size = file->size();

  uint8_t prefix[12] = {};
  const size_t prefix_read = static_cast<size_t>(std::min<uint64_t>(file_size, sizeof prefix));
  ETPACK_RETURN_IF_ERROR(file->ReadAt(0, prefix, prefix_read));
  if (prefix_read < kMagicSize || std::memcmp(prefix, kMagic, kMagicSize) != 0) {
    return Corrupt(path + ": not a .npy file: it does not start with the magic \\x93NUMPY");
  }
  if (prefix_read < 10) {
    return Corrupt(path + ": .npy file of " + std::to_string(file_size) +
                   " bytes ends inside its preamble");
  }
  const unsigned major = prefix[6];
  const unsigned minor = prefix[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    return Unimplemented(path + ": .npy format version " + std::to_string(major) + "." +
                         std::to_string(minor) + " is not supported (1.0, 2.0 and 3.0 are)");
  }
  uint64_t header_len = 0;
  uint64_t header_start = 0;
  if (major == 1) {
    header_len = uint64_t{prefix[8]} | uint64_t{prefix[9]} << 8;
    header_start = 10;
  } else {
    if (prefix_read < 12) {
      return Corrupt(path + ": .npy file of " + std::to_string(file_size) +
                     " bytes ends inside its preamble");
    }
    header_len = uint64_t{prefix[8]} | uint64_t{prefix[9]} << 8 | uint64_t{prefix[10]} << 16 |
                 uint64_t{prefix[11]} << 24;
    header_start = 12;
  }
  if (header_len > kMaxNpyHeader) {
    return Corrupt(path + ": .npy header length " + std::to_string(header_len) +
                   " exceeds the limit of " + std::to_string(kMaxNpyHeader) + " bytes");
  }
  const uint64_t header_end = header_start + header_len;
  if (header_end > file_size) {
    return Corrupt(path + ": .npy header length " + std::to_string(header_len) +
                   " runs past the end of the file (" + std::to_string(file_size) + " bytes)");
  }
  std::string header;
  try {
    header.resize(static_cast<size_t>(header_len));
  } catch (const std::bad_alloc&) {
    return OutOfRange(path + ": cannot allocate " + std::to_string(header_len) +
                      " bytes for the .npy header");
  }
  ETPACK_RETURN_IF_ERROR(file->ReadAt(header_start, header.data(), header.size()));

  std::vector<std::pair<std::string, PyValue>> dict;
  HeaderParser parser(header);
  if (!parser.ParseDict(&dict)) {
    return Corrupt(path + ": malformed .npy header: " + parser.error());
  }
  const PyValue* descr = nullptr;
  const PyValue* fortran = nullptr;
  const PyValue* shape = nullptr;
  for (const auto& [key, value] : dict) {
    const PyValue** slot = key == "descr"           ? &descr
                           : key == "fortran_order" ? &fortran
                           : key == "shape"         ? &shape
                                                    : nullptr;
    if (slot == nullptr) {
      return Corrupt(path + ": .npy header has an unknown key '" + key +
                     "' (expected descr, fortran_order, shape)");
    }
    if (*slot != nullptr) return Corrupt(path + ": .npy header repeats the key '" + key + "'");
    *slot = &value;
  }
  for (const auto& [name, slot] : {std::pair<const char*, const PyValue*>{"descr", descr},
                                   {"fortran_order", fortran},
                                   {"shape", shape}}) {
    if (slot == nullptr) return Corrupt(path + ": .npy header has no '" + name + "'");
  }
  if (descr->kind != PyValue::Kind::kString) {
    return Corrupt(path + ": .npy header: 'descr' is not a string");
  }
  if (fortran->kind != PyValue::Kind::kBool) {
    return Corrupt(path + ": .npy header: 'fortran_order' is not True or False");
  }
  if (shape->kind != PyValue::Kind::kTuple) {
    return Corrupt(path + ": .npy header: 'shape' is not a tuple");
  }

  NpyArray out;
  out.descr = descr->str;
  const int scalar_type = ScalarTypeForNpyDescr(out.descr);
  if (scalar_type < 0) {
    return Unimplemented(path + ": descr '" + out.descr + "' " + DescrProblem(out.descr));
  }
  const size_t rank = shape->ints.size();
  std::vector<int64_t> order(rank);
  for (size_t i = 0; i < rank; ++i) {
    order[i] = static_cast<int64_t>(fortran->boolean ? rank - 1 - i : i);
  }
  // The library's rule for every layout: each dimension an int32 size.
  ETPACK_ASSIGN_OR_RETURN(out.layout,
                          LayoutOfInts(scalar_type, shape->ints, order, path + ": shape"));
  ETPACK_ASSIGN_OR_RETURN(const uint64_t nbytes, LayoutNbytes(out.layout, path));
  const uint64_t available = file_size - header_end;
  if (available < nbytes) {
    return Corrupt(path + ": truncated: shape " + ShapeText(out.layout.sizes) + " of '" +
                   out.descr + "' needs " + std::to_string(nbytes) + " bytes after the " +
                   std::to_string(header_end) + "-byte header, the file has " +
                   std::to_string(available) + " (file size " + std::to_string(file_size) + ")");
  }
  out.data = SliceSource(file, header_end, nbytes);
  return out;
}

}  // namespace etpack
