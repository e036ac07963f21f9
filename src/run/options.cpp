#include "src/run/options.hpp"

#include <array>

namespace dfmp2 {
namespace {

constexpr std::array<std::pair<ScfType, const char*>, 2> kScfTypes{{{ScfType::df, "df"}, {ScfType::exact, "exact"}}};
constexpr std::array<std::pair<ScfGuess, const char*>, 2> kScfGuesses{{{ScfGuess::sad, "sad"}, {ScfGuess::core, "core"}}};
constexpr std::array<std::pair<Reference, const char*>, 3> kReferences{
    {{Reference::automatic, "auto"}, {Reference::rhf, "rhf"}, {Reference::uhf, "uhf"}}};

}  // namespace

NamedChoices<ScfType> scf_type_names() { return kScfTypes; }
NamedChoices<ScfGuess> scf_guess_names() { return kScfGuesses; }
NamedChoices<Reference> reference_names() { return kReferences; }

template <>
std::string name_of(ScfType value) { return name_of(scf_type_names(), value); }
template <>
std::string name_of(ScfGuess value) { return name_of(scf_guess_names(), value); }
template <>
std::string name_of(Reference value) { return name_of(reference_names(), value); }
template <>
std::string name_of(kernels::Backend value) { return name_of(backend_names(), value); }
template <>
std::string name_of(kernels::Precision value) { return name_of(precision_names(), value); }

}  // namespace dfmp2
