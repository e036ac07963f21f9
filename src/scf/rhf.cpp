#include "src/scf/rhf.hpp"

#include <cmath>
#include <algorithm>
#include <deque>
#include <functional>
#include <sstream>

#include <Eigen/LU>

#include "kernels/symmetric_eigen.hpp"
#include "src/common/errors.hpp"

namespace dfmp2 {
namespace {

// Pulay's DIIS: the Fock matrix whose extrapolated error vector is smallest.
class Diis {
 public:
  explicit Diis(int max_vectors) : max_vectors_(max_vectors) {}

  Eigen::MatrixXd extrapolate(const Eigen::MatrixXd& F, const Eigen::MatrixXd& error) {
    focks_.push_back(F);
    errors_.push_back(error);
    if (static_cast<int>(focks_.size()) > max_vectors_) {
      focks_.pop_front();
      errors_.pop_front();
    }
    const int n = static_cast<int>(focks_.size());
    Eigen::MatrixXd B = Eigen::MatrixXd::Constant(n + 1, n + 1, -1.0);
    B(n, n) = 0.0;
    for (int a = 0; a < n; ++a)
      for (int b = 0; b <= a; ++b) B(a, b) = B(b, a) = errors_[a].cwiseProduct(errors_[b]).sum();
    Eigen::VectorXd rhs = Eigen::VectorXd::Zero(n + 1);
    rhs(n) = -1.0;
    const Eigen::VectorXd c = B.fullPivLu().solve(rhs);
    Eigen::MatrixXd extrapolated = Eigen::MatrixXd::Zero(F.rows(), F.cols());
    for (int a = 0; a < n; ++a) extrapolated += c(a) * focks_[a];
    return extrapolated;
  }

 private:
  int max_vectors_;
  std::deque<Eigen::MatrixXd> focks_, errors_;
};

// Occupation of each orbital, 0 … 1 of its electron pair, for ascending orbital energies.
using OccupationRule = std::function<Eigen::VectorXd(const Eigen::VectorXd& eps)>;

// D = F Fᵀ with F = C diag(√occupation) over the occupied columns.
Eigen::MatrixXd density_factor(const Eigen::MatrixXd& C, const Eigen::VectorXd& occupation) {
  Eigen::Index occupied = 0;
  while (occupied < occupation.size() && occupation(occupied) > 0.0) ++occupied;
  return C.leftCols(occupied) * occupation.head(occupied).cwiseSqrt().asDiagonal();
}

struct ScfRun {
  ScfResult result;
  Eigen::MatrixXd density_factor;  // of the last density the Fock matrix was built from
  bool converged = false;
};

ScfRun iterate(const Eigen::MatrixXd& S, const Eigen::MatrixXd& H, double e_nuc, int nocc,
               const OccupationRule& occupy, FockBuilder& fock, const ScfOptions& options,
               const Eigen::MatrixXd& guess_density_factor) {
  // Canonical orthogonalisation X = U s^-1/2 over the overlap eigenvalues kept.
  const kernels::SymmetricEigen s_eig = kernels::symmetric_eigen(S);
  const Eigen::VectorXd& s = s_eig.values;
  Eigen::Index first_kept = 0;
  while (first_kept < s.size() && s(first_kept) < options.s_tolerance) ++first_kept;
  const Eigen::Index nmo = s.size() - first_kept;
  if (nmo < nocc)
    throw InputError("only " + std::to_string(nmo) + " linearly independent orbitals for " +
                     std::to_string(nocc) + " occupied ones");
  const Eigen::MatrixXd X = s_eig.vectors.rightCols(nmo) *
                            s.tail(nmo).cwiseSqrt().cwiseInverse().asDiagonal();

  ScfRun run;
  Orbitals& orbitals = run.result.orbitals;
  auto diagonalise = [&](const Eigen::MatrixXd& F) {
    const kernels::SymmetricEigen eig = kernels::symmetric_eigen(X.transpose() * F * X);
    orbitals.C = X * eig.vectors;
    orbitals.eps = eig.values;
    orbitals.nocc = nocc;
    run.density_factor = density_factor(orbitals.C, occupy(orbitals.eps));
  };
  if (guess_density_factor.size() > 0)
    run.density_factor = guess_density_factor;
  else
    diagonalise(H);

  Diis diis(options.diis_vectors);
  double previous_energy = 0.0;
  bool fp32 = options.fp32_until_gradient > 0.0 && fock.has_fp32_build();
  for (int iteration = 1; iteration <= options.max_iterations; ++iteration) {
    const Eigen::MatrixXd& factor = run.density_factor;
    const Eigen::MatrixXd D = factor * factor.transpose();
    const Eigen::MatrixXd F =
        H + fock.build(factor, fp32 ? kernels::Precision::fp32 : kernels::Precision::fp64);
    const double energy = D.cwiseProduct(H + F).sum() + e_nuc;
    const Eigen::MatrixXd FDS = F * D * S;
    const Eigen::MatrixXd error = X.transpose() * (FDS - FDS.transpose()) * X;
    const double gradient_rms = std::sqrt(error.squaredNorm() / static_cast<double>(error.size()));

    ScfIteration record{iteration, energy, iteration == 1 ? energy : energy - previous_energy,
                        gradient_rms, fp32};
    run.result.iterations.push_back(record);
    if (options.on_iteration) options.on_iteration(record);
    previous_energy = energy;
    run.result.energy = energy;
    if (!fp32 && iteration > 1 && std::abs(record.delta_e) < options.e_convergence &&
        gradient_rms < options.d_convergence) {
      diagonalise(F);  // canonical orbitals of the converged Fock matrix
      run.converged = true;
      return run;
    }
    fp32 = fp32 && gradient_rms >= options.fp32_until_gradient;
    // A guess density is not idempotent: its Fock matrix starts the SCF but stays out of DIIS.
    const bool from_guess = iteration == 1 && guess_density_factor.size() > 0;
    diagonalise(from_guess ? F : diis.extrapolate(F, error));
  }
  return run;
}

}  // namespace

std::size_t rhf_working_bytes(std::size_t nbf, const ScfOptions& options) {
  constexpr std::size_t kMatrices = 16;  // S, H, X, C, D, F, FDS, the error and their temporaries
  return sizeof(double) * nbf * nbf * (kMatrices + 2 * static_cast<std::size_t>(options.diis_vectors));
}

ScfResult run_rhf(const Eigen::MatrixXd& S, const Eigen::MatrixXd& H, double e_nuc, int nocc,
                  FockBuilder& fock, const ScfOptions& options,
                  const Eigen::MatrixXd& guess_density_factor) {
  const OccupationRule aufbau = [nocc](const Eigen::VectorXd& eps) {
    Eigen::VectorXd occupation = Eigen::VectorXd::Zero(eps.size());
    occupation.head(nocc).setOnes();
    return occupation;
  };
  ScfRun run =
      iterate(S, H, e_nuc, nocc, aufbau, fock, options, guess_density_factor);
  if (run.converged) return std::move(run.result);
  const ScfIteration& last = run.result.iterations.back();
  std::ostringstream message;
  message << "SCF did not converge in " << options.max_iterations << " iterations (last ΔE "
          << last.delta_e << " Eh, gradient RMS " << last.gradient_rms << ")";
  throw InputError(message.str());
}

Eigen::MatrixXd spherical_atom_density_factor(const Eigen::MatrixXd& S, const Eigen::MatrixXd& H,
                                              int electrons,
                                              FockBuilder& fock, const ScfOptions& options) {
  // Orbital energies this close count as one level (a spherical atom's p, d shells).
  constexpr double kDegenerate = 1e-4;
  const OccupationRule spread = [electrons](const Eigen::VectorXd& eps) {
    Eigen::VectorXd occupation = Eigen::VectorXd::Zero(eps.size());
    double pairs_left = 0.5 * electrons;
    for (Eigen::Index first = 0; first < eps.size() && pairs_left > 0.0;) {
      Eigen::Index end = first + 1;
      while (end < eps.size() && eps(end) - eps(first) < kDegenerate) ++end;
      const double level = static_cast<double>(end - first);
      const double share = std::min(1.0, pairs_left / level);
      occupation.segment(first, end - first).setConstant(share);
      pairs_left -= share * level;
      first = end;
    }
    return occupation;
  };
  const int orbitals_needed = (electrons + 1) / 2;
  return iterate(S, H, 0.0, orbitals_needed, spread, fock, options, {})
      .density_factor;
}

}  // namespace dfmp2
