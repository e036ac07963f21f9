// Fuzz target: .gbs text parsed in both roles, and what is accepted placed on atoms as libint2
// shells, whose normalized coefficients must be finite (the promise of validation at load).
// InputError is the expected answer to bad input; any other exception, a crash, a sanitizer
// report or a non-finite coefficient is a finding.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "src/common/errors.hpp"
#include "src/molecule/basis.hpp"

namespace {

void place_every_element(const dfmp2::BasisSetData& basis) {
  dfmp2::Molecule atoms;
  for (const auto& [Z, shells] : basis.shells_by_Z)
    atoms.atoms.push_back({Z, {0.0, 0.0, 2.0 * static_cast<double>(atoms.atoms.size())}});
  for (const libint2::Shell& shell : dfmp2::place_on(basis, atoms))
    for (double c : shell.contr[0].coeff)
      if (!std::isfinite(c)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (dfmp2::BasisRole role : {dfmp2::BasisRole::orbital, dfmp2::BasisRole::auxiliary}) {
    try {
      place_every_element(dfmp2::parse_gbs(text, "fuzz", "input.gbs", role));
    } catch (const dfmp2::InputError&) {
    }
  }
  return 0;
}
