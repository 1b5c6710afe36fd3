// apps/args.h — a command's arguments, split into positionals and options.

#ifndef ETPACK_APPS_ARGS_H_
#define ETPACK_APPS_ARGS_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "etpack/status.h"

namespace etpack::cli {

struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> values;                    // options that take a value
  std::vector<std::pair<std::string, std::string>> all_values;  // every one, in order
  std::vector<std::string> flags;                               // options without a value

  bool Has(const std::string& flag) const;
  // The value of `option`, or nullptr when not given.
  const std::string* Value(const std::string& option) const;
  // Every value given for a repeatable `option`, in order.
  std::vector<std::string> Values(const std::string& option) const;
  // The value of -o (or its spelling --output), or nullptr.
  const std::string* Output() const;
};

// Splits `argv`. `value_options` take a value ("-o X", "--size=X",
// "--size X"); `flag_options` do not. An option may be given once, unless
// its name in `value_options` ends in "..." ("--data..."): then every
// value is kept (Args::Values). "--output" is another spelling of "-o",
// whose value must name a file: not empty, not "-" (outputs are written in
// place and published whole, never streamed). "--" ends the options. Fails
// with a message naming the offending argument (unknown option, missing
// value, repeated option, -o -).
Result<Args> ParseArgs(const std::vector<std::string>& argv,
                       const std::vector<std::string>& value_options,
                       const std::vector<std::string>& flag_options);

}  // namespace etpack::cli

#endif  // ETPACK_APPS_ARGS_H_
