#include "src/gradient/mp2_relaxed_density.hpp"

#include <vector>

#include "kernels/block_packed.hpp"
#include "src/common/errors.hpp"
#include "src/integrals/density_fitting.hpp"
#include "src/integrals/three_index.hpp"

namespace dfmp2 {
namespace {

using RowMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// (4J − 2K)(X) for X the symmetric part of L Rᵀ, from the DF-SCF's factors: the response of the
// closed-shell Fock matrix to a density change X.
Eigen::MatrixXd fock_response(DensityFittedFock& jk, const Eigen::MatrixXd& L, const Eigen::MatrixXd& R) {
  const auto n = L.rows();
  Eigen::MatrixXd J(n, n), K(n, n);
  const kernels::DensityFactors density{L.data(), R.data(), static_cast<std::size_t>(L.cols())};
  double* J_data = J.data();
  double* K_data = K.data();
  jk.coulomb_exchange({&density, 1}, {&J_data, 1}, {&K_data, 1}, kernels::Precision::fp64);
  // J sees only the symmetric part of L Rᵀ; K of its transpose, R Lᵀ, is Kᵀ.
  return 4.0 * J - (K + K.transpose());
}

// Cᵀ B^P C for every auxiliary function P of the RI set, raw (unfitted) (P|pq): row P, nmo × nmo
// column-major.
RowMajorMatrix mo_three_index(const libint2::BasisSet& obs, const libint2::BasisSet& aux, const ShellPairs& pairs,
                              const Eigen::MatrixXd& metric, const Eigen::MatrixXd& C) {
  const std::size_t stored = pairs.layout.size();
  const auto naux = static_cast<Eigen::Index>(aux.nbf()), nbf = C.rows(), nmo = C.cols();
  std::vector<double> ao(static_cast<std::size_t>(naux) * stored);
  ThreeIndexIntegrals(aux, obs, pairs, metric).compute({0, aux.size()}, {0, obs.size()}, ao.data());
  RowMajorMatrix mo(naux, nmo * nmo);
#pragma omp parallel
  {
    Eigen::MatrixXd square(nbf, nbf);
#pragma omp for schedule(dynamic)
    for (Eigen::Index P = 0; P < naux; ++P) {
      kernels::unpack_symmetric(pairs.layout, ao.data() + static_cast<std::size_t>(P) * stored, square.data());
      Eigen::Map<Eigen::MatrixXd>(mo.row(P).data(), nmo, nmo).noalias() = C.transpose() * (square * C);
    }
  }
  return mo;
}

// Solves (Δ + A) z = b by conjugate gradients preconditioned with Δ⁻¹, Δ_ak = ε_a − ε_k > 0 and
// A z = C_vᵀ (4J − 2K)(Z) C_o (positive definite for a stable RHF solution), until every residual
// element is below `convergence`.
Eigen::MatrixXd solve_z_vector(DensityFittedFock& jk, const Eigen::MatrixXd& C_occ, const Eigen::MatrixXd& C_vir,
                               const Eigen::MatrixXd& delta, const Eigen::MatrixXd& b, double convergence,
                               int& iterations) {
  const auto apply = [&](const Eigen::MatrixXd& z) -> Eigen::MatrixXd {
    const Eigen::MatrixXd left = C_vir * z;
    return delta.cwiseProduct(z) + C_vir.transpose() * fock_response(jk, left, C_occ) * C_occ;
  };
  Eigen::MatrixXd z = b.cwiseQuotient(delta);
  Eigen::MatrixXd r = b - apply(z);
  Eigen::MatrixXd s = r.cwiseQuotient(delta), p = s;
  double rs = r.cwiseProduct(s).sum();
  constexpr int kMaxIterations = 100;
  for (iterations = 0; r.cwiseAbs().maxCoeff() >= convergence; ++iterations) {
    if (iterations == kMaxIterations) throw ConvergenceError("the MP2 gradient's Z-vector equations did not converge");
    const Eigen::MatrixXd Ap = apply(p);
    const double alpha = rs / p.cwiseProduct(Ap).sum();
    z += alpha * p;
    r -= alpha * Ap;
    s = r.cwiseQuotient(delta);
    const double rs_next = r.cwiseProduct(s).sum();
    p = s + (rs_next / rs) * p;
    rs = rs_next;
  }
  return z;
}

}  // namespace

Mp2GradientDensities mp2_gradient_densities(const libint2::BasisSet& obs, const libint2::BasisSet& ri_aux,
                                            const ShellPairs& pairs, DensityFittedFock& jk, const Orbitals& orbitals,
                                            int nfrozen, double z_convergence) {
  const Eigen::MatrixXd& C = orbitals.C;
  const Eigen::VectorXd& eps = orbitals.eps;
  const Eigen::Index nmo = C.cols(), nocc = orbitals.nocc, nfz = nfrozen, o = nocc - nfz, v = nmo - nocc, ov = o * v;
  const auto naux = static_cast<Eigen::Index>(ri_aux.nbf());
  const Eigen::MatrixXd C_occ = C.leftCols(nocc), C_vir = C.rightCols(v);

  // (P|pq) in the MO basis; (P|ia) and c_ia^P = Σ_Q [J⁻¹]_PQ (Q|ia), row-major [P][i·v + a].
  const Eigen::MatrixXd metric = coulomb_metric(ri_aux);
  const RowMajorMatrix mo = mo_three_index(obs, ri_aux, pairs, metric, C);
  RowMajorMatrix raw(naux, ov);
  for (Eigen::Index P = 0; P < naux; ++P) {
    const Eigen::Map<const Eigen::MatrixXd> B(mo.row(P).data(), nmo, nmo);
    Eigen::Map<RowMajorMatrix>(raw.row(P).data(), o, v) = B.block(nfz, nocc, o, v);
  }
  RowMajorMatrix c = raw;
  CoulombFitting(metric).apply_inverse(c.data(), static_cast<std::size_t>(ov));

  // Amplitudes, column-major ov × ov and symmetric, so their storage is also [i][a][j][b].
  Eigen::MatrixXd integrals = raw.transpose() * c;
  integrals = 0.5 * (integrals + integrals.transpose()).eval();
  Eigen::MatrixXd t(ov, ov), T(ov, ov);
#pragma omp parallel for collapse(2)
  for (Eigen::Index j = 0; j < o; ++j)
    for (Eigen::Index b = 0; b < v; ++b)
      for (Eigen::Index i = 0; i < o; ++i)
        for (Eigen::Index a = 0; a < v; ++a)
          t(i * v + a, j * v + b) =
              integrals(i * v + a, j * v + b) / (eps(nfz + i) + eps(nfz + j) - eps(nocc + a) - eps(nocc + b));
#pragma omp parallel for collapse(2)
  for (Eigen::Index j = 0; j < o; ++j)
    for (Eigen::Index b = 0; b < v; ++b)
      for (Eigen::Index i = 0; i < o; ++i)
        for (Eigen::Index a = 0; a < v; ++a)
          T(i * v + a, j * v + b) = 2.0 * t(i * v + a, j * v + b) - t(i * v + b, j * v + a);

  Mp2GradientDensities out;
  out.e_mp2 = T.cwiseProduct(integrals).sum();

  // Unrelaxed P_ij and P_ab.
  const Eigen::Map<const RowMajorMatrix> t_rows(t.data(), o, v * ov), T_rows(T.data(), o, v * ov);
  const Eigen::MatrixXd P_act = -2.0 * t_rows * T_rows.transpose();
  Eigen::MatrixXd P_vir = Eigen::MatrixXd::Zero(v, v);
  for (Eigen::Index i = 0; i < o; ++i) {
    const Eigen::Map<const RowMajorMatrix> t_i(t.data() + i * v * ov, v, ov), T_i(T.data() + i * v * ov, v, ov);
    P_vir.noalias() += 2.0 * t_i * T_i.transpose();
  }

  out.gamma = c * T;
  out.metric = c * out.gamma.transpose();
  out.metric = 0.5 * (out.metric + out.metric.transpose()).eval();

  // L1_pi = 4 Σ_aP (P|pa) Γ_ia^P (i active), L2_pa = 4 Σ_iP (P|pi) Γ_ia^P, p every orbital.
  Eigen::MatrixXd L1 = Eigen::MatrixXd::Zero(nmo, o), L2 = Eigen::MatrixXd::Zero(nmo, v);
  for (Eigen::Index P = 0; P < naux; ++P) {
    const Eigen::Map<const Eigen::MatrixXd> B(mo.row(P).data(), nmo, nmo);
    const Eigen::Map<const RowMajorMatrix> gamma_P(out.gamma.row(P).data(), o, v);
    L1.noalias() += 4.0 * B.rightCols(v) * gamma_P.transpose();
    L2.noalias() += 4.0 * B.middleCols(nfz, o) * gamma_P;
  }

  // P in the MO basis: the MP2 blocks, then frozen–active from the SCF's response.
  Eigen::MatrixXd P = Eigen::MatrixXd::Zero(nmo, nmo);
  P.block(nfz, nfz, o, o) = P_act;
  P.block(nocc, nocc, v, v) = P_vir;
  Eigen::MatrixXd frozen_active(nfz, o);  // Z_fi = −X_fi / (ε_f − ε_i); X_if is zero
  for (Eigen::Index f = 0; f < nfz; ++f)
    for (Eigen::Index i = 0; i < o; ++i) {
      frozen_active(f, i) = -L1(f, i) / (eps(f) - eps(nfz + i));
      P(f, nfz + i) = P(nfz + i, f) = 0.5 * frozen_active(f, i);
    }

  // The orbital Lagrangian X_ak − X_ka and the Z-vector.
  const Eigen::MatrixXd G_unrelaxed = C.transpose() * fock_response(jk, C * P, C) * C;
  Eigen::MatrixXd lagrangian = G_unrelaxed.block(nocc, 0, v, nocc) - L2.topRows(nocc).transpose();
  lagrangian.rightCols(o) += L1.bottomRows(v);
  Eigen::MatrixXd delta(v, nocc);
  for (Eigen::Index k = 0; k < nocc; ++k)
    for (Eigen::Index a = 0; a < v; ++a) delta(a, k) = eps(nocc + a) - eps(k);
  const Eigen::MatrixXd z = solve_z_vector(jk, C_occ, C_vir, delta, -lagrangian, z_convergence, out.cphf_iterations);
  P.block(nocc, 0, v, nocc) = 0.5 * z;
  P.block(0, nocc, nocc, v) = 0.5 * z.transpose();
  out.relaxed = C * P * C.transpose();

  // W: the coefficients of S^x_pq, block by block (mp2_relaxed_density.hpp).
  Eigen::MatrixXd W = Eigen::MatrixXd::Zero(nmo, nmo);
  const Eigen::MatrixXd X_vir = 2.0 * eps.tail(v).asDiagonal() * P_vir + L2.bottomRows(v);
  W.block(nocc, nocc, v, v) = 0.25 * (X_vir + X_vir.transpose());
  const Eigen::MatrixXd X_act = 2.0 * eps.segment(nfz, o).asDiagonal() * P_act + L1.middleRows(nfz, o);
  W.block(nfz, nfz, o, o) = 0.25 * (X_act + X_act.transpose());
  for (Eigen::Index f = 0; f < nfz; ++f)
    for (Eigen::Index i = 0; i < o; ++i) W(f, nfz + i) = W(nfz + i, f) = 0.5 * frozen_active(f, i) * eps(nfz + i);
  const Eigen::MatrixXd W_vo = 0.5 * (L2.topRows(nocc).transpose() + z * eps.head(nocc).asDiagonal());
  W.block(nocc, 0, v, nocc) = W_vo;
  W.block(0, nocc, nocc, v) = W_vo.transpose();
  const Eigen::MatrixXd G_relaxed = C_occ.transpose() * fock_response(jk, C * P, C) * C_occ;
  W.topLeftCorner(nocc, nocc) += 0.5 * G_relaxed;
  out.energy_weighted = C * W * C.transpose();
  return out;
}

}  // namespace dfmp2
