// The memory budget: arrays and reservations within the limit, pages reused across stages, one
// clear error past the limit; and --memory bounding a whole run's peak RSS where it binds.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/common/errors.hpp"
#include "src/common/memory.hpp"
#include "src/gradient/ri_passes.hpp"
#include "tests/src/run_json.hpp"

using namespace dfmp2;

TEST_CASE("arrays and reservations draw from the budget and give back what they drew") {
  MemoryBudget budget(current_rss_bytes() + 512 * MiB);
  const std::size_t start = budget.available();
  {
    LargeArray<double> a = budget.allocate<double>(8 * MiB / sizeof(double), "a");
    CHECK(budget.available() == start - 8 * MiB);
    const auto reserved = budget.reserve(10 * MiB, "r");
    CHECK(budget.available() <= start - 18 * MiB);
    a[0] = 1.0;  // usable memory
    a[a.size() - 1] = 2.0;
    CHECK(budget.peak_drawn() >= 18 * MiB);
  }
  CHECK(budget.available() == start);
}

TEST_CASE("freed arrays' pages are reused by later ones, split and merged") {
  MemoryBudget budget(current_rss_bytes() + 512 * MiB);
  const char* first = nullptr;
  {
    LargeArray<char> big = budget.allocate<char>(16 * MiB, "big");
    first = big.data();
  }
  // Two halves of the freed array: both inside its pages, not new mappings.
  LargeArray<char> a = budget.allocate<char>(8 * MiB, "a"), b = budget.allocate<char>(8 * MiB, "b");
  for (const char* p : {a.data(), b.data()}) CHECK((p >= first && p < first + 16 * MiB));
  CHECK(a.data() != b.data());
  a = LargeArray<char>();
  b = LargeArray<char>();
  // Merged again: the whole range serves one array.
  const LargeArray<char> whole = budget.allocate<char>(16 * MiB, "whole");
  CHECK(whole.data() == first);
}

TEST_CASE("an array that fits in no free piece has the free pieces returned to the system first") {
  MemoryBudget budget(current_rss_bytes() + 512 * MiB);
  {
    LargeArray<char> big = budget.allocate<char>(128 * MiB, "big");
    std::memset(big.data(), 1, big.size());
  }
  LargeArray<char> kept = budget.allocate<char>(8 * MiB, "kept");  // inside big's resident pages
  const std::size_t before = current_rss_bytes();
  LargeArray<char> larger = budget.allocate<char>(160 * MiB, "larger");
  std::memset(larger.data(), 2, larger.size());
  std::memset(kept.data(), 3, kept.size());  // still mapped
  // big's other 120 MiB went back: the process grew by 160 - 120 MiB, not by 160 MiB.
  CHECK(current_rss_bytes() < before + 128 * MiB);
  CHECK(kept[kept.size() - 1] == 3);
}

TEST_CASE("past the limit: one InputError saying what needed how much") {
  MemoryBudget budget(current_rss_bytes() + 64 * MiB);
  CHECK_THROWS_AS(budget.allocate<double>(128 * MiB / sizeof(double), "the big tensor"), InputError);
  CHECK_THROWS_WITH(budget.reserve(128 * MiB, "the big tensor"),
                    Catch::Contains("the big tensor needs 128.00 MiB more") && Catch::Contains("raise --memory"));
  const LargeArray<double> fits = budget.allocate<double>(8 * MiB / sizeof(double), "fits");
  CHECK(fits.size() == MiB);
}

TEST_CASE("the budget (--memory) bounds a whole run's peak RSS where it binds (benzene, exact Fock)") {
  // Given orbitals and an exact Fock build: the DF transform is the run's largest stage, and its
  // batches of (Q|μν) shrink to fit the budget.
  TempDir dir;
  const std::string benzene = std::string(DFMP2_SOURCE_DIR) + "/inputs/benzene.xyz";
  REQUIRE(run_dfmp2(benzene + " --basis cc-pvdz --quiet --output " + dir.path("orbitals.h5")).exit_code == 0);
  const auto run = [&](const std::string& memory) {
    const std::string json = dir.path("run.json");
    const CommandResult r = run_dfmp2(dir.path("orbitals.h5") + " --scf exact --quiet --json " + json + memory);
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(read_text(json));
  };
  const auto free = run("");
  CHECK(free["memory"]["df_transform_batches"] == 1);
  // What the unbounded run drew, less half its one batch of packed (Q|μν).
  const double nbf = free["nbf"].get<double>(), batch_bytes = 8.0 * free["naux"].get<double>() * nbf * (nbf + 1) / 2;
  const double limit = free["memory"]["baseline_bytes"].get<double>() +
                       free["memory"]["peak_drawn_bytes"].get<double>() - 0.5 * batch_bytes;
  const auto bound = run(" --memory " + std::to_string(static_cast<long>(limit)));
  CHECK(bound["memory"]["df_transform_batches"].get<int>() > 1);  // the budget binds
  CHECK(bound["resources"]["peak_rss_bytes"].get<double>() <= limit);
  CHECK(std::abs(bound["e_corr"].get<double>() - free["e_corr"].get<double>()) < 1e-10);
}

namespace {

double planned_ram(const nlohmann::json& run, const std::string& stage) {
  return planned_stage(run, stage)["ram_bytes"].get<double>();
}

}  // namespace

TEST_CASE("the plan counts UHF's two spins, and each stage draws what its plan says") {
  // The same singlet as RHF and as UHF: the UHF SCF holds two spins' matrices and exchange
  // workspaces, its transform both spins' (Q|ia) and B, and its energy step both B.
  TempDir dir;
  const auto rhf = run_json(dir, kBenzeneCcPvdz), uhf = run_json(dir, kBenzeneCcPvdz + " --reference uhf");
  check_drawn_as_planned(rhf);
  check_drawn_as_planned(uhf);
  CHECK(planned_ram(uhf, "scf") > planned_ram(rhf, "scf"));
  CHECK(planned_ram(uhf, "df_transform") > 1.2 * planned_ram(rhf, "df_transform"));
  CHECK(planned_ram(uhf, "energy") > 1.5 * planned_ram(rhf, "energy"));
}

TEST_CASE("a run that cannot fit even its smallest batches is refused up front, naming the stage and the memory") {
  // 1 MB is below what the sizes alone say: refused before the shell pairs and the plan.
  const CommandResult sizes = run_dfmp2(kBenzeneCcPvdz + " --memory 1MB --quiet");
  CHECK(sizes.exit_code == 1);
  CHECK(without_notes(sizes.err).find("dfmp2: error: the scf stage needs at least ") == 0);
  const std::string at_least = "raise --memory to at least ";
  const std::size_t said = sizes.err.find(at_least);
  REQUIRE(said != std::string::npos);
  // That much and 5 MiB more passes the sizes, and the plan's integrals stage (the DF-SCF tensor's
  // smallest batches) does not fit: the window is 3.2 to 14.4 MiB beside the process's baseline
  // (measured), and under ASan the baseline moves by up to 2 MiB from run to run, so a 1 MiB
  // margin was sometimes refused at the sizes again.
  std::istringstream number(sizes.err.substr(said + at_least.size()));
  double value = 0.0;
  std::string unit;
  number >> value >> unit;
  const double mib = value * (unit == "GiB" ? 1024.0 : 1.0) + 5.0;
  const CommandResult plan = run_dfmp2(kBenzeneCcPvdz + " --memory " + std::to_string(mib) + "MiB --quiet");
  CHECK(plan.exit_code == 1);
  CHECK(without_notes(plan.err).find("dfmp2: error: the integrals stage needs ") == 0);
  CHECK(plan.err.find(at_least) != std::string::npos);
}

namespace {

// XYZ text of n × n × n copies of a two- or three-atom molecule (Ångström) on a grid `spacing` apart.
std::string molecules_on_grid(int n, double spacing, const std::vector<std::pair<std::string, std::array<double, 3>>>& local) {
  std::ostringstream xyz;
  xyz << n * n * n * static_cast<int>(local.size()) << "\n" << n << "^3 molecules " << spacing << " A apart\n";
  for (int i = 0; i < n * n * n; ++i)
    for (const auto& [symbol, r] : local)
      xyz << symbol << " " << r[0] + spacing * (i % n) << " " << r[1] + spacing * (i / n % n) << " "
          << r[2] + spacing * (i / n / n) << "\n";
  return xyz.str();
}

double seconds_of(const std::function<void()>& run) {
  const auto start = std::chrono::steady_clock::now();
  run();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("a molecule far too large (2197 waters 3 Å apart) is refused from its sizes alone, in seconds, saying "
          "what it needs") {
  TempDir dir;
  const std::string box = dir.write(
      "box.xyz", molecules_on_grid(13, 3.0, {{"O", {0.0, 0.0, 0.0}}, {"H", {0.7570, 0.0, 0.5859}},
                                             {"H", {-0.7570, 0.0, 0.5859}}}));
  std::filesystem::create_directory(dir.path("scratch"));
  CommandResult r;
  // Before the up-front check it computed (μν|μν) for 347 million shell pairs: minutes.
  const double seconds = seconds_of([&] {
    r = run_dfmp2(box + " --basis cc-pvdz --memory 8GB --quiet --scratch " + dir.path("scratch"));
  });
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK(seconds < 10.0);
  const std::string err = without_notes(r.err);
  CHECK(std::count(err.begin(), err.end(), '\n') == 1);
  // B_ia^P's 0.68 PB go nowhere: 10985 occupied, 41743 virtual orbitals.
  CHECK(err.find("dfmp2: error: 6591 atoms, 52728 basis functions, 184548 auxiliary: B_ia^P alone (10985 × 41743 × "
                 "184548 × 8 bytes) needs 615.72 TiB of memory and scratch together, and the scf stage needs at least ") == 0);
  CHECK(err.find(" of memory for the shell-pair tables and the SCF's matrices, but --memory is 8.00 GiB") !=
        std::string::npos);
  CHECK(std::filesystem::is_empty(dir.path("scratch")));
}

TEST_CASE("an element missing from an auxiliary set is refused within seconds on a 54,000-atom HeH gas") {
  TempDir dir;
  const std::string gas =
      dir.write("heh.xyz", molecules_on_grid(30, 10.8, {{"He", {0.0, 0.0, 0.0}}, {"H", {0.0, 0.0, 0.77}}}));
  CommandResult r;
  const double seconds = seconds_of([&] { r = run_dfmp2(gas + " --basis cc-pvdz --quiet"); });
  CHECK(r.exit_code == 1);
  CHECK(seconds < 10.0);
  CHECK(without_notes(r.err) == "dfmp2: error: basis 'cc-pvdz-jkfit' has no functions for element He\n");
}

TEST_CASE("the gradient stage (--gradient) draws what its plan says, and a run it does not fit is refused up front") {
  TempDir dir;
  // Water's stages, the gradient's among them, each draw what their plans say; so do the UHF
  // hydroxyl radical's (both spins' three-index arrays), frozen core.
  const auto water = run_json(dir, std::string(DFMP2_SOURCE_DIR) + "/inputs/water.xyz --basis cc-pvdz --gradient");
  check_drawn_as_planned(water);
  CHECK(planned_ram(water, "gradient") > planned_ram(water, "scf"));  // the SCF's tensor and the densities
  const auto hydroxyl = run_json(dir, std::string(DFMP2_SOURCE_DIR) +
                                          "/inputs/open-shell/hydroxyl.xyz --basis cc-pvdz --multiplicity 2 "
                                          "--frozen-core --gradient");
  check_drawn_as_planned(hydroxyl);
  CHECK(planned_ram(hydroxyl, "gradient") > planned_ram(hydroxyl, "scf"));

  // Benzene's energy run with 8 MiB to spare in its largest stage: the gradient's RI fit and
  // Z-vector products do not fit beside the DF-SCF tensor, even with B_ia^P and Γ_ia^P on disk (it
  // needs about 52 MiB, the energy run's largest stage 41 MiB).
  const auto energy = run_json(dir, kBenzeneCcPvdz);
  double largest = 0.0;
  for (const auto& stage : energy["memory"]["plan"]) largest = std::max(largest, stage["ram_bytes"].get<double>());
  const std::string memory =
      " --memory " + std::to_string(static_cast<long>(energy["memory"]["baseline_bytes"].get<double>() + largest) + 8 * long(MiB));
  run_json(dir, kBenzeneCcPvdz + memory);  // the energy run fits
  const CommandResult r = run_dfmp2(kBenzeneCcPvdz + memory + " --gradient --quiet");
  CHECK(r.exit_code == 1);
  CHECK(without_notes(r.err).find("dfmp2: error: the gradient stage needs ") == 0);
  CHECK(r.err.find("raise --memory to at least") != std::string::npos);
}

TEST_CASE("the RHF gradient keeps I_ia,kb for its symmetry, then the RI integrals between its passes, when its "
          "budget holds them, and gives the same gradient without") {
  // Benzene's amplitudes take two blocks of occupied orbitals, so the second reads its rows i of
  // the first from the kept block pairs. A budget half the kept RI integrals (about 22 MiB; the RI
  // passes compute them anew) short of that plan drops them; half the kept I's excess over one
  // block's I (2.4 MiB; every block then computes all its rows) short of that one, the kept I
  // too. The SCF in fp64 to 1e-10, so that the budget's other choices (its batches) do not move
  // the orbitals the gradients are of.
  TempDir dir;
  const std::string args = kBenzeneCcPvdz + " --gradient --fp32-until 0 --d-convergence 1e-10";
  const std::string kept_I = "I_ia,kb of the block pairs still to be read", block_I = "a block of occupied orbitals' I";
  const auto bytes_of = [&](const nlohmann::json& run, const std::string& what) {
    for (const auto& block : planned_stage(run, "gradient")["blocks"])
      if (block["what"] == what) return block["bytes"].get<double>();
    return 0.0;
  };
  const auto holds = [&](const nlohmann::json& run, const std::string& what) { return bytes_of(run, what) > 0.0; };
  // A run whose gradient stage has `ram` bytes beside the process's baseline, taken from the last
  // run: under the sanitizers the baseline moves by up to 2 MiB from run to run (measured; ASan's
  // shadow pages), so a run whose plan is not `wanted` is repeated with its own baseline.
  const auto run_with = [&](double baseline, double ram, const auto& wanted) {
    nlohmann::json run;
    for (int attempt = 0; attempt < 5; ++attempt) {
      run = run_json(dir, args + " --memory " + std::to_string(static_cast<long>(baseline + ram)));
      if (wanted(run)) break;
      baseline = run["memory"]["baseline_bytes"].get<double>();
    }
    return run;
  };
  const auto both = run_json(dir, args);
  REQUIRE(holds(both, kept_I));
  REQUIRE(holds(both, kKeptRiIntegrals));
  check_drawn_as_planned(both);
  const auto kept_I_only = run_with(both["memory"]["baseline_bytes"].get<double>(),
                                    planned_ram(both, "gradient") - bytes_of(both, kKeptRiIntegrals) / 2,
                                    [&](const nlohmann::json& r) { return !holds(r, kKeptRiIntegrals); });
  REQUIRE(holds(kept_I_only, kept_I));
  REQUIRE_FALSE(holds(kept_I_only, kKeptRiIntegrals));
  check_drawn_as_planned(kept_I_only);
  // One block's I is half its t and T.
  const double I_excess = bytes_of(kept_I_only, kept_I) - bytes_of(kept_I_only, "a block of occupied orbitals' t and T") / 2;
  REQUIRE(I_excess > 1.0 * MiB);
  const auto neither = run_with(kept_I_only["memory"]["baseline_bytes"].get<double>(),
                                planned_ram(kept_I_only, "gradient") - I_excess / 2,
                                [&](const nlohmann::json& r) { return holds(r, block_I); });
  REQUIRE(holds(neither, block_I));
  REQUIRE_FALSE(holds(neither, kept_I));
  REQUIRE_FALSE(holds(neither, kKeptRiIntegrals));
  check_drawn_as_planned(neither);
  for (const nlohmann::json* run : {&kept_I_only, &neither}) {
    CHECK(std::abs(both["e_total"].get<double>() - (*run)["e_total"].get<double>()) < 1e-10);
    CHECK(largest_gradient_difference(both, *run) < 1e-10);
  }
}
