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
  if (command == "inspect") return Inspect(args);
  if (command == "verify") return Verify(args);
  if (command == "repack") return Repack(args);
  if (command == "pack") return Pack(args);
  if (command == "ptd") return Ptd(args);
  if (command == "bundle") return Bundle(args);
  if (command == "unbundle") return Unbundle(args);
  if (command == "demo") return Demo(args);
  if (command == "extract") return Extract(args);
  if (command == "update") return Update(args);
  if (command == "share") return Share(args);
  if (command == "compress") return Compress(args);
  if (command == "decompress") return Decompress(args);
  return UsageError("unknown command '" + command + "'");
}
