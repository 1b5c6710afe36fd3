// etpack/list_text.h — "a, b, c": how messages and reports name several
// files, keys or numbers, so a list reads the same wherever it is shown
// (the library's messages, the CLI's reports, the content key's text).

#ifndef ETPACK_LIST_TEXT_H_
#define ETPACK_LIST_TEXT_H_

#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace etpack {

// The items (strings, or numbers in decimal) with `separator` between each
// two: ListText({"a", "b"}) is "a, b", ListText(sizes, ",") "2,3"; "" for
// none.
template <typename T>
std::string ListText(const std::vector<T>& items, std::string_view separator = ", ") {
  std::string text;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) text += separator;
    if constexpr (std::is_arithmetic_v<T>) {
      text += std::to_string(items[i]);
    } else {
      text += items[i];
    }
  }
  return text;
}

}  // namespace etpack

#endif  // ETPACK_LIST_TEXT_H_
