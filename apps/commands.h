// apps/commands.h — the subcommands of the `etpack` tool.
//
// Each command takes its arguments (without the program and command names),
// prints its result on stdout and its errors on stderr ("etpack: ..."), and
// returns the process exit code (usage.h): 0 success, 1 failure, 2 usage
// error. Commands parse with args.h and read sizes with units.h. Each reads
// and writes every file through `env` (etpack/env.h): main() makes one, the
// POSIX files both ways; a test gives its own (fault-injecting outputs).

#ifndef ETPACK_APPS_COMMANDS_H_
#define ETPACK_APPS_COMMANDS_H_

#include <string>
#include <vector>

#include "args.h"
#include "etpack/env.h"
#include "units.h"
#include "usage.h"

namespace etpack::cli {

int Inspect(const std::vector<std::string>& argv, const Env& env);   // apps/inspect.cc
int Verify(const std::vector<std::string>& argv, const Env& env);    // apps/verify.cc
int Repack(const std::vector<std::string>& argv, const Env& env);    // apps/repack.cc
int Pack(const std::vector<std::string>& argv, const Env& env);      // apps/pack.cc
int Ptd(const std::vector<std::string>& argv, const Env& env);       // apps/ptd_command.cc
int Bundle(const std::vector<std::string>& argv, const Env& env);    // apps/bundle.cc
int Unbundle(const std::vector<std::string>& argv, const Env& env);  // apps/bundle.cc
int Demo(const std::vector<std::string>& argv, const Env& env);      // apps/demo.cc
int Extract(const std::vector<std::string>& argv, const Env& env);   // apps/extract.cc
int Update(const std::vector<std::string>& argv, const Env& env);    // apps/update_command.cc
int Share(const std::vector<std::string>& argv, const Env& env);     // apps/share.cc

// Transport archives (etpack/archive.h), both in apps/archive_command.cc.
int Compress(const std::vector<std::string>& argv, const Env& env);
int Decompress(const std::vector<std::string>& argv, const Env& env);

}  // namespace etpack::cli

#endif  // ETPACK_APPS_COMMANDS_H_
