// The benchmark drivers' option values: "a,b,,c" → {"a", "b", "c"} for lists, and the value after
// an option.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace dfmp2::bench {

inline std::vector<std::string> comma_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) items.push_back(item);
  return items;
}

// The value after option argv[a], which a then points at; an option last on the line throws.
inline std::string option_value(int argc, char** argv, int& a) {
  if (a + 1 >= argc) throw std::invalid_argument(std::string(argv[a]) + " needs a value");
  return argv[++a];
}

}  // namespace dfmp2::bench
