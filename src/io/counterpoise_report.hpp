// The counterpoise run's part of the report (after the dimer's own) and of the JSON file.
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "src/run/counterpoise.hpp"

namespace dfmp2 {

// Each run's energies, then the interaction energies, corrected and uncorrected, in Eh and
// kcal/mol.
void print_counterpoise(std::ostream& out, const CounterpoiseResult& cp);
// The dimer's JSON (to_json) with `interaction_energy` (scf_cp, mp2_cp, scs_mp2_cp, scf, mp2,
// scs_mp2; Eh) and `counterpoise` (monomer A's atom count; per run its sizes and energies).
nlohmann::json counterpoise_json(const CounterpoiseResult& cp);

}  // namespace dfmp2
