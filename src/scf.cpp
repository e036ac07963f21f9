#include "src/scf.hpp"

#include <cmath>
#include <deque>
#include <sstream>

#include <Eigen/LU>

#include "src/eigen_solver.hpp"
#include "src/errors.hpp"

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

}  // namespace

ScfResult run_rhf(const Eigen::MatrixXd& S, const Eigen::MatrixXd& H, double e_nuc, int nocc,
                  const TwoElectronFock& two_electron_fock, const ScfOptions& options) {
  // Canonical orthogonalisation X = U s^-1/2 over the overlap eigenvalues kept.
  const SymmetricEigen s_eig = symmetric_eigen(S);
  const Eigen::VectorXd& s = s_eig.values;
  Eigen::Index first_kept = 0;
  while (first_kept < s.size() && s(first_kept) < options.s_tolerance) ++first_kept;
  const Eigen::Index nmo = s.size() - first_kept;
  if (nmo < nocc)
    throw InputError("only " + std::to_string(nmo) + " linearly independent orbitals for " +
                     std::to_string(nocc) + " occupied ones");
  const Eigen::MatrixXd X = s_eig.vectors.rightCols(nmo) *
                            s.tail(nmo).cwiseSqrt().cwiseInverse().asDiagonal();

  ScfResult result;
  auto diagonalise = [&](const Eigen::MatrixXd& F) {
    const SymmetricEigen eig = symmetric_eigen(X.transpose() * F * X);
    result.orbitals.C = X * eig.vectors;
    result.orbitals.eps = eig.values;
    result.orbitals.nocc = nocc;
  };
  diagonalise(H);  // core-Hamiltonian guess

  Diis diis(options.diis_vectors);
  double previous_energy = 0.0;
  for (int iteration = 1; iteration <= options.max_iterations; ++iteration) {
    const Eigen::MatrixXd C_occ = result.orbitals.C.leftCols(nocc);
    const Eigen::MatrixXd D = C_occ * C_occ.transpose();
    const Eigen::MatrixXd F = H + two_electron_fock(C_occ);
    const double energy = D.cwiseProduct(H + F).sum() + e_nuc;
    const Eigen::MatrixXd FDS = F * D * S;
    const Eigen::MatrixXd error = X.transpose() * (FDS - FDS.transpose()) * X;
    const double gradient_rms = std::sqrt(error.squaredNorm() / static_cast<double>(error.size()));

    ScfIteration record{iteration, energy, iteration == 1 ? energy : energy - previous_energy,
                        gradient_rms};
    result.iterations.push_back(record);
    if (options.on_iteration) options.on_iteration(record);
    previous_energy = energy;
    result.energy = energy;
    if (iteration > 1 && std::abs(record.delta_e) < options.e_convergence &&
        gradient_rms < options.d_convergence) {
      diagonalise(F);  // canonical orbitals of the converged Fock matrix
      return result;
    }
    diagonalise(diis.extrapolate(F, error));
  }
  std::ostringstream message;
  message << "SCF did not converge in " << options.max_iterations
          << " iterations (last ΔE " << result.iterations.back().delta_e << " Eh, gradient RMS "
          << result.iterations.back().gradient_rms << ")";
  throw InputError(message.str());
}

}  // namespace dfmp2
