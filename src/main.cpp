// dfmp2 command line: parse options, read the input, run, report. Every user-fixable problem
// arrives here as one InputError and leaves as one line on stderr with a non-zero exit.
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>
#include <omp.h>

#include "src/run/driver.hpp"
#include "src/common/errors.hpp"
#include "src/io/hdf5_io.hpp"
#include "src/io/output_file.hpp"
#include "src/common/memory.hpp"
#include "src/common/parallel.hpp"
#include "src/io/report.hpp"
#include "src/io/xyz.hpp"

namespace {

using namespace dfmp2;

bool is_xyz(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == ".xyz";
}

RunInput read_input(const std::string& path) {
  if (!std::filesystem::exists(path)) throw InputError("input file '" + path + "' does not exist");
  if (!is_xyz(path)) return read_hdf5_input(path);
  RunInput input;
  input.path = path;
  input.molecule = read_xyz(path);
  return input;
}

// Outputs must not clobber the input, and must not share one path.
void check_output_paths(const std::string& input, const std::string& json, const std::string& h5) {
  if (same_file(input, json) || same_file(input, h5))
    throw InputError("an output file would overwrite the input '" + input + "'");
  if (same_file(json, h5)) throw InputError("--json and --output name the same file");
}

}  // namespace

int main(int argc, char** argv) {
  MpiSession mpi(argc, argv);
  Communicator& comm = Communicator::world();
  CLI::App app{"dfmp2: density-fitted MP2 energies (RHF → DF-MP2)", "dfmp2"};
  app.set_version_flag("--version", "dfmp2 0.1.0");

  std::string input_path, json_path, output_path, backend = "auto", precision = "fp64";
  std::string memory, scf_type = "df", scf_guess = "sad";
  std::string basis, df_basis, jk_basis;
  int charge = 0, threads = 0;
  bool quiet = false;
  RunOptions options;

  app.add_option("input", input_path, "molecule.h5 (HDF5 input) or molecule.xyz (with --basis)");
  app.add_option("--basis", basis, "orbital basis: name (cc-pvdz, def2-svp, …) or .gbs path");
  app.add_option("--df-basis", df_basis, "auxiliary basis for DF-MP2 (default: <basis>-ri)");
  app.add_option("--jk-basis", jk_basis, "auxiliary basis for DF-SCF (default: <basis>-jkfit)");
  auto* charge_option = app.add_option("--charge", charge, "molecular charge (overrides the file)");
  app.add_option("--scf", scf_type, "SCF two-electron integrals: df or exact")
      ->check(CLI::IsMember({"df", "exact"}));
  app.add_option("--guess", scf_guess,
                 "SCF start: sad (superposition of atomic densities) or core (core Hamiltonian)")
      ->check(CLI::IsMember({"sad", "core"}));
  app.add_flag("--frozen-core", options.frozen_core, "freeze core orbitals as Psi4's freeze_core");
  app.add_option("--backend", backend, "MP2 energy backend: reference, loop, fused, auto")
      ->check(CLI::IsMember({"reference", "loop", "fused", "auto"}));
  app.add_option("--precision", precision, "B tensor precision: fp64 or fp32")
      ->check(CLI::IsMember({"fp64", "fp32"}));
  app.add_option("--memory", memory, "memory budget, e.g. 8GB (default: half the RAM)");
  app.add_option("--threads", threads, "OpenMP threads (default: OMP_NUM_THREADS or all cores)")
      ->check(CLI::Range(1, 4096));
  app.add_option("--e-convergence", options.scf.e_convergence, "SCF energy convergence / Eh")
      ->check(CLI::PositiveNumber);
  app.add_option("--d-convergence", options.scf.d_convergence, "SCF orbital-gradient convergence")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-iterations", options.scf.max_iterations, "SCF iteration limit")
      ->check(CLI::Range(1, 100000));
  app.add_option("--json", json_path, "write results as JSON to this file");
  app.add_option("--output", output_path, "write results and orbitals to this HDF5 file");
  app.add_flag("--quiet,-q", quiet, "no progress on stderr");

  std::string convert_xyz, convert_out, convert_basis, convert_df_basis, convert_jk_basis;
  int convert_charge = 0;
  auto* convert = app.add_subcommand("convert", "write an HDF5 input from an XYZ file");
  convert->add_option("xyz", convert_xyz, "molecule.xyz (Ångström)")->required();
  convert->add_option("--basis", convert_basis, "orbital basis name stored in the file")->required();
  convert->add_option("--df-basis", convert_df_basis, "auxiliary basis for DF-MP2");
  convert->add_option("--jk-basis", convert_jk_basis, "auxiliary basis for DF-SCF");
  convert->add_option("--charge", convert_charge, "molecular charge");
  convert->add_option("-o,--output", convert_out, "the HDF5 file to write")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (comm.is_root()) std::cerr << "dfmp2: error: " << e.what() << " (see dfmp2 --help)\n";
    return 2;
  }

  // Only rank 0 talks to the user and writes files; an error on any rank stops them all.
  auto fail = [&](const std::string& message) {
    if (comm.size() > 1)
      std::cerr << "dfmp2: error (rank " << comm.rank() << "): " << message << std::endl;
    else
      std::cerr << "dfmp2: error: " << message << "\n";
    if (comm.size() > 1) comm.abort(1);
  };

  try {
    if (*convert) {
      if (!comm.is_root()) return 0;
      Molecule mol = read_xyz(convert_xyz);
      mol.charge = convert_charge;
      validate(mol);
      check_output_paths(convert_xyz, convert_out, "");
      write_output_file(convert_out, [&](const std::string& file) {
        write_hdf5_input(file, mol, convert_basis, convert_df_basis, convert_jk_basis);
      });
      return 0;
    }
    if (input_path.empty()) throw InputError("no input file given (see dfmp2 --help)");
    check_output_paths(input_path, json_path, output_path);
    if (threads > 0) omp_set_num_threads(threads);
    if (!memory.empty()) options.memory_bytes = parse_memory(memory);
    options.backend = kernels::parse_backend(backend);
    options.precision = kernels::parse_precision(precision);
    options.scf_type = scf_type;
    options.scf_guess = scf_guess;
    if (!basis.empty()) options.basis = basis;
    if (!df_basis.empty()) options.df_basis = df_basis;
    if (!jk_basis.empty()) options.jk_basis = jk_basis;
    if (*charge_option) options.charge = charge;

    RunInput input = read_input(input_path);
    if (is_xyz(input_path) && basis.empty())
      throw InputError("an XYZ input needs --basis NAME");
    Progress progress(quiet || !comm.is_root());
    const RunResult result = run(input, options, progress);

    if (comm.is_root()) {
      print_report(std::cout, result);
      OutputFiles outputs;  // both or neither
      if (!json_path.empty())
        outputs.add(json_path, [&](const std::string& file) { write_json(file, result); });
      if (!output_path.empty())
        outputs.add(output_path, [&](const std::string& file) { write_hdf5_results(file, result); });
      outputs.commit();
    }
    return 0;
  } catch (const InputError& e) {
    fail(e.what());
  } catch (const std::invalid_argument& e) {
    fail(e.what());
  } catch (const std::bad_alloc&) {
    fail("out of memory (lower the problem size or --memory)");
  } catch (const std::exception& e) {
    fail(std::string("internal: ") + e.what());
  }
  return 1;
}
