// Spin-restricted SCF with DIIS. Knows nothing of integrals: it is handed S, H and a builder of
// the two-electron Fock term G = 2J − K from a density factor (fock_builder.hpp).
#pragma once

#include <functional>
#include <vector>

#include <Eigen/Core>

#include "src/scf/fock_builder.hpp"
#include "src/scf/orbitals.hpp"

namespace dfmp2 {

struct ScfIteration {
  int iteration = 0;
  double energy = 0.0, delta_e = 0.0, gradient_rms = 0.0;
  bool fp32 = false;  // the Fock matrix came from a single-precision build
};

struct ScfOptions {
  double e_convergence = 1e-10;  // |ΔE| between iterations, Eh
  double d_convergence = 1e-8;   // RMS of the orthogonalised orbital gradient X^T(FDS − SDF)X
  int max_iterations = 100;
  int diis_vectors = 8;
  double s_tolerance = 1e-7;     // overlap eigenvalues below this are dropped (linear dependence)
  // Fock builds run in single precision (FockBuilder: cheaper K) until the gradient RMS first
  // falls below this; then in double precision, and only those iterations can converge, so the
  // converged energy is the double-precision one. 0: double precision throughout.
  double fp32_until_gradient = 1e-4;
  std::function<void(const ScfIteration&)> on_iteration;  // progress; may be empty
};

struct ScfResult {
  double energy = 0.0;
  Orbitals orbitals;
  std::vector<ScfIteration> iterations;
};

// What run_rhf holds beside the Fock builder: its matrices and the DIIS history (bytes).
std::size_t rhf_working_bytes(std::size_t nbf, const ScfOptions& options);

// Closed-shell RHF. The first Fock matrix comes from guess_density_factor (D = F Fᵀ) or, when
// that is empty, from the core Hamiltonian. Throws InputError when not converged within
// max_iterations, or when fewer orbitals than occupied remain after removing linear dependencies.
ScfResult run_rhf(const Eigen::MatrixXd& S, const Eigen::MatrixXd& H, double e_nuc, int nocc,
                  FockBuilder& fock, const ScfOptions& options,
                  const Eigen::MatrixXd& guess_density_factor = {});

// Spherically averaged atom: spin-restricted SCF with `electrons` spread by aufbau, the last
// partly filled level's share divided evenly over its degenerate orbitals. Returns the factor
// F of its density D = F Fᵀ (closed-shell convention), converged or, for a guess, as close as
// max_iterations got.
Eigen::MatrixXd spherical_atom_density_factor(const Eigen::MatrixXd& S, const Eigen::MatrixXd& H,
                                              int electrons,
                                              FockBuilder& fock, const ScfOptions& options);

}  // namespace dfmp2
