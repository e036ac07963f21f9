#include "src/common/memory.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdio>

#include "src/common/errors.hpp"

namespace dfmp2 {

std::size_t physical_memory_bytes() {
  return static_cast<std::size_t>(sysconf(_SC_PHYS_PAGES)) *
         static_cast<std::size_t>(sysconf(_SC_PAGE_SIZE));
}

std::size_t default_memory_budget() { return physical_memory_bytes() / 2; }

std::string format_bytes(std::size_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.2f %s", value, kUnits[unit]);
  return text;
}

std::size_t parse_memory(const std::string& text) {
  std::size_t used = 0;
  double value = 0.0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit;
  for (char c : text.substr(used))
    if (!std::isspace(static_cast<unsigned char>(c)))
      unit += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  double scale = 0.0;
  if (unit.empty() || unit == "b") scale = 1.0;
  else if (unit == "k" || unit == "kb" || unit == "kib") scale = 1024.0;
  else if (unit == "m" || unit == "mb" || unit == "mib") scale = 1024.0 * 1024.0;
  else if (unit == "g" || unit == "gb" || unit == "gib") scale = 1024.0 * 1024.0 * 1024.0;
  else if (unit == "t" || unit == "tb" || unit == "tib") scale = std::pow(1024.0, 4);
  if (used == 0 || scale == 0.0 || !(value > 0.0) || !std::isfinite(value))
    throw InputError("invalid memory size '" + text + "' (expected e.g. 4GB, 500MB)");
  return static_cast<std::size_t>(value * scale);
}

std::size_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::size_t>(usage.ru_maxrss) * 1024;
}

}  // namespace dfmp2
