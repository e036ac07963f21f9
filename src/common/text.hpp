// Case folding of ASCII names: basis sets, file extensions, units, element symbols, keywords.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>

namespace dfmp2 {

inline std::string lowercase(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace dfmp2
