#include "etpack/status.h"

#include <cstring>

namespace etpack {

const char* CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "ok";
    case Code::kInvalidArgument: return "invalid argument";
    case Code::kNotFound: return "not found";
    case Code::kCorrupt: return "corrupt";
    case Code::kOutOfRange: return "out of range";
    case Code::kIoError: return "I/O error";
    case Code::kUnimplemented: return "unimplemented";
  }
  return "unknown";
}

Status::Status(Code code, std::string message) {
  if (code != Code::kOk) {
    state_ = std::make_shared<const State>(State{code, std::move(message)});
  }
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return state_ ? state_->message : kEmpty;
}

std::string Status::ToString() const { return ok() ? "ok" : state_->message; }

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string m(context);
  m += ": ";
  m += state_->message;
  return Status(state_->code, std::move(m));
}

Status InvalidArgument(std::string m) { return Status(Code::kInvalidArgument, std::move(m)); }
Status NotFound(std::string m) { return Status(Code::kNotFound, std::move(m)); }
Status Corrupt(std::string m) { return Status(Code::kCorrupt, std::move(m)); }
Status OutOfRange(std::string m) { return Status(Code::kOutOfRange, std::move(m)); }
Status Unimplemented(std::string m) { return Status(Code::kUnimplemented, std::move(m)); }

Status IoError(std::string what, int err) {
  what += ": ";
  what += std::strerror(err);
  return Status(Code::kIoError, std::move(what));
}

}  // namespace etpack
