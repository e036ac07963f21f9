// Spin-restricted SCF with DIIS. Knows nothing of integrals: it is handed S, H and a function
// that builds the two-electron Fock term G = 2J − K from a density factor.
#pragma once

#include <functional>
#include <vector>

#include <Eigen/Core>

#include "src/scf/orbitals.hpp"

namespace dfmp2 {

struct ScfIteration {
  int iteration = 0;
  double energy = 0.0, delta_e = 0.0, gradient_rms = 0.0;
};

struct ScfOptions {
  double e_convergence = 1e-10;  // |ΔE| between iterations, Eh
  double d_convergence = 1e-8;   // RMS of the orthogonalised orbital gradient X^T(FDS − SDF)X
  int max_iterations = 100;
  int diis_vectors = 8;
  double s_tolerance = 1e-7;     // overlap eigenvalues below this are dropped (linear dependence)
  std::function<void(const ScfIteration&)> on_iteration;  // progress; may be empty
};

struct ScfResult {
  double energy = 0.0;
  Orbitals orbitals;
  std::vector<ScfIteration> iterations;
};

// G = 2J − K for the closed-shell density D = F Fᵀ; F is C_occ for RHF orbitals, or any
// factor of a guess or fractionally occupied density.
using TwoElectronFock = std::function<Eigen::MatrixXd(const Eigen::MatrixXd& density_factor)>;

// Closed-shell RHF. The first Fock matrix comes from guess_density_factor (D = F Fᵀ) or, when
// that is empty, from the core Hamiltonian. Throws InputError when not converged within
// max_iterations, or when fewer orbitals than occupied remain after removing linear dependencies.
ScfResult run_rhf(const Eigen::MatrixXd& S, const Eigen::MatrixXd& H, double e_nuc, int nocc,
                  const TwoElectronFock& two_electron_fock, const ScfOptions& options,
                  const Eigen::MatrixXd& guess_density_factor = {});

// Spherically averaged atom: spin-restricted SCF with `electrons` spread by aufbau, the last
// partly filled level's share divided evenly over its degenerate orbitals. Returns the factor
// F of its density D = F Fᵀ (closed-shell convention), converged or, for a guess, as close as
// max_iterations got.
Eigen::MatrixXd spherical_atom_density_factor(const Eigen::MatrixXd& S, const Eigen::MatrixXd& H,
                                              int electrons,
                                              const TwoElectronFock& two_electron_fock,
                                              const ScfOptions& options);

}  // namespace dfmp2
