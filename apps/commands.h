// apps/commands.h — the subcommands of the `etpack` tool.
//
// Each command takes its arguments (without the program and command names),
// prints its result on stdout and its errors on stderr ("etpack: ..."), and
// returns the process exit code: 0 success, 1 failure, 2 usage error.

#ifndef ETPACK_APPS_COMMANDS_H_
#define ETPACK_APPS_COMMANDS_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "etpack/json.h"
#include "etpack/ptd.h"
#include "etpack/pte_reader.h"
#include "etpack/status.h"

namespace etpack::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// The full usage text printed by `etpack --help`.
extern const char kUsage[];

// Prints "etpack: <message>" and the usage text on stderr; returns 2.
int UsageError(const std::string& message);
// Prints "etpack: <status message>" on stderr; returns 1.
int Failure(const Status& status);

// Command-line arguments split into positionals and options.
struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> values;  // options that take a value (last wins)
  std::vector<std::pair<std::string, std::string>> all_values;  // every one, in order
  std::vector<std::string> flags;             // options without a value

  bool Has(const std::string& flag) const;
  // The value of `option`, or nullptr when not given.
  const std::string* Value(const std::string& option) const;
  // Every value given for a repeatable `option`, in order.
  std::vector<std::string> Values(const std::string& option) const;
};

// Splits `argv`. `value_options` take a value ("-o X", "--size=X",
// "--size X"); `flag_options` do not. "--" ends the options. Fails with a
// message naming the offending argument (unknown option, missing value).
Result<Args> ParseArgs(const std::vector<std::string>& argv,
                       const std::vector<std::string>& value_options,
                       const std::vector<std::string>& flag_options);

// A byte count: plain digits, or digits followed by K, M, G, T, KiB, MiB,
// GiB or TiB (all 1024-based; case-insensitive). `what` names the option
// in errors.
Result<uint64_t> ParseByteSize(std::string_view text, std::string_view what);

// "1.5 GiB", "512 MiB", "123 bytes".
std::string HumanBytes(uint64_t bytes);
// "123 bytes", or "5368709120 bytes (5.0 GiB)" from 1 KiB on.
std::string BytesText(uint64_t bytes);

int Inspect(const std::vector<std::string>& argv);
int Verify(const std::vector<std::string>& argv);
int Repack(const std::vector<std::string>& argv);
int Pack(const std::vector<std::string>& argv);
int Ptd(const std::vector<std::string>& argv);   // apps/ptd_commands.cc
int Demo(const std::vector<std::string>& argv);  // apps/demo.cc

// {"scalar_type", "sizes", "dim_order", "text": DescribeLayout(...)}.
json::Value LayoutJson(const TensorLayout& layout);

// What a file is, from its identifier at bytes 4..7.
enum class FileKind { kPte, kPtd, kBpte };
// Fails naming the file when it cannot be read, is shorter than 8 bytes, or
// carries none of ET12, FT01, BP08.
Result<FileKind> DetectFileKind(const std::string& path);

// The verdict for a file that failed to open: "PATH: invalid: why" (or
// "cannot read PATH" for I/O errors) on stderr; returns kExitFailure.
int Invalid(const std::string& path, const Status& status);

// The .pte report of inspect, printed or as JSON (also used for the program
// embedded in a .bpte).
void PrintPteReport(const PteFile& file);
json::Value PteReportJson(const PteFile& file);

// .ptd and .bpte halves of inspect and verify (apps/ptd_commands.cc,
// apps/bundle_commands.cc).
int InspectPtd(const std::string& path, bool as_json);
int VerifyPtd(const std::string& path);
int InspectBpte(const std::string& path, bool as_json);
int VerifyBpte(const std::string& path);

// Seconds since `start`, and this process's peak resident set in MiB.
double SecondsSince(std::chrono::steady_clock::time_point start);
double PeakRssMiB();

}  // namespace etpack::cli

#endif  // ETPACK_APPS_COMMANDS_H_
