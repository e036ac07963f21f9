// Enumerations with the names users type and see: one table per enumeration, looked up both
// ways (the energy backends and precisions here; the run's other choices in src/run/options).
#pragma once

#include <span>
#include <stdexcept>
#include <string>
#include <utility>

namespace dfmp2::kernels {

template <typename Enum>
using NamedChoices = std::span<const std::pair<Enum, const char*>>;

// "a, b, c": the names, for messages (or with another separator, e.g. "a|b|c" for --help).
template <typename Enum>
std::string list_names(NamedChoices<Enum> table, const std::string& separator = ", ") {
  std::string names;
  for (const auto& [value, name] : table) names += (names.empty() ? "" : separator) + std::string(name);
  return names;
}

template <typename Enum>
std::string name_in(NamedChoices<Enum> table, Enum value) {
  for (const auto& [choice, name] : table)
    if (choice == value) return name;
  throw std::invalid_argument("invalid value " + std::to_string(int(value)) + " (expected one of: " +
                              list_names(table) + ")");
}

// Throws std::invalid_argument "unknown <what> '<name>' (expected one of: …)".
template <typename Enum>
Enum parse_in(NamedChoices<Enum> table, const std::string& name, const std::string& what) {
  for (const auto& [value, choice] : table)
    if (name == choice) return value;
  throw std::invalid_argument("unknown " + what + " '" + name + "' (expected one of: " + list_names(table) + ")");
}

}  // namespace dfmp2::kernels
