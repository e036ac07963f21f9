// Spin-restricted (RHF) and unrestricted (UHF) SCF with DIIS. Knows nothing of integrals: it is
// handed S, H and a builder of the two-electron Fock terms from density factors
// (fock_builder.hpp): G = 2J − K, or UHF's G_α and G_β.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include <Eigen/Core>

#include "src/scf/fock_builder.hpp"
#include "src/scf/orbitals.hpp"

namespace dfmp2 {

struct ScfIteration {
  int iteration = 0;
  double energy = 0.0, delta_e = 0.0, gradient_rms = 0.0;
  bool fp32 = false;        // the Fock matrix came from a single-precision build
  double jk_seconds = 0.0;  // wall time of its Fock build (J/K); the rest of the iteration is the SCF's own
};

inline constexpr double kRhfDConvergence = 1e-8, kUhfDConvergence = 1e-10;

struct ScfOptions {
  double e_convergence = 1e-10;  // |ΔE| between iterations, Eh
  // RMS of the orthogonalised orbital gradient X^T(FDS − SDF)X. Unset: kRhfDConvergence, or
  // kUhfDConvergence for UHF, whose flat orbital rotations (spin contamination: NO, allyl) carry a
  // 1e-8 gradient into E_corr at up to 2e-7 Eh (Psi4's references converge to 1e-10).
  std::optional<double> d_convergence;
  double d_convergence_for(int spins) const {
    return d_convergence.value_or(spins == 2 ? kUhfDConvergence : kRhfDConvergence);
  }
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
  Orbitals orbitals;  // UHF: α and β
  std::vector<ScfIteration> iterations;
};

// What run_rhf (spins 1) or run_uhf (spins 2) holds beside the Fock builder: its matrices and the
// DIIS history, per spin (bytes; S, H and X counted with each).
std::size_t scf_working_bytes(std::size_t nbf, const ScfOptions& options, std::size_t spins);

// Closed-shell RHF. The first Fock matrix comes from guess_density_factor (D = F Fᵀ) or, when
// that is empty, from the core Hamiltonian. Throws InputError when not converged within
// max_iterations, or when fewer orbitals than occupied remain after removing linear dependencies.
ScfResult run_rhf(const Eigen::MatrixXd& S, const Eigen::MatrixXd& H, double e_nuc, int nocc,
                  FockBuilder& fock, const ScfOptions& options,
                  const Eigen::MatrixXd& guess_density_factor = {});

// UHF with nalpha ≥ nbeta electrons of each spin; DIIS extrapolates both spins' Fock matrices
// with one set of coefficients, and the gradient RMS runs over both spins' error elements (as
// Psi4's). A guess density factor F (closed-shell convention D = F Fᵀ, half the total density:
// the SAD guess) starts α and β alike; the occupations break their symmetry at the first
// diagonalisation. Throws as run_rhf.
ScfResult run_uhf(const Eigen::MatrixXd& S, const Eigen::MatrixXd& H, double e_nuc, int nalpha, int nbeta,
                  FockBuilder& fock, const ScfOptions& options, const Eigen::MatrixXd& guess_density_factor = {});

// What one Fock build says of given orbitals (RHF or UHF): the electronic SCF energy, without
// E_nuc, and the largest occupied–virtual Fock element |C_iᵀ F C_a| of either spin (zero for the
// SCF solution of this Fock builder: Brillouin's theorem).
struct GivenOrbitalsEnergy {
  double energy = 0.0;
  double max_orbital_gradient = 0.0;
};
GivenOrbitalsEnergy scf_energy(const Orbitals& orbitals, const Eigen::MatrixXd& H, FockBuilder& fock);

// ⟨S²⟩ of a UHF determinant: Sz(Sz + 1) + nβ − Σ_ij |⟨iα|jβ⟩|² over the occupied orbitals (S the
// AO overlap), as Psi4's HF::compute_spin_contamination; 0 for RHF orbitals.
double spin_squared(const Orbitals& orbitals, const Eigen::MatrixXd& S);

// Spherically averaged atom: spin-restricted SCF with `electrons` spread by aufbau, the last
// partly filled level's share divided evenly over its degenerate orbitals. Returns the factor
// F of its density D = F Fᵀ (closed-shell convention), converged or, for a guess, as close as
// max_iterations got.
Eigen::MatrixXd spherical_atom_density_factor(const Eigen::MatrixXd& S, const Eigen::MatrixXd& H,
                                              int electrons,
                                              FockBuilder& fock, const ScfOptions& options);

}  // namespace dfmp2
