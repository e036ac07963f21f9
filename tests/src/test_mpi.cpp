// dfmp2 under mpirun: the serial energies for every backend, RHF and UHF, a rank count above the
// number of occupied orbitals, per-rank B storage that falls with the ranks, and the DF-MP2 gradient.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <utility>

#include <nlohmann/json.hpp>

#include "tests/src/run_json.hpp"

namespace {

const std::string kBenzeneXyz =
    "12\nbenzene\n"
    "C  0.000000  1.396792 0.0\nC  1.209657  0.698396 0.0\nC  1.209657 -0.698396 0.0\n"
    "C  0.000000 -1.396792 0.0\nC -1.209657 -0.698396 0.0\nC -1.209657  0.698396 0.0\n"
    "H  0.000000  2.484212 0.0\nH  2.151390  1.242106 0.0\nH  2.151390 -1.242106 0.0\n"
    "H  0.000000 -2.484212 0.0\nH -2.151390 -1.242106 0.0\nH -2.151390  1.242106 0.0\n";

std::string mpirun(int ranks) {
  return std::string(DFMP2_MPIEXEC) + " --oversubscribe --allow-run-as-root -np " +
         std::to_string(ranks);
}

// The DF-SCF's early fp32 exchange sums in a rank-dependent order; converging the density
// tightly makes the final orbitals, and so the energies, independent of that order.
constexpr const char* kTightScf = " --d-convergence 1e-10";

void check_same_energies(const nlohmann::json& serial, const nlohmann::json& parallel) {
  for (const char* key : {"e_scf", "e_corr", "e_os", "e_ss", "e_aa", "e_bb"}) {
    if (!serial.contains(key)) continue;  // e_aa, e_bb: UHF only
    INFO(key);
    const double s = serial[key].get<double>(), p = parallel[key].get<double>();
    CHECK(std::abs(p - s) <= 1e-10 * std::abs(s));
  }
}

std::string open_shell(const std::string& name) {
  return std::string(DFMP2_SOURCE_DIR) + "/inputs/open-shell/" + name + ".xyz";
}

}  // namespace

TEST_CASE("2 and 3 ranks give the serial energies for every backend, 4 ranks for the default one") {
  TempDir dir;
  const std::string benzene = dir.write("benzene.xyz", kBenzeneXyz) + " --basis sto-3g";
  for (const char* backend : {"reference", "loop", "fused"}) {
    const std::string args = benzene + kTightScf + " --threads 1 --backend " + backend;
    const auto serial = run_json(dir, args);
    for (int ranks : {2, 3, 4}) {
      if (ranks == 4 && std::string(backend) != "fused") continue;  // 4 processes on this 2-core machine are slow
      INFO(backend << " on " << ranks << " ranks");
      const auto parallel = run_json(dir, args, mpirun(ranks));
      CHECK(parallel["ranks"] == ranks);
      check_same_energies(serial, parallel);
    }
  }
}

TEST_CASE("effective core potentials on 2 ranks (each its share of the ECP shell pairs): HI and HI+ (UHF) give "
          "the serial energies, HI the serial gradient") {
  TempDir dir;
  const std::string hi = std::string(DFMP2_SOURCE_DIR) + "/tests/reference/molecules/hydrogen-iodide.xyz --basis def2-svp";
  for (const std::string options : {"", " --charge 1 --multiplicity 2", " --gradient --fp32-until 0"}) {
    // HI⁺'s αα and ββ parts moved by 4e-10 relative at kTightScf alone, 2e-11 at this.
    const std::string args = hi + options + " --d-convergence 1e-12 --e-convergence 1e-12 --threads 1";
    INFO(args);
    const auto serial = run_json(dir, args);
    const auto parallel = run_json(dir, args, mpirun(2));
    CHECK(parallel["ranks"] == 2);
    check_same_energies(serial, parallel);
    if (serial.contains("gradient")) CHECK(largest_gradient_difference(serial, parallel) <= 1e-10);
  }
}

TEST_CASE("UHF on 2 and 3 ranks gives the serial energies for every backend") {
  // Triplet methylene: 5 α and 3 β occupied, so the α and β shares differ on every rank count.
  TempDir dir;
  const std::string methylene = open_shell("methylene") + " --basis def2-svp --multiplicity 3 --threads 1";
  for (const char* backend : {"reference", "loop", "fused"}) {
    const std::string args = methylene + " --backend " + backend;
    const auto serial = run_json(dir, args);
    REQUIRE(serial["reference"] == "uhf");
    for (int ranks : {2, 3}) {
      INFO(backend << " on " << ranks << " ranks");
      check_same_energies(serial, run_json(dir, args, mpirun(ranks)));
    }
  }
}

TEST_CASE("UHF with exact SCF, in fp32, and on more ranks than active β orbitals") {
  TempDir dir;
  const std::string hydroxyl = open_shell("hydroxyl") + " --basis cc-pvdz --multiplicity 2 --threads 1";
  check_same_energies(run_json(dir, hydroxyl + " --scf exact"),
                      run_json(dir, hydroxyl + " --scf exact", mpirun(2)));
  const auto serial = run_json(dir, hydroxyl + " --precision fp32");
  const auto parallel = run_json(dir, hydroxyl + " --precision fp32", mpirun(3));
  for (const char* key : {"e_corr", "e_aa", "e_bb", "e_os"}) CHECK(std::abs(parallel[key].get<double>() -
                                                                         serial[key].get<double>()) < 1e-8);
  // Frozen core: 4 active α and 3 active β orbitals; on 4 ranks one holds no β orbital.
  check_same_energies(run_json(dir, hydroxyl + " --frozen-core"),
                      run_json(dir, hydroxyl + " --frozen-core", mpirun(4)));
}

TEST_CASE("exact SCF and fp32 also run distributed") {
  TempDir dir;
  const std::string water =
      dir.write("water.xyz", "3\nw\nO 0 0 0.1178\nH 0 0.7555 -0.4712\nH 0 -0.7555 -0.4712\n") +
      " --basis cc-pvdz --threads 1";
  check_same_energies(run_json(dir, water + " --scf exact"),
                      run_json(dir, water + " --scf exact", mpirun(2)));
  const auto serial = run_json(dir, water + " --precision fp32");
  const auto parallel = run_json(dir, water + " --precision fp32", mpirun(3));
  CHECK(std::abs(parallel["e_corr"].get<double>() - serial["e_corr"].get<double>()) < 1e-8);
}

TEST_CASE("more ranks than active occupied orbitals still give the serial energy") {
  TempDir dir;
  // Frozen-core water has 4 active occupied orbitals; ranks 4 and 5 hold none, and at the last
  // exchange step (k = 3) they meet ranks 1 and 2 from both sides.
  const std::string water =
      dir.write("water.xyz", "3\nw\nO 0 0 0.1178\nH 0 0.7555 -0.4712\nH 0 -0.7555 -0.4712\n") +
      " --basis cc-pvdz --frozen-core --threads 1" + std::string(kTightScf);
  check_same_energies(run_json(dir, water), run_json(dir, water, mpirun(6)));
}

TEST_CASE("the DF-MP2 gradient and relaxed dipole on 2 and 3 ranks equal the serial ones, RHF and UHF") {
  TempDir dir;
  // Each rank makes some of the amplitude blocks (UHF: of the occupied orbitals k of each loop) and
  // of each set's batches of auxiliary shells (the plan sizes them so): frozen-core water's 4
  // active orbitals on 2 ranks, formaldehyde's 8 on 3; the amidogen radical's 4 α and 3 β active
  // orbitals (frozen core) on 2 and on 3.
  const std::string water =
      dir.write("water.xyz", "3\nw\nO 0 0 0.1178\nH 0 0.7555 -0.4712\nH 0 -0.7555 -0.4712\n") +
      " --basis cc-pvdz --frozen-core";
  const std::string formaldehyde = std::string(DFMP2_SOURCE_DIR) + "/inputs/formaldehyde.xyz --basis cc-pvdz";
  const std::string amidogen = open_shell("amidogen") + " --basis cc-pvdz --multiplicity 2 --frozen-core";
  for (const auto& [molecule, ranks] : {std::pair{water, 2}, std::pair{formaldehyde, 3}, std::pair{amidogen, 2},
                                        std::pair{amidogen, 3}}) {
    // The SCF in double precision throughout: its fp32 iterations sum in an order that depends on
    // the ranks, which moves the orbitals it converges to, and so formaldehyde's gradient by
    // 2e-10 Eh/bohr even at --d-convergence 1e-11. In fp64 the ranks change it by < 1e-13.
    const std::string args = molecule + " --gradient --threads 1 --fp32-until 0" + kTightScf;
    const auto serial = run_json(dir, args);
    const auto parallel = run_json(dir, args, mpirun(ranks));
    INFO(molecule << " on " << ranks << " ranks");
    check_same_energies(serial, parallel);
    CHECK(largest_gradient_difference(serial, parallel) <= 1e-10);
    for (std::size_t x = 0; x < 3; ++x)
      CHECK(std::abs(parallel["mp2_dipole_moment"][x].get<double>() - serial["mp2_dipole_moment"][x].get<double>()) <=
            1e-10);
  }
}

TEST_CASE("with 2 ranks each holds at most ~60% of the serial run's B") {
  TempDir dir;
  const std::string benzene = dir.write("benzene.xyz", kBenzeneXyz) + " --basis sto-3g --threads 1";
  const auto serial = run_json(dir, benzene);
  const auto parallel = run_json(dir, benzene, mpirun(2));
  const double serial_b = serial["rank_stats"][0]["peak_b_bytes"].get<double>();
  REQUIRE(parallel["rank_stats"].size() == 2);
  for (const auto& rank : parallel["rank_stats"]) {
    CHECK(rank["peak_b_bytes"].get<double>() <= 0.6 * serial_b);
    CHECK(rank["bytes_sent"].get<double>() > 0.0);
  }
}

TEST_CASE("out of core on 2 ranks: the in-memory energies, and rank 0 draws what its plan says") {
  // Each rank's DF-SCF tensor on its own scratch files; then, from given UHF orbitals, each rank's
  // (Q|ia) and B on disk and its energy step in blocks. Compared with 2 ranks in memory; the cases
  // above check that ranks give the serial energies.
  TempDir dir;
  const std::string benzene = dir.write("benzene.xyz", kBenzeneXyz) + " --basis cc-pvdz --threads 1";
  const auto beside = [](const nlohmann::json& run, std::size_t mib) {
    return " --memory " + std::to_string(run["memory"]["baseline_bytes"].get<std::size_t>() + (mib << 20));
  };
  const auto scf_in_memory = run_json(dir, benzene + kTightScf, mpirun(2));
  const auto scf_on_disk = run_json(dir, benzene + kTightScf + beside(scf_in_memory, 38), mpirun(2));
  check_same_energies(scf_in_memory, scf_on_disk);
  REQUIRE(run_dfmp2(benzene + " --reference uhf --quiet --output " + dir.path("uhf.h5")).exit_code == 0);
  const std::string given = dir.path("uhf.h5") + " --reference uhf --scf exact --threads 1";
  const auto given_in_memory = run_json(dir, given, mpirun(2));
  const auto given_on_disk = run_json(dir, given + beside(given_in_memory, 12), mpirun(2));
  check_same_energies(given_in_memory, given_on_disk);
  CHECK(planned_stage(scf_on_disk, "scf")["disk_bytes"].get<double>() > 0.0);
  CHECK(planned_stage(given_on_disk, "energy")["disk_bytes"].get<double>() > 0.0);
  check_drawn_as_planned(scf_on_disk);
  check_drawn_as_planned(given_on_disk);
}

TEST_CASE("out of core on 2 ranks, RHF and UHF gradients: B_ia^P, Γ_ia^P and the JK set's c^P C partly on each "
          "rank's disk give the in-memory gradient") {
  // Each rank holds all rows of B and Γ and of the JK set's c^P C, its first rows in memory and the
  // rest in its own scratch files: each RI batch's rows and each amplitude block's (UHF: orbital's)
  // Γ come from the rank that made them, c^P C's rows Q from the rank with the DF-SCF tensor's row
  // Q and its blocks of columns from the rank that swept them. 36 MiB beside what a rank holds at
  // start (RHF; UHF, of the same closed shell, 48 MiB) leaves part of each in memory, and the
  // DF-SCF tensor partly on disk. Compared with 2 ranks in memory; the gradient case above checks
  // that ranks give the serial gradient.
  TempDir dir;
  const std::string benzene = dir.write("benzene.xyz", kBenzeneXyz);
  for (const auto& [reference, beside] : {std::pair{"rhf", 36 * MiB}, std::pair{"uhf", 48 * MiB}}) {
    INFO(reference);
    const std::string args = benzene + " --basis cc-pvdz --gradient --threads 1 --fp32-until 0 --reference " +
                             reference + kTightScf;
    const auto in_memory = run_json(dir, args, mpirun(2));
    const std::string memory =
        " --memory " + std::to_string(in_memory["memory"]["baseline_bytes"].get<std::size_t>() + beside);
    const auto on_disk = run_json(dir, args + memory, mpirun(2));
    const bool uhf = std::string(reference) == "uhf";
    CHECK(planned_on_disk(on_disk, "gradient", uhf ? "Γ_ia^P's other rows, β" : "Γ_ia^P's other rows"));
    CHECK(planned_on_disk(on_disk, "gradient",
                          uhf ? "c^P C_β, then A_β c^P C_β, its other rows"
                              : "c^P C_occ, then A c^P C_occ, its other rows"));
    check_drawn_as_planned(on_disk);
    check_same_energies(in_memory, on_disk);
    CHECK(largest_gradient_difference(in_memory, on_disk) <= 1e-10);
  }
}

TEST_CASE("redistribution in slabs of a few rows delivers every element, on 1 to 4 ranks") {
  for (int ranks : {1, 2, 3, 4}) {
    INFO(ranks << " ranks");
    const CommandResult r = run_command("timeout 60 " + mpirun(ranks) + " " + DFMP2_REDISTRIBUTE_EXE);
    INFO(r.err);
    CHECK(r.exit_code == 0);
  }
}

TEST_CASE("an error on the ranks stops them all with the message, no hang") {
  TempDir dir;
  const CommandResult r = run_command(
      "timeout 60 " + mpirun(2) + " " + std::string(DFMP2_EXE) + " " +
      dir.write("bad.xyz", "1\nx\nXx 0 0 0\n") + " --basis cc-pvdz --quiet");
  CHECK(r.exit_code != 0);
  CHECK(r.exit_code != 124);  // timeout's code: a hang
  CHECK_THAT(r.err, Catch::Contains("unknown element symbol 'Xx'"));
}

TEST_CASE("an error on one rank alone, late in the run, ends every rank") {
  TempDir dir;
  const std::string args = dir.write("water.xyz", "3\nw\nO 0 0 0.1178\nH 0 0.7555 -0.4712\nH 0 -0.7555 -0.4712\n") +
                           " --basis cc-pvdz --threads 1 --quiet";
  for (int ranks : {2, 3}) {
    INFO(ranks << " ranks");
    // MPMD launch: the last rank alone stops its SCF after two iterations, while the others are
    // in the SCF's collectives.
    const std::string exe = " " + std::string(DFMP2_EXE) + " " + args;
    const CommandResult r = run_command("timeout 120 " + mpirun(ranks - 1) + exe + " : -np 1" + exe +
                                        " --max-iterations 2");
    INFO("exit " << r.exit_code << ", stderr:\n" << r.err);
    CHECK(r.exit_code != 0);
    CHECK(r.exit_code != 124);  // timeout's code: a hang
    CHECK_THAT(r.err, Catch::Contains("error (rank " + std::to_string(ranks - 1) + "): SCF did not converge"));
  }
}
