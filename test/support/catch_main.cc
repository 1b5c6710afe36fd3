// The tests' main: one for Catch2 2 (whose implementation this file then
// compiles) and Catch2 3 (whose implementation is its library).
#define CATCH_CONFIG_RUNNER
#include "catch.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

// Asked for the [xfs] cases (meson's FOLDER_xfs tests, through
// scripts/with_xfs.sh) without a scratch XFS: skipped (77, meson's code for
// it), saying why, rather than run where nothing shares extents.
static bool SkipXfs(int argc, char** argv) {
  const char* dir = std::getenv("ETPACK_XFS_DIR");
  if (dir != nullptr && *dir != '\0') return false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "[xfs]") != 0) continue;
    const char* why = std::getenv("ETPACK_XFS_SKIP");
    std::printf("skipped: no scratch XFS (ETPACK_XFS_DIR unset): %s\n",
                why ? why : "run through scripts/with_xfs.sh");
    return true;
  }
  return false;
}

int main(int argc, char** argv) {
  if (SkipXfs(argc, argv)) return 77;
  return Catch::Session().run(argc, argv);
}
