#include "src/gradient/mp2_gradient.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include "src/common/matrix_view.hpp"
#include "src/gradient/mp2_relaxed_density.hpp"
#include "src/gradient/scf_gradient.hpp"
#include "src/integrals/df_two_electron_derivatives.hpp"
#include "src/integrals/ecp.hpp"
#include "src/integrals/one_electron.hpp"
#include "src/integrals/two_electron_derivatives.hpp"

namespace dfmp2 {
namespace {

// One spin's Γ_ia^P (RHF: the one set's) with the orbitals its rows and columns are of: row P,
// column i·nvir + a.
struct GammaSpin {
  const RowStore& gamma;
  Eigen::MatrixXd C_active, C_virtual;
};

// The MP2 densities as the contraction takes them from either reference.
struct Mp2Densities {
  Eigen::MatrixXd relaxed;                // P of both spins (AO)
  std::vector<Eigen::MatrixXd> exchange;  // P's partner of each SCF set's C_s Cᵀ_s in the exchange term:
                                          // RHF's one set P, UHF's P^α and P^β
  const Eigen::MatrixXd& energy_weighted;
  std::vector<GammaSpin> gamma;
  double gamma_factor;    // f of f Σ_σ Σ Γ_ia^P (P|ia)^x: 4 for RHF, 2 for UHF
  Eigen::MatrixXd metric;  // the coefficients of (P|Q)^x: −2V for RHF, −V for UHF
};

// The SCF gradient's terms with the MP2 densities added to the SCF's, D + P in ∂H and
// W_SCF + W in ∂S, the JK set's separable term with A = ½ D + P and A_s = ½ D_s + P^s, and the RI
// set's; the relaxed dipole moment of D + P. occupied_products: RHF's Z-vector's B^Q C_occ, if kept.
Mp2Gradient contract(const Mp2GradientInput& in, const Mp2Densities& mp2, FittedTensorStore& jk_factors,
                     MemoryBudget& budget, Communicator& comm, const double* occupied_products = nullptr) {
  const ScfDensities scf = scf_densities(in.orbitals);
  ScfDensities one_electron = scf;
  one_electron.total += mp2.relaxed;
  one_electron.energy_weighted += mp2.energy_weighted;
  SeparableDensities separable = scf_separable_densities(scf);
  separable.coulomb_partner += mp2.relaxed;
  for (std::size_t s = 0; s < mp2.exchange.size(); ++s) separable.exchange_partners[s] += mp2.exchange[s];

  const auto nbf = in.orbitals.C.rows();
  // Γ^P_μν = ½ f Σ_σ (C_act Γ^P C_virᵀ + its transpose): symmetric, so that its sum over both
  // orders of μν is f Σ_σ Σ_ia Γ_ia^P (P|ia).
  const auto gamma = [&](Eigen::Index P, double* square) {
    using RowMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    Eigen::Map<Eigen::MatrixXd> out(square, nbf, nbf);
    out.setZero();
    for (const GammaSpin& spin : mp2.gamma) {
      const auto o = spin.C_active.cols(), v = spin.C_virtual.cols();
      std::vector<double> buffer;
      const Eigen::Map<const RowMajorMatrix> gamma_P(spin.gamma.row(static_cast<std::size_t>(P), buffer), o, v);
      using kernels::Op;
      const Eigen::MatrixXd half =
          product(*in.engine, Op::none, Op::none, 1.0, spin.C_active,
                  product(*in.engine, Op::none, Op::transpose, 1.0, gamma_P, spin.C_virtual));
      out += 0.5 * mp2.gamma_factor * (half + half.transpose());
    }
  };

  const auto derivative_integrals = [&in](const std::string& set) {
    return [&in, stage = "MP2 gradient: " + set + "-set derivative integrals (batches of auxiliary shells)"](
               double done) { done == 0.0 ? in.progress.begin(stage) : in.progress.fraction(done); };
  };
  // Each Γ^P: Γ^P C_virᵀ (2 o·v·n) and C_act times that (2 n²·o), per spin: o < v, so in this order.
  double square_flops = 0.0;
  for (const GammaSpin& spin : mp2.gamma)
    square_flops += 2.0 * double(nbf) * double(spin.C_active.cols()) * double(spin.C_virtual.cols() + nbf);
  Mp2Gradient out;
  out.dipole = dipole_moment(in.obs, in.mol, one_electron.total);
  out.gradient = scf_gradient_without_two_electron_or_ecp(in.obs, in.mol, one_electron);
  if (has_ecp(in.mol))  // timed apart: the report gives the ECP's share of the gradient
    out.gradient += timed_part(out.parts, "ecp", [&] {
      return ecp_gradient_term(in.obs, in.mol, one_electron.total, in.potentials, comm);
    });
  in.progress.message("MP2 gradient: JK-set fitted coefficients and metric terms");
  const ThreeCentreScreening screening(in.obs, in.pairs);  // for both sets
  out.gradient += timed_part(out.parts, "jk_set", [&] {
    return density_fitted_two_electron_gradient(in.obs, in.jk_aux, in.pairs, screening, jk_factors, in.mol, separable,
                                                in.plan.jk_layout, budget, in.scratch, comm, derivative_integrals("JK"),
                                                &out.work, occupied_products);
  });
  out.gradient += timed_part(out.parts, "ri_set", [&] {
    return Eigen::MatrixXd(three_centre_gradient_of_squares(in.ri_aux, in.obs, in.pairs, screening, in.mol, gamma,
                                                            budget, in.plan.jk_layout.block_bytes, comm,
                                                            derivative_integrals("RI"), &out.work, square_flops) +
                           metric_gradient(in.ri_aux, in.mol, mp2.metric));
  });
  return out;
}

// One spin's (RHF: the one set's) Γ and the active and virtual columns of its orbitals.
GammaSpin gamma_spin(const RowStore& gamma, const SpinOrbitals& orbitals, std::size_t nfrozen) {
  const auto nfz = static_cast<Eigen::Index>(nfrozen);
  return {gamma, orbitals.C.middleCols(nfz, orbitals.nocc - nfz),
          orbitals.C.rightCols(orbitals.C.cols() - orbitals.nocc)};
}

}  // namespace

Mp2Gradient density_fitted_mp2_gradient(const Mp2GradientInput& in, FockBuilder& scf_fock, MemoryBudget& budget,
                                        Communicator& comm) {
  FittedTensorStore* jk_factors = scf_fock.fitted_factors_for_derivatives();
  if (jk_factors == nullptr) throw std::logic_error("the DF-MP2 gradient's JK-set terms need the DF-SCF's factors");
  // Checked here, not by the engine inside the passes' threads, where a throw would terminate.
  if (in.engine == nullptr || in.engine->memory() != kernels::Memory::host)
    throw std::invalid_argument("the DF-MP2 gradient needs a compute engine on host memory");
  if (in.plan.gpu.has_value() != (in.gpu != nullptr))
    throw std::invalid_argument("the DF-MP2 gradient's plan and its GPU disagree");
  const Mp2GradientDensities mp2 = mp2_gradient_densities(in.obs, in.ri_aux, in.pairs, scf_fock, in.orbitals,
                                                          in.plan, budget, in.scratch, comm, *in.engine,
                                                          in.gpu, in.z_convergence, in.progress);
  // RHF's one set stands for both spins (w = 2); UHF's α and β each for one (w = 1).
  const double w = mp2.electrons_per_orbital;
  Eigen::MatrixXd relaxed = mp2.relaxed[0];
  for (std::size_t s = 1; s < mp2.relaxed.size(); ++s) relaxed += mp2.relaxed[s];
  std::vector<GammaSpin> gamma;
  for (std::size_t s = 0; s < mp2.gamma.size(); ++s)
    gamma.push_back(gamma_spin(mp2.gamma[s], in.orbitals.spin(int(s)), in.plan.sets[s].nfrozen));
  Mp2Gradient out = contract(in, {relaxed, mp2.relaxed, mp2.energy_weighted, gamma, 2.0 * w, -w * mp2.metric},
                             *jk_factors, budget, comm, mp2.occupied_products.data());
  out.parts.insert(out.parts.begin(), mp2.parts.begin(), mp2.parts.end());
  out.energy = mp2.energy;
  out.cphf_iterations = mp2.cphf_iterations;
  out.work += mp2.work;
  out.gpu_uploaded_bytes = mp2.gpu_uploaded_bytes;
  return out;
}

}  // namespace dfmp2
