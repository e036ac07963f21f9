#include "src/scf/rhf.hpp"

#include <cmath>
#include <algorithm>
#include <deque>
#include <functional>
#include <sstream>

#include <Eigen/LU>

#include "kernels/symmetric_eigen.hpp"
#include "src/common/errors.hpp"
#include "src/common/stage_work.hpp"

namespace dfmp2 {
namespace {

// Pulay's DIIS: the Fock matrices whose extrapolated error vector is smallest. For UHF an entry
// holds both spins' Fock matrices and errors, extrapolated with one set of coefficients.
class Diis {
 public:
  // scaled: solve with the error products scaled to a largest diagonal element of 1 (same
  // coefficients). Near convergence they are ~1e-20 beside the constraint's −1, below the pivot
  // threshold of Eigen's FullPivLU (ε·size of the largest pivot), which then drops them: the
  // gradient stalls, at ~1e-10 for UHF (NO/def2-TZVP) and ~1e-12 for RHF. UHF, converged to
  // 1e-10, needs the scaling; RHF's 1e-8 default stays clear of the stall, and its unscaled
  // system keeps its results bit for bit those of earlier versions.
  Diis(int max_vectors, bool scaled) : max_vectors_(max_vectors), scaled_(scaled) {}

  std::vector<Eigen::MatrixXd> extrapolate(const std::vector<Eigen::MatrixXd>& F,
                                           const std::vector<Eigen::MatrixXd>& error) {
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
      for (int b = 0; b <= a; ++b) {
        double overlap = 0.0;
        for (std::size_t s = 0; s < F.size(); ++s) overlap += errors_[a][s].cwiseProduct(errors_[b][s]).sum();
        B(a, b) = B(b, a) = overlap;
      }
    if (scaled_) B.topLeftCorner(n, n) /= B.topLeftCorner(n, n).diagonal().maxCoeff();
    Eigen::VectorXd rhs = Eigen::VectorXd::Zero(n + 1);
    rhs(n) = -1.0;
    const Eigen::VectorXd c = B.fullPivLu().solve(rhs);
    std::vector<Eigen::MatrixXd> extrapolated(F.size(), Eigen::MatrixXd::Zero(F[0].rows(), F[0].cols()));
    for (std::size_t s = 0; s < F.size(); ++s)
      for (int a = 0; a < n; ++a) extrapolated[s] += c(a) * focks_[a][s];
    return extrapolated;
  }

 private:
  int max_vectors_;
  bool scaled_;
  std::deque<std::vector<Eigen::MatrixXd>> focks_, errors_;
};

// Occupation of each orbital, 0 … 1 (of an electron pair for RHF, of one electron for a UHF
// spin), for ascending orbital energies.
using OccupationRule = std::function<Eigen::VectorXd(const Eigen::VectorXd& eps)>;

OccupationRule aufbau(int nocc) {
  return [nocc](const Eigen::VectorXd& eps) {
    Eigen::VectorXd occupation = Eigen::VectorXd::Zero(eps.size());
    occupation.head(nocc).setOnes();
    return occupation;
  };
}

// D = F Fᵀ with F = C diag(√occupation) over the occupied columns.
Eigen::MatrixXd density_factor(const Eigen::MatrixXd& C, const Eigen::VectorXd& occupation) {
  Eigen::Index occupied = 0;
  while (occupied < occupation.size() && occupation(occupied) > 0.0) ++occupied;
  return C.leftCols(occupied) * occupation.head(occupied).cwiseSqrt().asDiagonal();
}

// Canonical orthogonalisation X = U s^-1/2 over the overlap eigenvalues kept.
Eigen::MatrixXd orthogonaliser(const Eigen::MatrixXd& S, double s_tolerance, int nocc) {
  const kernels::SymmetricEigen s_eig = kernels::symmetric_eigen(S);
  const Eigen::VectorXd& s = s_eig.values;
  Eigen::Index first_kept = 0;
  while (first_kept < s.size() && s(first_kept) < s_tolerance) ++first_kept;
  const Eigen::Index nmo = s.size() - first_kept;
  if (nmo < nocc)
    throw InputError("only " + std::to_string(nmo) + " linearly independent orbitals for " +
                     std::to_string(nocc) + " occupied ones");
  return s_eig.vectors.rightCols(nmo) * s.tail(nmo).cwiseSqrt().cwiseInverse().asDiagonal();
}

// The spins' two-electron terms: one closed-shell G, or UHF's G_α and G_β.
std::vector<Eigen::MatrixXd> two_electron_terms(FockBuilder& fock, const std::vector<Eigen::MatrixXd>& factors,
                                                kernels::Precision precision) {
  std::vector<FactorPair> densities;
  for (const Eigen::MatrixXd& factor : factors) densities.push_back(FactorPair::symmetric(factor));
  return fock.fock(densities, precision);
}

// What one iteration's Fock matrices F_s = H + G_s give.
struct FockStep {
  std::vector<Eigen::MatrixXd> F, error;  // per spin; error: the orthogonalised X^T(FDS − SDF)X
  double energy = 0.0, gradient_rms = 0.0;
};

// E = Σ_s w tr(D_s (H + F_s)) + E_nuc, w = 1 for RHF's one set (it stands for both spins), ½ for
// UHF's α and β; the gradient RMS over every spin's error elements.
FockStep fock_step(const Eigen::MatrixXd& S, const Eigen::MatrixXd& H, const Eigen::MatrixXd& X, double e_nuc,
                   const std::vector<Eigen::MatrixXd>& factors, const std::vector<Eigen::MatrixXd>& G) {
  FockStep step;
  const double weight = 1.0 / static_cast<double>(factors.size());
  double energy = 0.0, squares = 0.0, count = 0.0;
  for (std::size_t s = 0; s < factors.size(); ++s) {
    const Eigen::MatrixXd D = factors[s] * factors[s].transpose();
    step.F.push_back(H + G[s]);
    energy += weight * D.cwiseProduct(H + step.F[s]).sum();
    const Eigen::MatrixXd FDS = step.F[s] * D * S;
    step.error.push_back(X.transpose() * (FDS - FDS.transpose()) * X);
    squares += step.error[s].squaredNorm();
    count += static_cast<double>(step.error[s].size());
  }
  step.energy = energy + e_nuc;
  step.gradient_rms = std::sqrt(squares / count);
  return step;
}

struct ScfRun {
  ScfResult result;
  std::vector<Eigen::MatrixXd> density_factors;  // of the last densities the Fock matrices were built from
  bool converged = false;
};

// The SCF over one set of orbitals (RHF, or a spherical atom's fractional occupations) or two
// (UHF), each with its occupation rule. A guess density factor starts every set from it.
ScfRun iterate(const Eigen::MatrixXd& S, const Eigen::MatrixXd& H, double e_nuc,
               const std::vector<OccupationRule>& occupy, int nocc, FockBuilder& fock,
               const ScfOptions& options, const Eigen::MatrixXd& guess_density_factor) {
  const Eigen::MatrixXd X = orthogonaliser(S, options.s_tolerance, nocc);
  const std::size_t spins = occupy.size();
  ScfRun run;
  Orbitals& orbitals = run.result.orbitals;
  if (spins == 2) orbitals.beta.emplace();
  run.density_factors.resize(spins);
  auto diagonalise = [&](const std::vector<Eigen::MatrixXd>& F) {
    for (std::size_t s = 0; s < spins; ++s) {
      const kernels::SymmetricEigen eig = kernels::symmetric_eigen(X.transpose() * F[s] * X);
      SpinOrbitals& set = orbitals.spin(static_cast<int>(s));
      set.C = X * eig.vectors;
      set.eps = eig.values;
      const Eigen::VectorXd occupation = occupy[s](set.eps);
      set.nocc = static_cast<int>((occupation.array() > 0.0).count());
      run.density_factors[s] = density_factor(set.C, occupation);
    }
  };
  if (guess_density_factor.size() > 0)
    run.density_factors.assign(spins, guess_density_factor);
  else
    diagonalise(std::vector<Eigen::MatrixXd>(spins, H));

  Diis diis(options.diis_vectors, spins == 2);
  const double d_convergence = options.d_convergence_for(spins);
  double previous_energy = 0.0;
  bool fp32 = options.fp32_until_gradient > 0.0 && fock.has_fp32_build();
  for (int iteration = 1; iteration <= options.max_iterations; ++iteration) {
    const auto build_start = std::chrono::steady_clock::now();
    const std::vector<Eigen::MatrixXd> G =
        two_electron_terms(fock, run.density_factors, fp32 ? kernels::Precision::fp32 : kernels::Precision::fp64);
    const double jk_seconds = seconds_since(build_start);
    const FockStep step = fock_step(S, H, X, e_nuc, run.density_factors, G);
    ScfIteration record{iteration, step.energy, iteration == 1 ? step.energy : step.energy - previous_energy,
                        step.gradient_rms, fp32, jk_seconds};
    run.result.iterations.push_back(record);
    if (options.on_iteration) options.on_iteration(record);
    previous_energy = step.energy;
    run.result.energy = step.energy;
    if (!fp32 && iteration > 1 && std::abs(record.delta_e) < options.e_convergence &&
        step.gradient_rms < d_convergence) {
      diagonalise(step.F);  // canonical orbitals of the converged Fock matrices
      run.converged = true;
      return run;
    }
    fp32 = fp32 && step.gradient_rms >= options.fp32_until_gradient;
    // A guess density is not idempotent: its Fock matrix starts the SCF but stays out of DIIS.
    const bool from_guess = iteration == 1 && guess_density_factor.size() > 0;
    diagonalise(from_guess ? step.F : diis.extrapolate(step.F, step.error));
  }
  return run;
}

ScfResult converged_or_throw(ScfRun&& run, const ScfOptions& options) {
  if (run.converged) return std::move(run.result);
  const ScfIteration& last = run.result.iterations.back();
  std::ostringstream message;
  message << "SCF did not converge in " << options.max_iterations << " iterations (last ΔE "
          << last.delta_e << " Eh, gradient RMS " << last.gradient_rms << ")";
  throw ConvergenceError(message.str());
}

}  // namespace

std::size_t scf_working_bytes(std::size_t nbf, const ScfOptions& options, std::size_t spins) {
  constexpr std::size_t kMatrices = 16;  // S, H, X, C, D, F, FDS, the error and their temporaries
  return sizeof(double) * nbf * nbf * spins * (kMatrices + 2 * static_cast<std::size_t>(options.diis_vectors));
}

ScfResult run_rhf(const Eigen::MatrixXd& S, const Eigen::MatrixXd& H, double e_nuc, int nocc,
                  FockBuilder& fock, const ScfOptions& options,
                  const Eigen::MatrixXd& guess_density_factor) {
  return converged_or_throw(iterate(S, H, e_nuc, {aufbau(nocc)}, nocc, fock, options, guess_density_factor),
                            options);
}

ScfResult run_uhf(const Eigen::MatrixXd& S, const Eigen::MatrixXd& H, double e_nuc, int nalpha, int nbeta,
                  FockBuilder& fock, const ScfOptions& options, const Eigen::MatrixXd& guess_density_factor) {
  return converged_or_throw(
      iterate(S, H, e_nuc, {aufbau(nalpha), aufbau(nbeta)}, nalpha, fock, options, guess_density_factor),
      options);
}

GivenOrbitalsEnergy scf_energy(const Orbitals& orbitals, const Eigen::MatrixXd& H, FockBuilder& fock) {
  std::vector<Eigen::MatrixXd> factors;
  for (int s = 0; s < orbitals.spin_count(); ++s)
    factors.push_back(orbitals.spin(s).C.leftCols(orbitals.spin(s).nocc));
  const std::vector<Eigen::MatrixXd> G = two_electron_terms(fock, factors, kernels::Precision::fp64);
  const double weight = 1.0 / static_cast<double>(factors.size());
  GivenOrbitalsEnergy result;
  for (std::size_t s = 0; s < factors.size(); ++s) {
    result.energy += weight * (factors[s] * factors[s].transpose()).cwiseProduct(2.0 * H + G[s]).sum();
    const SpinOrbitals& spin = orbitals.spin(static_cast<int>(s));
    const Eigen::MatrixXd F_ov = factors[s].transpose() * (H + G[s]) * spin.C.rightCols(spin.C.cols() - spin.nocc);
    if (F_ov.size() > 0) result.max_orbital_gradient = std::max(result.max_orbital_gradient, F_ov.cwiseAbs().maxCoeff());
  }
  return result;
}

double spin_squared(const Orbitals& orbitals, const Eigen::MatrixXd& S) {
  if (!orbitals.unrestricted()) return 0.0;
  const int nalpha = orbitals.nocc, nbeta = orbitals.beta->nocc;
  const double sz = 0.5 * (nalpha - nbeta);
  const Eigen::MatrixXd overlap = orbitals.C.leftCols(nalpha).transpose() * S * orbitals.beta->C.leftCols(nbeta);
  return sz * (sz + 1.0) + nbeta - overlap.squaredNorm();
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
  return iterate(S, H, 0.0, {spread}, orbitals_needed, fock, options, {}).density_factors[0];
}

}  // namespace dfmp2
