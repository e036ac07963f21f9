// dfmp2_setup_time: how long a run's set-up takes before its first integral stage, in the
// phases issue 43 is about: the orbital basis' significant shell pairs (Schwarz screening), and
// the whole set-up (checks, basis sets, pairs, memory plan) as the driver runs it. Best of
// --repeat, JSON on stdout; bench/setup_time.py runs it over molecules, for old and new builds.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <limits>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "src/common/parallel.hpp"
#include "src/integrals/libint.hpp"
#include "src/io/xyz.hpp"
#include "src/molecule/basis.hpp"
#include "src/run/stages.hpp"

namespace {

// The best wall time of `repeat` calls of f, which returns what it made.
template <typename F>
double best_seconds(int repeat, F&& f) {
  double best = std::numeric_limits<double>::infinity();
  for (int k = 0; k < repeat; ++k) {
    const auto start = std::chrono::steady_clock::now();
    [[maybe_unused]] const auto product = f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  dfmp2::MpiSession mpi(argc, argv);
  CLI::App app{"dfmp2_setup_time: time the shell-pair screening and the whole set-up", "dfmp2_setup_time"};
  std::string xyz, basis = "cc-pvdz";
  int repeat = 3;
  app.add_option("input", xyz, "molecule (.xyz, Ångström)")->required();
  app.add_option("--basis", basis, "orbital basis");
  app.add_option("--repeat", repeat, "repetitions (the best is kept)")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    const dfmp2::Libint2Session libint2;
    dfmp2::RunInput input;
    input.path = xyz;
    input.molecule = dfmp2::read_xyz(xyz);
    const libint2::BasisSet obs = dfmp2::place_on(dfmp2::load_basis(basis, dfmp2::BasisRole::orbital), *input.molecule);
    std::size_t npairs = 0;
    const double screening = best_seconds(repeat, [&] {
      const dfmp2::ShellPairs pairs = dfmp2::significant_shell_pairs(obs);
      npairs = pairs.pairs.size();
      return npairs;
    });
    dfmp2::RunOptions options;
    options.basis = basis;
    dfmp2::MemoryBudget budget(dfmp2::default_memory_budget());
    const dfmp2::ScratchDirectory scratch(dfmp2::default_scratch_path());
    dfmp2::Progress progress(true);
    const dfmp2::RunContext context{options, budget, dfmp2::Communicator::world(), progress, scratch};
    const double setup = best_seconds(repeat, [&] {
      const dfmp2::Problem problem = dfmp2::define_problem(input, context);
      const dfmp2::RunPlan plan = dfmp2::plan_run(problem, context);
      dfmp2::check_plan(plan, context);
      return plan.stages().size();
    });
    const nlohmann::json out = {{"input", xyz},         {"basis", basis},
                                {"natom", input.molecule->atoms.size()},
                                {"nshell", obs.size()}, {"nbf", obs.nbf()},
                                {"significant_pairs", npairs},
                                {"screening_seconds", screening},
                                {"setup_seconds", setup}};
    std::cout << out.dump() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "dfmp2_setup_time: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
