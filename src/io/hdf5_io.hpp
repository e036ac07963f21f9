// HDF5 files: the input layout of docs/input-format.md and the results file.
// Readers never write to the input. Writers create the file at the path they are given and throw
// std::runtime_error naming what failed: outputs go through OutputFiles (src/io/output_file.hpp),
// which gives them a temporary name and renames it when complete.
#pragma once

#include <string>

#include "src/mp2/bia_tensor.hpp"
#include "src/run/run_input.hpp"
#include "src/run/run_result.hpp"

namespace dfmp2 {

// Throws InputError "'<path>' is damaged: …" when libhdf5 crashes or loops going over the file's
// structures (checked in a forked child): call before opening any HDF5 input with libhdf5.
void require_hdf5_survives(const std::string& path);

// Throws InputError with one line naming the problem (not HDF5, missing or misshapen dataset…).
RunInput read_hdf5_input(const std::string& path);

// The input layout, from a molecule and basis names (empty names are not written).
void write_hdf5_input(const std::string& path, const Molecule& mol, const std::string& basis,
                      const std::string& df_basis, const std::string& jk_basis);
// An energy-only input (/df group).
void write_hdf5_df_input(const std::string& path, const BiaTensor& df);

// Energies, sizes, timings, and the orbitals when there are any.
void write_hdf5_results(const std::string& path, const RunResult& result);

}  // namespace dfmp2
