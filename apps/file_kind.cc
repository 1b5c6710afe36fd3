#include "file_kind.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace etpack::cli {

Result<FileKind> DetectFileKind(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    Status s = IoError(path, err);
    return err == ENOENT ? NotFound(s.message()) : s;
  }
  uint8_t head[8];
  size_t got = 0;
  while (got < sizeof head) {
    const ssize_t n = read(fd, head + got, sizeof head - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      return IoError(path, err);
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  if (got < sizeof head) {
    return Corrupt(path + ": " + std::to_string(got) +
                   " bytes is too short for a .pte, .ptd or .bpte file");
  }
  if (std::memcmp(head + 4, "ET12", 4) == 0) return FileKind::kPte;
  if (std::memcmp(head + 4, "FT01", 4) == 0) return FileKind::kPtd;
  if (std::memcmp(head + 4, "BP08", 4) == 0) return FileKind::kBpte;
  std::string id;
  for (int i = 4; i < 8; ++i) {
    const char c = static_cast<char>(head[i]);
    id += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return Corrupt(path + ": file identifier '" + id +
                 "' at bytes 4..7 is none of ET12 (.pte), FT01 (.ptd), BP08 (.bpte)");
}

}  // namespace etpack::cli
