#include "src/gradient/scf_gradient.hpp"

#include <stdexcept>

#include "src/integrals/df_two_electron_derivatives.hpp"
#include "src/integrals/ecp.hpp"
#include "src/integrals/one_electron_derivatives.hpp"
#include "src/integrals/shell_pairs.hpp"
#include "src/integrals/two_electron_derivatives.hpp"

namespace dfmp2 {

ScfDensities scf_densities(const Orbitals& orbitals) {
  ScfDensities d;
  const auto nbf = orbitals.C.rows();
  d.total = d.energy_weighted = Eigen::MatrixXd::Zero(nbf, nbf);
  // A closed shell's orbitals hold two electrons each.
  const double occupation = orbitals.unrestricted() ? 1.0 : 2.0;
  for (int s = 0; s < orbitals.spin_count(); ++s) {
    const SpinOrbitals& set = orbitals.spin(s);
    const auto C_occ = set.C.leftCols(set.nocc);
    d.occupied.push_back(C_occ);
    d.spins.push_back(C_occ * C_occ.transpose());
    d.total += occupation * d.spins.back();
    d.energy_weighted += occupation * C_occ * set.eps.head(set.nocc).asDiagonal() * C_occ.transpose();
  }
  return d;
}

SeparableDensities scf_separable_densities(const ScfDensities& densities) {
  SeparableDensities separable{densities.total, 0.5 * densities.total, densities.occupied, {}};
  const double share = densities.spins.size() == 1 ? 1.0 : 0.5;
  for (const Eigen::MatrixXd& D_s : densities.spins) separable.exchange_partners.push_back(share * D_s);
  return separable;
}

Eigen::MatrixXd scf_gradient_without_two_electron_or_ecp(const libint2::BasisSet& obs, const Molecule& mol,
                                                         const ScfDensities& densities) {
  return nuclear_repulsion_gradient(mol) + core_hamiltonian_gradient(obs, mol, densities.total) -
         overlap_gradient(obs, mol, densities.energy_weighted);
}

Eigen::MatrixXd ecp_gradient_term(const libint2::BasisSet& obs, const Molecule& mol, const Eigen::MatrixXd& D,
                                  const BasisSetData* potentials, Communicator& comm) {
  if (!has_ecp(mol)) return Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(mol.atoms.size()), 3);
  if (potentials == nullptr) throw std::logic_error("the gradient of a molecule with ECPs needs its basis set's potentials");
  return ecp_gradient(obs, *potentials, mol, D, comm);
}

Eigen::MatrixXd scf_gradient_without_two_electron(const libint2::BasisSet& obs, const Molecule& mol,
                                                  const ScfDensities& densities, Communicator& comm,
                                                  const BasisSetData* potentials) {
  return scf_gradient_without_two_electron_or_ecp(obs, mol, densities) +
         ecp_gradient_term(obs, mol, densities.total, potentials, comm);
}

Eigen::MatrixXd exact_scf_gradient(const libint2::BasisSet& obs, const Molecule& mol, const Orbitals& orbitals,
                                   const BasisSetData* potentials) {
  const ScfDensities densities = scf_densities(orbitals);
  Communicator this_process;  // the exact SCF gradient runs on one process
  return scf_gradient_without_two_electron(obs, mol, densities, this_process, potentials) +
         four_centre_gradient(obs, significant_shell_pairs(obs), mol, densities.spins);
}

Eigen::MatrixXd density_fitted_scf_gradient(const libint2::BasisSet& obs, const libint2::BasisSet& jk_aux,
                                            const ShellPairs& pairs, FittedTensorStore& factors, const Molecule& mol,
                                            const Orbitals& orbitals, const SeparableTermLayout& layout,
                                            MemoryBudget& budget, const ScratchDirectory* scratch,
                                            Communicator& comm, const BasisSetData* potentials) {
  const ScfDensities densities = scf_densities(orbitals);
  return scf_gradient_without_two_electron(obs, mol, densities, comm, potentials) +
         density_fitted_two_electron_gradient(obs, jk_aux, pairs, ThreeCentreScreening(obs, pairs), factors, mol,
                                              scf_separable_densities(densities), layout, budget, scratch, comm);
}

}  // namespace dfmp2
