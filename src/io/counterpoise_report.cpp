#include "src/io/counterpoise_report.hpp"

#include <cstdio>

#include "src/io/report.hpp"

namespace dfmp2 {
namespace {

// Eh in kcal/mol (CODATA 2014, as Psi4 1.3 and QCElemental).
constexpr double kKcalPerMolPerHartree = 627.509474;

void print_interaction_row(std::ostream& out, const char* level, double corrected, double uncorrected) {
  char line[160];
  std::snprintf(line, sizeof line, "  %-8s %18.10f %12.4f %18.10f %12.4f\n", level, corrected,
                corrected * kKcalPerMolPerHartree, uncorrected, uncorrected * kKcalPerMolPerHartree);
  out << line;
}

}  // namespace

void print_counterpoise(std::ostream& out, const CounterpoiseResult& cp) {
  const int natom = cp[CounterpoiseRun::dimer].natom;
  out << "\nCounterpoise correction: monomer A atoms 1-" << cp.natom_a << ", monomer B atoms " << cp.natom_a + 1 << "-"
      << natom << "\n  run                      nbf  nocc         SCF / Eh     MP2 total / Eh SCS-MP2 total / Eh\n";
  for (const CounterpoiseRunName& name : counterpoise_runs()) {
    const RunResult& r = cp[name.run];
    char line[160];
    std::snprintf(line, sizeof line, "  %-22s %5d %5d %16.10f %18.10f %18.10f\n", name.label, r.nbf, r.nocc + r.nfrozen,
                  r.e_scf, r.e_total, r.e_scf + r.e_scs_corr);
    out << line;
  }
  out << "\nInteraction energy  counterpoise-corrected            uncorrected\n"
         "                           Eh     kcal/mol                 Eh     kcal/mol\n";
  print_interaction_row(out, "SCF", cp.corrected.scf, cp.uncorrected.scf);
  print_interaction_row(out, "MP2", cp.corrected.mp2, cp.uncorrected.mp2);
  print_interaction_row(out, "SCS-MP2", cp.corrected.scs_mp2, cp.uncorrected.scs_mp2);
}

nlohmann::json counterpoise_json(const CounterpoiseResult& cp) {
  nlohmann::json j = to_json(cp[CounterpoiseRun::dimer]);
  j["interaction_energy"] = {{"scf_cp", cp.corrected.scf},     {"mp2_cp", cp.corrected.mp2},
                             {"scs_mp2_cp", cp.corrected.scs_mp2}, {"scf", cp.uncorrected.scf},
                             {"mp2", cp.uncorrected.mp2},       {"scs_mp2", cp.uncorrected.scs_mp2}};
  nlohmann::json runs = nlohmann::json::object();
  for (const CounterpoiseRunName& name : counterpoise_runs()) {
    const RunResult& r = cp[name.run];
    runs[name.key] = {{"natom", r.natom},           {"nbf", r.nbf},          {"naux", r.naux},
                          {"nocc", r.nocc},             {"nfrozen", r.nfrozen},  {"e_nuc", r.e_nuc},
                          {"e_scf", r.e_scf},           {"e_ss", r.e_ss},        {"e_os", r.e_os},
                          {"e_corr", r.e_corr},         {"e_scs_corr", r.e_scs_corr}, {"e_total", r.e_total},
                          {"scf_iterations", r.scf_iterations.size()}};
  }
  j["counterpoise"] = {{"monomer_a_atoms", cp.natom_a}, {"runs", runs}};
  return j;
}

}  // namespace dfmp2
