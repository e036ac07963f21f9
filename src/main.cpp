// dfmp2 command line: parse options, read the input, run, report. Every user-fixable problem
// arrives here as one InputError and leaves as one line on stderr with a non-zero exit.
#include <filesystem>
#include <functional>
#include <iostream>

#include <CLI/CLI.hpp>

#include "kernels/gpu/gpu_plan.hpp"
#include "src/cli/qcschema_command.hpp"
#include "src/cli/run_options_cli.hpp"
#include "src/run/counterpoise.hpp"
#include "src/run/driver.hpp"
#include "src/common/errors.hpp"
#include "src/common/text.hpp"
#include "src/io/counterpoise_report.hpp"
#include "src/io/hdf5_io.hpp"
#include "src/io/molden.hpp"
#include "src/io/orbital_file.hpp"
#include "src/io/output_file.hpp"
#include "src/io/trexio_io.hpp"
#include "src/common/memory.hpp"
#include "src/common/parallel.hpp"
#include "src/io/report.hpp"
#include "src/io/xyz.hpp"
#include "src/molecule/basis.hpp"

namespace {

using namespace dfmp2;

bool is_xyz(const std::string& path) {
  return lowercase(std::filesystem::path(path).extension().string()) == ".xyz";
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

// `dfmp2 convert`: an XYZ file and basis names into an HDF5 input.
struct ConvertArgs {
  std::string xyz, out, basis, df_basis, jk_basis;
  int charge = 0, multiplicity = 1;
};

CLI::App* add_convert_command(CLI::App& app, ConvertArgs& args) {
  auto* convert = app.add_subcommand("convert", "write an HDF5 input from an XYZ file");
  convert->add_option("xyz", args.xyz, "molecule.xyz (Ångström)")->required();
  convert->add_option("--basis", args.basis, "orbital basis name stored in the file")->required();
  convert->add_option("--df-basis", args.df_basis, "auxiliary basis for DF-MP2");
  convert->add_option("--jk-basis", args.jk_basis, "auxiliary basis for DF-SCF");
  convert->add_option("--charge", args.charge, "molecular charge");
  convert->add_option("--multiplicity", args.multiplicity, "spin multiplicity 2S+1 (default 1)");
  convert->add_option("-o,--output", args.out, "the HDF5 file to write")->required();
  return convert;
}

void convert(const ConvertArgs& args) {
  Molecule mol = read_xyz(args.xyz);
  if (has_ghost_atoms(mol))
    throw InputError("convert writes no ghost atoms: run the XYZ file itself (or mark them in /molecule/ghost)");
  mol.charge = args.charge;
  mol.multiplicity = args.multiplicity;
  validate(mol);
  // The file must name bases a run can load: each is read (and checked) now.
  load_basis(args.basis, BasisRole::orbital);
  for (const std::string& auxiliary : {args.df_basis, args.jk_basis})
    if (!auxiliary.empty()) load_basis(auxiliary, BasisRole::auxiliary);
  check_output_paths(args.xyz, {{"-o", args.out}});
  write_output_file(args.out, [&](const std::string& file) {
    write_hdf5_input(file, mol, args.basis, args.df_basis, args.jk_basis);
  });
}

struct OutputPaths {
  std::string json, output, molden, trexio;
  bool orbital_files() const { return !(output.empty() && molden.empty() && trexio.empty()); }
};

// All the run's output files, or none; `json` is the --json file's content.
void write_outputs(const OutputPaths& paths, const RunResult& result, const nlohmann::json& json) {
  OutputFiles outputs;
  const std::pair<const std::string&, FileWriter> writers[] = {
      {paths.json, [&](const std::string& file) { write_text(file, json.dump(2) + "\n"); }},
      {paths.output, [&](const std::string& file) { write_hdf5_results(file, result); }},
      {paths.molden, [&](const std::string& file) { write_molden(file, result); }},
      {paths.trexio, [&](const std::string& file) { write_trexio(file, result); }}};
  for (const auto& [path, write] : writers)
    if (!path.empty()) outputs.add(path, write);
  outputs.commit();
}

// dfmp2's HDF5 results, Molden and TREXIO files hold no ghost atoms: written, they would read back as real.
void check_ghost_outputs(const RunInput& input, const OutputPaths& outputs) {
  if (input.molecule && has_ghost_atoms(*input.molecule) && outputs.orbital_files())
    throw InputError("--output, --molden and --trexio cannot hold ghost atoms (they would read back as real "
                     "atoms): --json writes this run's results");
}

// `dfmp2 input ...`: the run (with --counterpoise, the five of the correction), its report and
// output files (rank 0's).
void compute(const std::string& input_path, const RunOptionsCli& run_options, const OutputPaths& outputs,
             int counterpoise, bool quiet) {
  if (input_path.empty()) throw InputError("no input file given (see dfmp2 --help)");
  check_output_paths(input_path, {{"--json", outputs.json}, {"--output", outputs.output},
                                  {"--molden", outputs.molden}, {"--trexio", outputs.trexio}});
  const RunOptions options = run_options.options();
  RunInput input = read_input(input_path);
  if (is_xyz(input_path) && !options.basis) throw InputError("an XYZ input needs --basis NAME");
  const bool root = Communicator::world().is_root();
  Progress progress(quiet || !root);
  if (input.unoccupied)
    progress.message(occupy_by_energy(input, options.charge.value_or(0), options.multiplicity.value_or(1)));
  check_orbital_outputs(input, options, !(outputs.molden.empty() && outputs.trexio.empty()));
  check_ghost_outputs(input, outputs);
  if (counterpoise > 0) {
    if (options.gradient) throw InputError("--gradient is not available with --counterpoise");
    const CounterpoiseResult cp = run_counterpoise(input, options, counterpoise, progress);
    if (!root) return;
    print_report(std::cout, cp[CounterpoiseRun::dimer]);
    print_counterpoise(std::cout, cp);
    write_outputs(outputs, cp[CounterpoiseRun::dimer], counterpoise_json(cp));
    return;
  }
  const RunResult result = run(input, options, progress);
  if (root) {
    print_report(std::cout, result);
    write_outputs(outputs, result, to_json(result));
  }
}

// Only rank 0 talks to the user and writes files; an error on any rank stops them all.
void fail(Communicator& comm, const std::string& message) {
  if (comm.size() > 1)
    std::cerr << "dfmp2: error (rank " << comm.rank() << "): " << message << std::endl;
  else
    std::cerr << "dfmp2: error: " << message << "\n";
  if (comm.size() > 1) comm.abort(1);
}

// The command's exit status, or 1 after one error line for what it threw.
int guarded(Communicator& comm, const std::function<int()>& command) {
  try {
    return command();
  } catch (const InputError& e) {
    fail(comm, e.what());
  } catch (const std::invalid_argument& e) {
    fail(comm, e.what());
  } catch (const kernels::GpuError& e) {
    fail(comm, e.what());
  } catch (const std::bad_alloc&) {
    fail(comm, "out of memory (lower the problem size or --memory)");
  } catch (const std::exception& e) {
    fail(comm, std::string("internal: ") + e.what());
  }
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  MpiSession mpi(argc, argv);
  Communicator& comm = Communicator::world();
  CLI::App app{"dfmp2: density-fitted MP2 energies (RHF or UHF → DF-MP2)", "dfmp2"};
  app.set_version_flag("--version", "dfmp2 " DFMP2_VERSION);

  std::string input_path;
  OutputPaths outputs;
  int counterpoise = 0;
  bool quiet = false;
  app.add_option("input", input_path,
                 "molecule.h5 (HDF5 input), molecule.xyz (with --basis), orbitals.molden or a TREXIO file");
  const RunOptionsCli run_options(app, true);
  app.add_option("--json", outputs.json, "write results as JSON to this file");
  app.add_option("--output", outputs.output, "write results and orbitals to this HDF5 file");
  app.add_option("--molden", outputs.molden, "write the molecule, basis and orbitals as a Molden file");
  app.add_option("--trexio", outputs.trexio, "write the molecule, basis and orbitals as a TREXIO (HDF5) file");
  app.add_option("--counterpoise", counterpoise,
                 "counterpoise-corrected interaction energy: the first N atoms are monomer A, the rest B")
      ->check(CLI::PositiveNumber)
      ->type_name("N");
  app.add_flag("--quiet,-q", quiet, "no progress on stderr");
  ConvertArgs convert_args;
  const CLI::App* convert_command = add_convert_command(app, convert_args);
  QcschemaArgs qcschema_args;
  const CLI::App* qcschema_command = add_qcschema_command(app, qcschema_args);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (comm.is_root()) std::cerr << "dfmp2: error: " << e.what() << " (see dfmp2 --help)\n";
    return 1;
  }

  return guarded(comm, [&] {
    if (*convert_command) {
      if (comm.is_root()) convert(convert_args);
      return 0;
    }
    if (*qcschema_command) return run_qcschema_command(qcschema_args);
    compute(input_path, run_options, outputs, counterpoise, quiet);
    return 0;
  });
}
