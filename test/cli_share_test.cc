// `etpack share` end to end (etpack/share.h has the library's tests).
#include "cli_test_util.h"
int dummy_cli_share;
