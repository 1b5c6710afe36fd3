// list_text.h (internal) — "a, b, c": how messages name several files or
// keys, so a list reads the same wherever it is reported.

#ifndef ETPACK_LIST_TEXT_H_
#define ETPACK_LIST_TEXT_H_

#include <string>
#include <vector>

namespace etpack {

inline std::string ListText(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

}  // namespace etpack

#endif  // ETPACK_LIST_TEXT_H_
