// etpack/status.h — how every etpack function reports failure.
//
// No exception crosses the library boundary. A fallible function returns a
// Status (or a Result<T>, which is a Status or a value). A failed Status
// carries a code and one line of text meant for a person: it names the file,
// the field and the offending value, e.g.
//
//   model.pte: segments[3].offset = 4096 + size 200 runs past the end of the
//   file (4200 bytes)
//
// Status is cheap to copy when OK (no allocation).

#ifndef ETPACK_STATUS_H_
#define ETPACK_STATUS_H_

#include <cassert>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace etpack {

enum class Code {
  kOk = 0,
  kInvalidArgument,  // the caller's request or input document is wrong
  kNotFound,         // a named file, key or method does not exist
  kCorrupt,          // an input artifact is malformed
  kOutOfRange,       // a size, offset or count does not fit
  kIoError,          // the operating system refused (errno text included)
  kUnimplemented,    // a valid request this version does not support
};

// Stable lower-case name of a code ("invalid argument", ...).
const char* CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(Code code, std::string message);

  static Status OK() { return Status(); }

  bool ok() const { return state_ == nullptr; }
  Code code() const { return state_ ? state_->code : Code::kOk; }
  // The message alone; empty when OK.
  const std::string& message() const;
  // "<message>" for a failure, "ok" for success.
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>". OK stays OK.
  // Used to add the file name or the enclosing field on the way up.
  Status WithContext(std::string_view context) const;

 private:
  struct State {
    Code code;
    std::string message;
  };
  std::shared_ptr<const State> state_;
};

Status InvalidArgument(std::string message);
Status NotFound(std::string message);
Status Corrupt(std::string message);
Status OutOfRange(std::string message);
Status Unimplemented(std::string message);
// An I/O failure: "<what>: <strerror(err)>".
Status IoError(std::string what, int err);

// A value or the Status that explains its absence.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    assert(!status_.ok() && "Result built from an OK Status has no value");
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  // REQUIRES: ok().
  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace etpack

// Evaluates a Status expression and returns it from the enclosing function
// when it failed.
#define ETPACK_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::etpack::Status etpack_status_ = (expr);        \
    if (!etpack_status_.ok()) return etpack_status_; \
  } while (0)

#define ETPACK_CONCAT_INNER_(a, b) a##b
#define ETPACK_CONCAT_(a, b) ETPACK_CONCAT_INNER_(a, b)

// `ETPACK_ASSIGN_OR_RETURN(auto x, F());` declares x from a Result or
// returns its Status.
#define ETPACK_ASSIGN_OR_RETURN(lhs, expr) \
  ETPACK_ASSIGN_OR_RETURN_IMPL_(ETPACK_CONCAT_(etpack_result_, __LINE__), lhs, expr)
#define ETPACK_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()

#endif  // ETPACK_STATUS_H_
