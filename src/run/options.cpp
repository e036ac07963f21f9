#include "src/run/options.hpp"

#include <array>

#include "src/common/errors.hpp"

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

bool unrestricted(Reference reference, int multiplicity) {
  if (reference == Reference::rhf && multiplicity != 1)
    throw InputError("--reference rhf needs a closed shell (multiplicity 1), not multiplicity " +
                     std::to_string(multiplicity) + ": use --reference uhf");
  return reference == Reference::uhf || multiplicity != 1;
}

std::string name_of(ScfType value) { return kernels::name_in(scf_type_names(), value); }
std::string name_of(ScfGuess value) { return kernels::name_in(scf_guess_names(), value); }
std::string name_of(Reference value) { return kernels::name_in(reference_names(), value); }
std::string name_of(kernels::Backend value) { return kernels::name_in(backend_names(), value); }
std::string name_of(kernels::Precision value) { return kernels::name_in(precision_names(), value); }
std::string name_of(kernels::Device value) { return kernels::name_in(device_names(), value); }

}  // namespace dfmp2
