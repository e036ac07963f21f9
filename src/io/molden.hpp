// Molden files (https://www.theochem.ru.nl/molden/molden_format.html): [Atoms], [GTO], the
// [5D] [5D7F] [5D10F] [7F] [9G] flags (and [6D] [10F] [15G]) and [MO], as Psi4, ORCA, PySCF
// and Molpro write them and Jmol, Avogadro, Multiwfn and IboView read them.
#pragma once

#include <string>

#include "src/run/run_input.hpp"
#include "src/run/run_result.hpp"

namespace dfmp2 {

// True when the file's first non-blank line is "[Molden Format]".
bool is_molden(const std::string& path);

// The molecule (charge from the occupations), the basis of [GTO] and the closed-shell orbitals
// of [MO] in libint2's convention, checked orthonormal. Names no basis set. When every Occup= is
// zero or absent (Psi4 1.3's files of correlated wavefunctions), the orbitals come unoccupied
// (RunInput::unoccupied, see occupy_by_energy). Throws InputError with one line naming the file
// (and line) and the problem.
RunInput read_molden(const std::string& path);

// The run's molecule, orbital basis and canonical orbitals with energies and occupations;
// Cartesian functions unit-normalised, as Molden defines them. Writes the whole file at `path`;
// throws std::runtime_error on failure.
void write_molden(const std::string& path, const RunResult& result);

}  // namespace dfmp2
