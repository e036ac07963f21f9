// A Psi4 reference case (tests/reference/<file>.json, made by the reference scripts there) as a
// run's input and options: shared by the energy tests and the GPU tests.
#pragma once

#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include <Eigen/Core>
#include <nlohmann/json.hpp>

#include "src/io/xyz.hpp"
#include "src/run/options.hpp"
#include "src/run/run_input.hpp"

namespace dfmp2::testing {

inline nlohmann::json psi4_cases(const std::string& source_dir, const std::string& file) {
  std::ifstream in(source_dir + "/tests/reference/" + file);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

inline nlohmann::json psi4_case(const std::string& source_dir, const std::string& file, const std::string& name) {
  for (const auto& ref : psi4_cases(source_dir, file))
    if (ref["name"] == name) return ref;
  FAIL("no reference " << name << " in " << file);
  return {};
}

// The case's molecule into input, and its settings as options (the gradient cases, all DF-SCF, do
// not name their scf_type).
inline RunOptions psi4_case_options(const std::string& source_dir, const nlohmann::json& ref, RunInput& input) {
  input.path = source_dir + "/" + ref["xyz"].get<std::string>();
  input.molecule = read_xyz(input.path);
  RunOptions options;
  options.charge = ref["charge"].get<int>();
  options.multiplicity = ref.value("multiplicity", 1);
  options.basis = ref["basis"].get<std::string>();
  options.df_basis = ref["df_basis"].get<std::string>();
  const bool df = ref.value("scf_type", std::string("df")) == "df";
  if (df) options.jk_basis = ref["jk_basis"].get<std::string>();
  options.scf_type = df ? ScfType::df : ScfType::exact;
  options.frozen_core = ref["freeze_core"].get<bool>();
  return options;
}

// A reference record's gradient (Eh/bohr, natom × 3; Psi4's cases and PySCF's alike).
inline Eigen::MatrixXd reference_gradient(const nlohmann::json& ref) {
  const nlohmann::json& rows = ref["gradient"];
  Eigen::MatrixXd g(static_cast<Eigen::Index>(rows.size()), 3);
  for (Eigen::Index a = 0; a < g.rows(); ++a)
    for (Eigen::Index k = 0; k < 3; ++k)
      g(a, k) = rows[static_cast<std::size_t>(a)][static_cast<std::size_t>(k)].get<double>();
  return g;
}

}  // namespace dfmp2::testing
