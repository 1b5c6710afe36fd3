// etpack — command-line front end of the etpack library.

#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"
#include "etpack_version.h"

int main(int argc, char** argv) {
  using namespace etpack::cli;
  if (argc < 2) return UsageError("missing command");
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  // The one Env of the process: every command reads and writes through it.
  const etpack::Env env;

  if (command == "-h" || command == "--help" || command == "help") {
    // `etpack help CMD` is `etpack CMD --help`.
    if (args.size() == 1 && PrintCommandHelp(args[0])) return kExitOk;
    if (!args.empty()) return UsageError("help: unknown command '" + args[0] + "'");
    PrintUsage();
    return kExitOk;
  }
  if (command == "--version") {
    std::puts("etpack " ETPACK_VERSION);
    return kExitOk;
  }
  for (const std::string& a : args) {
    if (a == "--") break;
    if (a == "-h" || a == "--help") {
      if (PrintCommandHelp(command)) return kExitOk;
      break;  // an unknown command: say so below
    }
  }
  if (command == "inspect") return Inspect(args, env);
  if (command == "verify") return Verify(args, env);
  if (command == "repack") return Repack(args, env);
  if (command == "pack") return Pack(args, env);
  if (command == "ptd") return Ptd(args, env);
  if (command == "bundle") return Bundle(args, env);
  if (command == "unbundle") return Unbundle(args, env);
  if (command == "demo") return Demo(args, env);
  if (command == "extract") return Extract(args, env);
  if (command == "update") return Update(args, env);
  if (command == "share") return Share(args, env);
  if (command == "compress") return Compress(args, env);
  if (command == "decompress") return Decompress(args, env);
  return UsageError("unknown command '" + command + "'");
}
