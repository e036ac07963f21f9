// "a,b,,c" → {"a", "b", "c"}: the benchmark drivers' list options.
#pragma once

#include <sstream>
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

}  // namespace dfmp2::bench
