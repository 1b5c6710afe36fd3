// apps/bundle_commands.h — `etpack bundle` and `etpack unbundle`.
//
//   etpack bundle IN.pte --cases CASES.json -o OUT.bpte
//                 [--layout standard|segmented] [--program-alignment N]
//   etpack unbundle IN.bpte -o OUT.pte
//
// Arguments follow the command name. Results go to stdout, errors to stderr as "etpack: ...". Exit
// codes as for every command: 0 success, 1 failure, 2 usage error (printed
// with the command's usage). -h/--help prints the usage and returns 0.

#ifndef ETPACK_APPS_BUNDLE_COMMANDS_H_
#define ETPACK_APPS_BUNDLE_COMMANDS_H_

#include <string>
#include <vector>

namespace etpack::cli {

int Bundle(const std::vector<std::string>& argv);
int Unbundle(const std::vector<std::string>& argv);

}  // namespace etpack::cli

#endif  // ETPACK_APPS_BUNDLE_COMMANDS_H_
