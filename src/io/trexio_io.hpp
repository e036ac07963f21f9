// TREXIO files through the TREXIO library (Debian's libtrexio 2.2): the nucleus, electron,
// basis, ao and mo groups. The text back end is a directory, the HDF5 back end one file.
#pragma once

#include <string>

#include "src/run/run_input.hpp"
#include "src/run/run_result.hpp"

namespace dfmp2 {

// A directory with TREXIO's metadata.txt (text back end) or an HDF5 file with its /metadata group.
bool is_trexio(const std::string& path);

// The molecule, the Gaussian basis with its normalisation factors and the closed-shell orbitals
// in libint2's convention, checked orthonormal. Names no basis set. Opens the file read-only
// (the text back end keeps its .lock file in the directory). Throws InputError with one line.
RunInput read_trexio(const std::string& path);

// The run's molecule, basis and canonical orbitals (energies, occupations, mo_type "RHF") with
// the HDF5 back end; Cartesian functions unit-normalised through ao_normalization (GAMESS's
// convention). Creates the file at `path`, which must not exist; throws std::runtime_error.
void write_trexio(const std::string& path, const RunResult& result);

}  // namespace dfmp2
