#include "core/same_file.h"

#include <sys/stat.h>

namespace etpack {

bool SameFile(int a, int b) {
  struct stat sa, sb;
  return a >= 0 && b >= 0 && ::fstat(a, &sa) == 0 && ::fstat(b, &sb) == 0 &&
         sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace etpack
