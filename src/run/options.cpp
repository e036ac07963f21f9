#include "src/run/options.hpp"

#include <array>

namespace dfmp2 {
namespace {

constexpr std::array<std::pair<ScfType, const char*>, 2> kScfTypes{{{ScfType::df, "df"}, {ScfType::exact, "exact"}}};
constexpr std::array<std::pair<ScfGuess, const char*>, 2> kScfGuesses{{{ScfGuess::sad, "sad"}, {ScfGuess::core, "core"}}};

}  // namespace

NamedChoices<ScfType> scf_type_names() { return kScfTypes; }
NamedChoices<ScfGuess> scf_guess_names() { return kScfGuesses; }

template <>
std::string name_of(ScfType value) { return kernels::name_in(scf_type_names(), value); }
template <>
std::string name_of(ScfGuess value) { return kernels::name_in(scf_guess_names(), value); }
template <>
std::string name_of(kernels::Backend value) { return kernels::name_in(backend_names(), value); }
template <>
std::string name_of(kernels::Precision value) { return kernels::name_in(precision_names(), value); }

}  // namespace dfmp2
