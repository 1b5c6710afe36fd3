// apps/usage.h — how a command ends: the exit codes, the help texts, and
// how errors reach stderr.

#ifndef ETPACK_APPS_USAGE_H_
#define ETPACK_APPS_USAGE_H_

#include <string>

#include "etpack/status.h"

namespace etpack::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// `etpack --help`: every command's synopsis and summary.
void PrintUsage();
// `etpack COMMAND --help`: the command's synopsis, what it does and its
// options. False (nothing printed) for an unknown command.
bool PrintCommandHelp(const std::string& command);

// Prints "etpack: COMMAND: <message>" and "try 'etpack COMMAND --help'" on
// stderr; returns 2.
int UsageError(const std::string& command, const std::string& message);
// The same without a command (none given, or not a known one).
int UsageError(const std::string& message);
// Prints "etpack: <status message>" on stderr; returns 1.
int Failure(const Status& status);
// Prints "etpack: cannot read PATH: why" on stderr; returns 1.
int CannotRead(const std::string& path, const Status& status);
// The verdict of `verify` for a file that failed to open: "PATH: invalid:
// why" on stderr (CannotRead for kIoError); returns 1.
int Invalid(const std::string& path, const Status& status);

}  // namespace etpack::cli

#endif  // ETPACK_APPS_USAGE_H_
