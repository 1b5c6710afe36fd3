#include "args.h"

#include <algorithm>
#include <optional>

namespace etpack::cli {

bool Args::Has(const std::string& flag) const {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

const std::string* Args::Value(const std::string& option) const {
  auto it = values.find(option);
  return it == values.end() ? nullptr : &it->second;
}

std::vector<std::string> Args::Values(const std::string& option) const {
  std::vector<std::string> out;
  for (const auto& [name, value] : all_values) {
    if (name == option) out.push_back(value);
  }
  return out;
}

const std::string* Args::Output() const { return Value("-o"); }

Result<Args> ParseArgs(const std::vector<std::string>& argv,
                       const std::vector<std::string>& value_options,
                       const std::vector<std::string>& flag_options) {
  auto known = [](const std::vector<std::string>& list, const std::string& s) {
    return std::find(list.begin(), list.end(), s) != list.end();
  };
  Args args;
  bool options_done = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (options_done || a.size() < 2 || a[0] != '-') {
      args.positional.push_back(a);
      continue;
    }
    if (a == "--") {
      options_done = true;
      continue;
    }
    std::string name = a;
    std::optional<std::string> inline_value;
    if (a.compare(0, 2, "--") == 0) {
      const size_t eq = a.find('=');
      if (eq != std::string::npos) {
        name = a.substr(0, eq);
        inline_value = a.substr(eq + 1);
      }
    }
    if (known(value_options, name) || known(value_options, name + "...")) {
      std::string value;
      if (inline_value) {
        value = *inline_value;
      } else if (i + 1 < argv.size()) {
        value = argv[++i];
      } else {
        return InvalidArgument("option " + name + " needs a value");
      }
      const std::string key = name == "--output" ? "-o" : name;
      if (key == "-o" && value.empty()) return InvalidArgument(name + " needs a file name");
      if (key == "-o" && value == "-") {
        return InvalidArgument(
            name + " '-': name an output file (etpack does not write to standard output)");
      }
      const auto [it, fresh] = args.values.emplace(key, value);
      if (!fresh && !known(value_options, name + "...")) {
        return InvalidArgument("option " + (key == "-o" ? std::string("-o/--output") : name) +
                               " given twice ('" + it->second + "' and '" + value + "')");
      }
      args.all_values.emplace_back(key, value);
    } else if (known(flag_options, name)) {
      if (inline_value) return InvalidArgument("option " + name + " takes no value");
      if (args.Has(name)) return InvalidArgument("option " + name + " given twice");
      args.flags.push_back(name);
    } else {
      return InvalidArgument("unknown option '" + a + "'");
    }
  }
  return args;
}

}  // namespace etpack::cli
