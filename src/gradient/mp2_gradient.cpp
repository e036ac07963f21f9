#include "src/gradient/mp2_gradient.hpp"

#include "src/gradient/mp2_relaxed_density.hpp"
#include "src/gradient/scf_gradient.hpp"
#include "src/integrals/df_two_electron_derivatives.hpp"
#include "src/integrals/one_electron.hpp"
#include "src/integrals/two_electron_derivatives.hpp"

namespace dfmp2 {

Mp2Gradient density_fitted_mp2_gradient(const Mp2GradientInput& in, DensityFittedFock& jk, MemoryBudget& budget,
                                        Communicator& comm) {
  const Mp2GradientDensities mp2 =
      mp2_gradient_densities(in.obs, in.ri_aux, in.pairs, jk, in.orbitals, in.plan, budget, comm,
                             in.z_convergence);
  const ScfDensities scf = scf_densities(in.orbitals);

  ScfDensities one_electron = scf;
  one_electron.total += mp2.relaxed;
  one_electron.energy_weighted += mp2.energy_weighted;
  // E_2 of the SCF density with itself and P ⊗ D − ½ P_μλ D_νσ of the MP2 part.
  SeparableDensities separable = scf_separable_densities(scf);
  separable.coulomb_partner += mp2.relaxed;
  separable.exchange_partners.front() += mp2.relaxed;

  const Eigen::MatrixXd& C = in.orbitals.C;
  const auto nfrozen = static_cast<Eigen::Index>(in.plan.sizes.nfrozen);
  const Eigen::Index nocc = in.orbitals.nocc, active = nocc - nfrozen, nvir = C.cols() - nocc;
  const Eigen::MatrixXd C_act = C.middleCols(nfrozen, active), C_vir = C.rightCols(nvir);
  const auto nbf = C.rows();
  // Γ^P_μν = 2 (C_act Γ^P C_virᵀ + its transpose): symmetric, so that its sum over both orders of
  // μν is 4 Σ_ia Γ_ia^P (P|ia).
  const auto gamma = [&](Eigen::Index P, double* square) {
    using RowMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const Eigen::Map<const RowMajorMatrix> gamma_P(mp2.gamma.data() + P * active * nvir, active, nvir);
    const Eigen::MatrixXd half = C_act * gamma_P * C_vir.transpose();
    Eigen::Map<Eigen::MatrixXd>(square, nbf, nbf) = 2.0 * (half + half.transpose());
  };

  Mp2Gradient out;
  out.e_mp2 = mp2.e_mp2;
  out.cphf_iterations = mp2.cphf_iterations;
  out.dipole = dipole_moment(in.obs, in.mol, one_electron.total);
  out.gradient = scf_gradient_without_two_electron(in.obs, in.mol, one_electron) +
                 density_fitted_two_electron_gradient(in.obs, in.jk_aux, in.pairs, in.mol, separable, comm) +
                 three_centre_gradient_of_squares(in.ri_aux, in.obs, in.pairs, in.mol, gamma, comm) +
                 metric_gradient(in.ri_aux, in.mol, -2.0 * mp2.metric);
  return out;
}

}  // namespace dfmp2
