// dfmp2 command line: parse options, read the input, run, report. Every user-fixable problem
// arrives here as one InputError and leaves as one line on stderr with a non-zero exit.
#include <filesystem>
#include <functional>
#include <iostream>

#include <CLI/CLI.hpp>

#include "src/cli/run_options_cli.hpp"
#include "src/run/driver.hpp"
#include "src/common/errors.hpp"
#include "src/io/hdf5_io.hpp"
#include "src/io/molden.hpp"
#include "src/io/output_file.hpp"
#include "src/io/trexio_io.hpp"
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

// XYZ by its name; Molden and TREXIO (HDF5 file or text-back-end directory) by their content;
// any other file is our HDF5 layout.
RunInput read_input(const std::string& path) {
  if (!std::filesystem::exists(path)) throw InputError("input file '" + path + "' does not exist");
  if (is_molden(path)) return read_molden(path);
  if (is_trexio(path)) return read_trexio(path);
  if (!is_xyz(path)) return read_hdf5_input(path);
  RunInput input;
  input.path = path;
  input.molecule = read_xyz(path);
  return input;
}

// Outputs must not clobber the input, and must not share one path.
void check_output_paths(const std::string& input, const std::vector<std::pair<std::string, std::string>>& outputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (same_file(input, outputs[i].second)) throw InputError("an output file would overwrite the input '" + input + "'");
    for (std::size_t j = 0; j < i; ++j)
      if (same_file(outputs[i].second, outputs[j].second))
        throw InputError(outputs[j].first + " and " + outputs[i].first + " name the same file");
  }
}

// --molden and --trexio write closed-shell orbitals: the run must have some, and RHF ones.
// Checked before the run, so that it is not wasted.
void check_orbital_outputs(const RunInput& input, const RunOptions& options, bool requested) {
  if (!requested) return;
  if (input.df) throw InputError("--molden and --trexio write orbitals, which an energy-only /df input does not have");
  if (input.molecule && unrestricted(options.reference, options.multiplicity.value_or(input.molecule->multiplicity)))
    throw InputError("--molden and --trexio write RHF orbitals only, and this run is UHF");
}

}  // namespace

int main(int argc, char** argv) {
  MpiSession mpi(argc, argv);
  Communicator& comm = Communicator::world();
  CLI::App app{"dfmp2: density-fitted MP2 energies (RHF or UHF → DF-MP2)", "dfmp2"};
  app.set_version_flag("--version", "dfmp2 0.1.0");

  std::string input_path, json_path, output_path, molden_path, trexio_path;
  bool quiet = false;
  app.add_option("input", input_path,
                 "molecule.h5 (HDF5 input), molecule.xyz (with --basis), orbitals.molden or a TREXIO file");
  const RunOptionsCli run_options(app, true);
  app.add_option("--json", json_path, "write results as JSON to this file");
  app.add_option("--output", output_path, "write results and orbitals to this HDF5 file");
  app.add_option("--molden", molden_path, "write the molecule, basis and orbitals as a Molden file");
  app.add_option("--trexio", trexio_path, "write the molecule, basis and orbitals as a TREXIO (HDF5) file");
  app.add_flag("--quiet,-q", quiet, "no progress on stderr");

  std::string convert_xyz, convert_out, convert_basis, convert_df_basis, convert_jk_basis;
  int convert_charge = 0, convert_multiplicity = 1;
  auto* convert = app.add_subcommand("convert", "write an HDF5 input from an XYZ file");
  convert->add_option("xyz", convert_xyz, "molecule.xyz (Ångström)")->required();
  convert->add_option("--basis", convert_basis, "orbital basis name stored in the file")->required();
  convert->add_option("--df-basis", convert_df_basis, "auxiliary basis for DF-MP2");
  convert->add_option("--jk-basis", convert_jk_basis, "auxiliary basis for DF-SCF");
  convert->add_option("--charge", convert_charge, "molecular charge");
  convert->add_option("--multiplicity", convert_multiplicity, "spin multiplicity 2S+1 (default 1)");
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
      mol.multiplicity = convert_multiplicity;
      validate(mol);
      check_output_paths(convert_xyz, {{"-o", convert_out}});
      write_output_file(convert_out, [&](const std::string& file) {
        write_hdf5_input(file, mol, convert_basis, convert_df_basis, convert_jk_basis);
      });
      return 0;
    }
    if (input_path.empty()) throw InputError("no input file given (see dfmp2 --help)");
    check_output_paths(input_path, {{"--json", json_path}, {"--output", output_path}, {"--molden", molden_path},
                                    {"--trexio", trexio_path}});
    const RunOptions options = run_options.options();

    RunInput input = read_input(input_path);
    if (is_xyz(input_path) && !options.basis)
      throw InputError("an XYZ input needs --basis NAME");
    check_orbital_outputs(input, options, !(molden_path.empty() && trexio_path.empty()));
    Progress progress(quiet || !comm.is_root());
    const RunResult result = run(input, options, progress);

    if (comm.is_root()) {
      print_report(std::cout, result);
      OutputFiles outputs;  // all or none
      const std::pair<const std::string&, FileWriter> writers[] = {
          {json_path, [&](const std::string& file) { write_json(file, result); }},
          {output_path, [&](const std::string& file) { write_hdf5_results(file, result); }},
          {molden_path, [&](const std::string& file) { write_molden(file, result); }},
          {trexio_path, [&](const std::string& file) { write_trexio(file, result); }}};
      for (const auto& [path, write] : writers)
        if (!path.empty()) outputs.add(path, write);
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
