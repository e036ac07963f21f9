// Writes the HDF5 seed corpus with the project's own writers, from a real run (water, STO-3G):
//   cmake --build build --target make_hdf5_seeds && build/tests/fuzz/make_hdf5_seeds tests/fuzz/corpus/hdf5
// an input (/molecule + basis names), a results file (orbitals, SCF iterations, timings), an
// energy-only input (/df, float64 and float32), and two slightly broken copies of the input.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

#include "src/io/hdf5_io.hpp"
#include "src/io/xyz.hpp"
#include "src/run/driver.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_hdf5_seeds DIRECTORY\n";
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  const std::string source = DFMP2_SOURCE_DIR;
  dfmp2::RunInput input;
  input.molecule = dfmp2::read_xyz(source + "/inputs/water.xyz");
  dfmp2::RunOptions options;
  options.basis = "sto-3g";
  dfmp2::Progress quiet(true);
  dfmp2::PreparedRun run = dfmp2::prepare(input, options, quiet);
  dfmp2::add_mp2_energy(run.df, options, quiet, run.result);

  dfmp2::write_hdf5_input((dir / "molecule.h5").string(), *input.molecule, "sto-3g", "def2-svp-ri", "");
  dfmp2::write_hdf5_results((dir / "results.h5").string(), run.result);
  dfmp2::write_hdf5_df_input((dir / "df64.h5").string(), run.df);
  run.df.B32.assign(run.df.B64.begin(), run.df.B64.end());
  run.df.B64.clear();
  dfmp2::write_hdf5_df_input((dir / "df32.h5").string(), run.df);
  std::filesystem::copy_file(source + "/inputs/water.h5", dir / "water.h5",
                             std::filesystem::copy_options::overwrite_existing);

  std::ifstream in(dir / "molecule.h5", std::ios::binary);
  std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::ofstream(dir / "truncated.h5", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  bytes[bytes.size() / 3] ^= 0x5a;
  std::ofstream(dir / "flipped.h5", std::ios::binary) << bytes;
  return 0;
}
