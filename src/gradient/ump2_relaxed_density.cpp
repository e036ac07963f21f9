#include "src/gradient/ump2_relaxed_density.hpp"


#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "src/common/errors.hpp"
#include "src/gradient/ri_passes.hpp"
#include "src/integrals/density_fitting.hpp"

namespace dfmp2 {
namespace {

using RowMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using SpinMatrices = std::array<Eigen::MatrixXd, 2>;  // α, β

constexpr const char* kSpinName[2] = {"α", "β"};

// Elements of the largest amplitude block of the four loops: I or t of one occupied orbital k of
// one spin, with every active i of a spin, a of i's and b of k's.
std::size_t largest_amplitude_block(const std::array<Mp2GradientSizes, 2>& s) {
  return std::max({s[0].ov() * s[0].nvir(), s[1].ov() * s[1].nvir(), s[0].ov() * s[1].nvir(), s[1].ov() * s[0].nvir()});
}

// What the densities hold in the passes over the RI batches (the first holds each spin's (P|ia),
// the second its Γ_ia^P: the same size) and in the loops over the amplitudes.
RiGradientPhases ump2_gradient_phases(const std::array<Mp2GradientSizes, 2>& s, std::size_t batch_functions) {
  std::vector<PlannedBlock> passes_hold;
  RiGradientPhases ph;
  ph.amplitudes.ram("the RI metric, its fit and V_PQ", ri_fit_bytes(s[0].naux));
  for (int spin = 0; spin < 2; ++spin) {
    const std::size_t three_index = MemoryBudget::double_array_bytes(s[spin].naux * s[spin].ov());
    const std::string name = kSpinName[spin];
    passes_hold.push_back({"(P|ia), then Γ_ia^P, " + name, three_index});
    ph.amplitudes.ram("(P|ia), " + name, three_index);
    ph.amplitudes.ram("c_ia^P = J⁻¹ (P|ia), " + name, three_index);
    ph.amplitudes.ram("Γ_ia^P, " + name, three_index);
  }
  ph.amplitudes.ram("one occupied orbital's I and t", 2 * MemoryBudget::double_array_bytes(largest_amplitude_block(s)));
  ph.pass = ri_pass_plan(s[0], batch_functions, passes_hold);
  return ph;
}

// One spin's orbitals, split as the densities use them.
struct SpinBlocks {
  Eigen::Index nmo, nocc, nfrozen, active, nvir;
  Eigen::MatrixXd C, C_occ, C_vir;
  Eigen::VectorXd eps;
  Eigen::Index ov() const { return active * nvir; }
  double eps_active(Eigen::Index i) const { return eps(nfrozen + i); }
  double eps_virtual(Eigen::Index a) const { return eps(nocc + a); }
};

SpinBlocks spin_blocks(const SpinOrbitals& orbitals, std::size_t nfrozen) {
  const Eigen::Index nmo = orbitals.C.cols(), nocc = orbitals.nocc, nfz = static_cast<Eigen::Index>(nfrozen);
  return {nmo,         nocc, nfz, nocc - nfz, nmo - nocc, orbitals.C, orbitals.C.leftCols(nocc),
          orbitals.C.rightCols(nmo - nocc), orbitals.eps};
}

// One spin's unrelaxed MP2 density blocks, summed over the loops.
struct SpinDensity {
  Eigen::MatrixXd active, virtuals;  // P_ij, P_ab
};

// E_σσ, with its shares of P_ij, P_ab and Γ_ia^P of spin σ added, from (P|ia) and c_ia^P
// (row-major [P][i·v + a]), one occupied orbital k at a time: I_ia,kb = (ia|kb) by one GEMM, then
// t_ik^ab, row-major [i][a][b]. t is antisymmetric in a, b, so Σ_ic t_ik^ac t_ik^bc = (tᵀ t)_ab.
// This rank takes every size-th k from its rank: its shares are summed over the ranks afterwards.
// Adds its GEMMs' flops to `work`.
double same_spin_pairs(const SpinBlocks& x, Eigen::Index naux, const double* raw, const double* c, double* gamma,
                       SpinDensity& P, MemoryBudget& budget, const Communicator& comm, StageWork& work) {
  const Eigen::Index o = x.active, v = x.nvir, ov = x.ov();
  const Eigen::Map<const RowMajorMatrix> raw_rows(raw, naux, ov), c_rows(c, naux, ov);
  Eigen::Map<RowMajorMatrix> gamma_rows(gamma, naux, ov);
  const auto block = static_cast<std::size_t>(ov * v);
  LargeArray<double> I_k = budget.allocate<double>(block, "one occupied orbital's I_ia,kb");
  LargeArray<double> t_k = budget.allocate<double>(block, "one occupied orbital's t_ik^ab");
  Eigen::Map<RowMajorMatrix> I(I_k.data(), ov, v), t(t_k.data(), ov, v);
  const Eigen::Map<const RowMajorMatrix> t_rows(t_k.data(), o, v * v);  // rows i of [a][b], for P_ij
  double e = 0.0;
  Eigen::Index mine = 0;
  for (Eigen::Index k = comm.rank(); k < o; k += comm.size(), ++mine) {
    const auto c_k = c_rows.middleCols(k * v, v);
    I.noalias() = raw_rows.transpose() * c_k;
#pragma omp parallel for schedule(static)
    for (Eigen::Index i = 0; i < o; ++i) {
      const auto I_i = I.middleRows(i * v, v);
      auto t_i = t.middleRows(i * v, v);
      for (Eigen::Index a = 0; a < v; ++a)
        for (Eigen::Index b = 0; b < v; ++b)
          t_i(a, b) = (I_i(a, b) - I_i(b, a)) /
                      (x.eps_active(i) + x.eps_active(k) - x.eps_virtual(a) - x.eps_virtual(b));
    }
    e += 0.5 * t.cwiseProduct(I).sum();
    P.active.noalias() -= 0.5 * t_rows * t_rows.transpose();
    P.virtuals.noalias() += 0.5 * t.transpose() * t;
    gamma_rows.noalias() += c_k * t.transpose();  // Γ_ia^P += Σ_b t_ik^ab c_kb^P
  }
  // Per k: I and Γ 2 ov·v·naux each, P_ij 2 o²·v², P_ab 2 v²·ov.
  work.flops_fp64 += double(mine) * 2.0 * double(ov) * double(v) * (2.0 * double(naux) + double(o) + double(v));
  return e;
}

// The opposite-spin pairs, one occupied orbital k of spin `outer` at a time with every active i of
// spin `inner`: I_ia,kb = (ia|kb) by one GEMM, then t_ik^ab = I_ia,kb / D_ik^ab, row-major [i][a][b].
// Adds −Σ_kab t_ik^ab t_jk^ab to inner's P_ij and Σ_kia t_ik^ab t_ik^ac to outer's P_bc. With
// Γ arrays (both or neither), also Σ_kb t_ik^ab c_kb^P to inner's Γ_ia^P and Σ_ia t_ik^ab c_ia^P
// to outer's Γ_kb^P, and returns E_αβ. The ranks share the k as same_spin_pairs'. Adds its GEMMs'
// flops to `work`.
double opposite_spin_pairs(const SpinBlocks& inner, const SpinBlocks& outer, Eigen::Index naux, const double* raw_inner,
                           const double* c_inner, const double* c_outer, SpinDensity& P_inner, SpinDensity& P_outer,
                           double* gamma_inner, double* gamma_outer, MemoryBudget& budget, const Communicator& comm,
                           StageWork& work) {
  const Eigen::Index o = inner.active, va = inner.nvir, ov = inner.ov(), vb = outer.nvir;
  const Eigen::Map<const RowMajorMatrix> raw_rows(raw_inner, naux, ov), c_rows(c_inner, naux, ov),
      c_outer_rows(c_outer, naux, outer.ov());
  const auto block = static_cast<std::size_t>(ov * vb);
  LargeArray<double> I_k = budget.allocate<double>(block, "one occupied orbital's I_ia,kb");
  LargeArray<double> t_k = budget.allocate<double>(block, "one occupied orbital's t_ik^ab");
  Eigen::Map<RowMajorMatrix> I(I_k.data(), ov, vb), t(t_k.data(), ov, vb);
  const Eigen::Map<const RowMajorMatrix> t_rows(t_k.data(), o, va * vb);
  double e = 0.0;
  Eigen::Index mine = 0;
  for (Eigen::Index k = comm.rank(); k < outer.active; k += comm.size(), ++mine) {
    const auto c_k = c_outer_rows.middleCols(k * vb, vb);
    I.noalias() = raw_rows.transpose() * c_k;
#pragma omp parallel for schedule(static)
    for (Eigen::Index i = 0; i < o; ++i)
      for (Eigen::Index a = 0; a < va; ++a)
        for (Eigen::Index b = 0; b < vb; ++b)
          t(i * va + a, b) = I(i * va + a, b) /
                             (inner.eps_active(i) + outer.eps_active(k) - inner.eps_virtual(a) - outer.eps_virtual(b));
    P_inner.active.noalias() -= t_rows * t_rows.transpose();
    P_outer.virtuals.noalias() += t.transpose() * t;
    if (gamma_inner == nullptr) continue;
    e += t.cwiseProduct(I).sum();
    Eigen::Map<RowMajorMatrix>(gamma_inner, naux, ov).noalias() += c_k * t.transpose();
    Eigen::Map<RowMajorMatrix>(gamma_outer, naux, outer.ov()).middleCols(k * vb, vb).noalias() += c_rows * t;
  }
  // Per k: I 2 ov·vb·naux (and both Γ as much again each), P_ij 2 o²·va·vb, P_bc 2 vb²·ov.
  const double gammas = gamma_inner == nullptr ? 0.0 : 2.0;
  work.flops_fp64 += double(mine) * 2.0 * double(ov) * double(vb) *
                     ((1.0 + gammas) * double(naux) + double(o) + double(vb));
  return e;
}

double spin_dot(const SpinMatrices& x, const SpinMatrices& y) {
  return x[0].cwiseProduct(y[0]).sum() + x[1].cwiseProduct(y[1]).sum();
}

// The largest |element| of either spin (a spin may have no occupied orbital).
double largest_element(const SpinMatrices& x) {
  double largest = 0.0;
  for (const Eigen::MatrixXd& m : x)
    if (m.size() > 0) largest = std::max(largest, m.cwiseAbs().maxCoeff());
  return largest;
}

struct SpinZVector {
  SpinMatrices z;
  SpinMatrices occupied_response;  // C_oᵀ G^σ(Z) C_o of each spin, for W
};

// Solves (Δ + A) z = b for both spins at once by conjugate gradients preconditioned with Δ⁻¹,
// Δ_ak = ε_a − ε_k > 0 and (A z)^σ = C_vᵀ G^σ(Z) C_o (positive definite for a stable UHF
// solution), until every residual element is below `convergence`. One J/K build per iteration
// takes both spins' left/right factors (C_v z^σ, C_o): J of L Rᵀ is that of its symmetric half,
// ½ Z^σ, and K(Z^σ) = K(L Rᵀ) + K(L Rᵀ)ᵀ. Each build's occupied blocks are summed with z's own
// coefficients, as the RHF solver does. Over MPI each rank builds from its factors and the
// products are summed; root's residual decides for every rank.
SpinZVector solve_spin_z_vector(DensityFittedFock& jk, Communicator& comm, const std::array<SpinBlocks, 2>& spins,
                                const SpinMatrices& delta, const SpinMatrices& b, double convergence, int& iterations,
                                const Progress& progress) {
  SpinMatrices occupied_block;
  const auto apply = [&](const SpinMatrices& z) {
    const SpinMatrices left{spins[0].C_vir * z[0], spins[1].C_vir * z[1]};
    const auto n = spins[0].C.rows();
    SpinMatrices J{Eigen::MatrixXd(n, n), Eigen::MatrixXd(n, n)}, K{Eigen::MatrixXd(n, n), Eigen::MatrixXd(n, n)};
    const kernels::DensityFactors densities[2] = {
        {left[0].data(), spins[0].C_occ.data(), static_cast<std::size_t>(left[0].cols())},
        {left[1].data(), spins[1].C_occ.data(), static_cast<std::size_t>(left[1].cols())}};
    double* J_data[2] = {J[0].data(), J[1].data()};
    double* K_data[2] = {K[0].data(), K[1].data()};
    jk.coulomb_exchange(densities, J_data, K_data, kernels::Precision::fp64);
    const Eigen::MatrixXd J_total = 2.0 * (J[0] + J[1]);
    SpinMatrices Az;
    for (int s = 0; s < 2; ++s) {
      Eigen::MatrixXd F_occ = (J_total - K[s] - K[s].transpose()) * spins[s].C_occ;
      comm.allreduce_sum(F_occ.data(), static_cast<std::size_t>(F_occ.size()));
      occupied_block[s] = spins[s].C_occ.transpose() * F_occ;
      Az[s] = delta[s].cwiseProduct(z[s]) + spins[s].C_vir.transpose() * F_occ;
    }
    return Az;
  };
  const auto precondition = [&](const SpinMatrices& r) {
    return SpinMatrices{r[0].cwiseQuotient(delta[0]), r[1].cwiseQuotient(delta[1])};
  };
  SpinZVector out{precondition(b), {}};
  SpinMatrices& z = out.z;
  SpinMatrices r = apply(z);
  for (int s = 0; s < 2; ++s) r[s] = b[s] - r[s];
  out.occupied_response = occupied_block;
  SpinMatrices p = precondition(r);
  double rs = spin_dot(r, p);
  constexpr int kMaxIterations = 100;
  const auto converged = [&] {
    double residual = largest_element(r);
    comm.broadcast(&residual, 1, 0);
    report_z_vector_iteration(progress, iterations, residual);
    return residual < convergence;
  };
  for (iterations = 0; !converged(); ++iterations) {
    if (iterations == kMaxIterations) throw ConvergenceError("the MP2 gradient's Z-vector equations did not converge");
    const SpinMatrices Ap = apply(p);
    const double alpha = rs / spin_dot(p, Ap);
    for (int s = 0; s < 2; ++s) {
      z[s] += alpha * p[s];
      out.occupied_response[s] += alpha * occupied_block[s];
      r[s] -= alpha * Ap[s];
    }
    const SpinMatrices next = precondition(r);
    const double rs_next = spin_dot(r, next);
    for (int s = 0; s < 2; ++s) p[s] = next[s] + (rs_next / rs) * p[s];
    rs = rs_next;
  }
  return out;
}

}  // namespace

Mp2GradientPlan plan_ump2_gradient(const libint2::BasisSet& ri_aux, const Mp2GradientSizes& alpha,
                                   const Mp2GradientSizes& beta, std::size_t ram_bytes, int ranks) {
  const std::array<Mp2GradientSizes, 2> spins{alpha, beta};
  Mp2GradientPlan p;
  p.sizes = alpha;
  p.beta = beta;
  p.ram_rows = alpha.naux;  // UHF's three-index arrays all in memory
  p.batch_functions = ri_batch_functions(ri_aux, alpha, ram_bytes, ranks,
                                         [&](std::size_t functions) { return ump2_gradient_phases(spins, functions); });
  p.densities = ump2_gradient_phases(spins, p.batch_functions).peak();
  return p;
}

Ump2GradientDensities ump2_gradient_densities(const libint2::BasisSet& obs, const libint2::BasisSet& ri_aux,
                                              const ShellPairs& pairs, DensityFittedFock& jk,
                                              const Orbitals& orbitals, const Mp2GradientPlan& plan,
                                              MemoryBudget& budget, Communicator& comm, double z_convergence,
                                              Progress& progress) {
  // The plan's sizes with the orbitals' nmo: linear dependencies can only have removed virtuals,
  // so every array is at most as planned.
  std::array<Mp2GradientSizes, 2> s{plan.sizes, plan.beta.value_or(plan.sizes)};
  const auto nmo = static_cast<std::size_t>(orbitals.C.cols());
  for (int spin = 0; spin < 2; ++spin)
    if (!orbitals.unrestricted() || !plan.beta || nmo > s[spin].nmo ||
        static_cast<std::size_t>(orbitals.spin(spin).nocc) != s[spin].nocc ||
        static_cast<std::size_t>(orbitals.C.rows()) != s[spin].nbf || std::size_t(ri_aux.nbf()) != s[spin].naux ||
        pairs.layout.size() != s[spin].stored || s[spin].nfrozen != plan.sizes.nfrozen)
      throw std::logic_error("the UHF MP2 gradient's plan is not for these orbitals");
  for (Mp2GradientSizes& spin : s) spin.nmo = nmo;
  const std::array<SpinBlocks, 2> x{spin_blocks(orbitals, s[0].nfrozen), spin_blocks(*orbitals.beta, s[1].nfrozen)};
  const auto naux = static_cast<Eigen::Index>(ri_aux.nbf());
  const Eigen::Index nfz = x[0].nfrozen, m = x[0].nmo - nfz;

  Ump2GradientDensities out;
  const StageWork jk_before = jk.work();
  const auto fit_memory = budget.reserve(ri_fit_bytes(s[0].naux), "the RI metric, its fit and V_PQ");
  const Eigen::MatrixXd metric = coulomb_metric(ri_aux);
  const RiPasses passes{obs, ri_aux, pairs, metric, s[0], plan.batch_functions, budget, comm,
                        [&progress](double done) { progress.fraction(done); }};

  // Each spin's (P|ia) and c_ia^P = Σ_Q [J⁻¹]_PQ (Q|ia), row-major [P][i·v + a].
  std::array<LargeArray<double>, 2> raw;
  std::vector<RiTransform> active_virtual;
  for (int spin = 0; spin < 2; ++spin) {
    raw[spin] = budget.allocate<double>(s[spin].naux * s[spin].ov(), std::string("(P|ia), ") + kSpinName[spin]);
    if (comm.size() > 1) std::fill(raw[spin].begin(), raw[spin].end(), 0.0);  // other ranks' rows, for the sum
    active_virtual.push_back({x[spin].C.middleCols(nfz, x[spin].active), x[spin].C_vir});
  }
  progress.begin("MP2 gradient: (P|ia), α and β (batches of RI shells)");
  passes.for_each_function(active_virtual,
                           [&](std::size_t spin, Eigen::Index P, const Eigen::Map<const Eigen::MatrixXd>& B) {
                             Eigen::Map<RowMajorMatrix>(raw[spin].data() + P * x[spin].ov(), x[spin].active,
                                                        x[spin].nvir) = B;
                           },
                           out.work);
  for (LargeArray<double>& spin : raw) comm.allreduce_sum(spin.data(), spin.size());
  std::array<SpinDensity, 2> P_mp2;
  for (int spin = 0; spin < 2; ++spin) {
    out.gamma[spin] = RowStore(s[spin].naux, s[spin].ov(), s[spin].naux, budget, nullptr,
                               std::string("Γ_ia^P, ") + kSpinName[spin]);
    std::fill(out.gamma[spin].ram(), out.gamma[spin].ram() + s[spin].naux * s[spin].ov(), 0.0);
    P_mp2[spin] = {Eigen::MatrixXd::Zero(x[spin].active, x[spin].active),
                   Eigen::MatrixXd::Zero(x[spin].nvir, x[spin].nvir)};
  }
  {
    std::array<LargeArray<double>, 2> c;
    const CoulombFitting fit(metric);
    for (int spin = 0; spin < 2; ++spin) {
      c[spin] = budget.allocate<double>(s[spin].naux * s[spin].ov(),
                                        std::string("c_ia^P = J⁻¹ (P|ia), ") + kSpinName[spin]);
      std::copy(raw[spin].begin(), raw[spin].end(), c[spin].begin());
      fit.apply_inverse(c[spin].data(), s[spin].ov());
      out.work.flops_fp64 += 2.0 * fit.flops(s[spin].ov());  // J⁻¹: the fit and its transpose
    }
    progress.message("MP2 gradient: amplitudes, P and Γ (αα, ββ, αβ)");
    std::array<double, 2> e_same{};
    for (int spin = 0; spin < 2; ++spin)
      e_same[spin] = same_spin_pairs(x[spin], naux, raw[spin].data(), c[spin].data(), out.gamma[spin].ram(),
                                     P_mp2[spin], budget, comm, out.work);
    // E_αβ, P^α_ij, P^β_ab and both Γ with k of β; P^β_ij and P^α_ab again with k of α.
    double e_opposite = opposite_spin_pairs(x[0], x[1], naux, raw[0].data(), c[0].data(), c[1].data(), P_mp2[0],
                                            P_mp2[1], out.gamma[0].ram(), out.gamma[1].ram(), budget, comm, out.work);
    opposite_spin_pairs(x[1], x[0], naux, raw[1].data(), c[1].data(), c[0].data(), P_mp2[1], P_mp2[0], nullptr,
                        nullptr, budget, comm, out.work);
    comm.allreduce_sum(e_same.data(), e_same.size());
    comm.allreduce_sum(&e_opposite, 1);
    for (int spin = 0; spin < 2; ++spin) {
      comm.allreduce_sum(out.gamma[spin].ram(), s[spin].naux * s[spin].ov());
      for (Eigen::MatrixXd* m : {&P_mp2[spin].active, &P_mp2[spin].virtuals})
        comm.allreduce_sum(m->data(), static_cast<std::size_t>(m->size()));
    }
    out.energy.aa = e_same[0];
    out.energy.bb = e_same[1];
    out.energy.ss = e_same[0] + e_same[1];
    out.energy.os = e_opposite;
    out.metric = metric_lagrangian(naux,
                                   {{c[0].data(), out.gamma[0].ram(), x[0].ov()},
                                    {c[1].data(), out.gamma[1].ram(), x[1].ov()}},
                                   comm, out.work);
  }
  raw = {};

  // L1_pi = 2 Σ_aP (P|pa) Γ_ia^P = 2 [Cᵀ Σ_P (P|μν) C_v Γ^Pᵀ]_pi (i active) and
  // L2_pa = 2 Σ_iP (P|pi) Γ_ia^P = 2 [Cᵀ Σ_P (P|μν) C_act Γ^P]_pa, p every orbital of the spin.
  progress.begin("MP2 gradient: Σ (P|μν) Γ^P and the Lagrangian, α and β (batches of RI shells)");
  std::vector<Eigen::MatrixXd> sums = passes.sum_of_products(
      {m, m},
      [&](std::size_t spin, Eigen::Index P, double* R) {
        const SpinBlocks& b = x[spin];
        const Eigen::Map<const RowMajorMatrix> gamma_P(out.gamma[spin].ram() + P * b.ov(), b.active, b.nvir);
        Eigen::Map<Eigen::MatrixXd> R_P(R, b.C.rows(), m);
        R_P.leftCols(b.active).noalias() = b.C_vir * gamma_P.transpose();
        R_P.rightCols(b.nvir).noalias() = b.C.middleCols(nfz, b.active) * gamma_P;
      },
      {4.0 * double(x[0].C.rows()) * double(x[0].ov()), 4.0 * double(x[1].C.rows()) * double(x[1].ov())}, out.work);
  SpinMatrices L1, L2;
  for (int spin = 0; spin < 2; ++spin) {
    comm.allreduce_sum(sums[spin].data(), static_cast<std::size_t>(sums[spin].size()));
    L1[spin] = 2.0 * x[spin].C.transpose() * sums[spin].leftCols(x[spin].active);
    L2[spin] = 2.0 * x[spin].C.transpose() * sums[spin].rightCols(x[spin].nvir);
  }

  // P in the MO basis, spin by spin: the MP2 blocks, then frozen–active from the SCF's response.
  SpinMatrices P, frozen_active;
  for (int spin = 0; spin < 2; ++spin) {
    const SpinBlocks& b = x[spin];
    P[spin] = Eigen::MatrixXd::Zero(b.nmo, b.nmo);
    P[spin].block(nfz, nfz, b.active, b.active) = P_mp2[spin].active;
    P[spin].block(b.nocc, b.nocc, b.nvir, b.nvir) = P_mp2[spin].virtuals;
    frozen_active[spin].resize(nfz, b.active);  // Z_fi = −X_fi / (ε_f − ε_i); X_if is zero
    for (Eigen::Index f = 0; f < nfz; ++f)
      for (Eigen::Index i = 0; i < b.active; ++i) {
        frozen_active[spin](f, i) = -L1[spin](f, i) / (b.eps(f) - b.eps_active(i));
        P[spin](f, nfz + i) = P[spin](nfz + i, f) = 0.5 * frozen_active[spin](f, i);
      }
  }

  // C^σᵀ G^σ(P) C_o^σ: only its occupied columns are used, its vo block here, its oo block in W.
  progress.message("MP2 gradient: the orbital Lagrangian's J/K, then the Z-vector");
  SpinMatrices G_unrelaxed;
  {
    std::array<Eigen::MatrixXd, 2> alpha = jk.coulomb_exchange_of_symmetric(x[0].C, P[0]),
                                   beta = jk.coulomb_exchange_of_symmetric(x[1].C, P[1]);
    for (Eigen::MatrixXd* m : {&alpha[0], &alpha[1], &beta[0], &beta[1]})  // this rank's Q, summed
      comm.allreduce_sum(m->data(), static_cast<std::size_t>(m->size()));
    const Eigen::MatrixXd J_total = alpha[0] + beta[0];
    G_unrelaxed[0] = x[0].C.transpose() * (J_total - alpha[1]) * x[0].C_occ;
    G_unrelaxed[1] = x[1].C.transpose() * (J_total - beta[1]) * x[1].C_occ;
  }
  // The Z-vector equations' right-hand sides, −(X_ak − X_ka), and denominators.
  SpinMatrices rhs, delta;
  for (int spin = 0; spin < 2; ++spin) {
    const SpinBlocks& b = x[spin];
    rhs[spin] = L2[spin].topRows(b.nocc).transpose() - 2.0 * G_unrelaxed[spin].bottomRows(b.nvir);
    rhs[spin].rightCols(b.active) -= L1[spin].bottomRows(b.nvir);
    delta[spin].resize(b.nvir, b.nocc);
    for (Eigen::Index k = 0; k < b.nocc; ++k)
      for (Eigen::Index a = 0; a < b.nvir; ++a) delta[spin](a, k) = b.eps_virtual(a) - b.eps(k);
  }
  const SpinZVector solution =
      solve_spin_z_vector(jk, comm, x, delta, rhs, z_convergence, out.cphf_iterations, progress);

  // W^σ: the coefficients of S^x_pq, block by block, as the RHF densities' with X^σ.
  out.energy_weighted = Eigen::MatrixXd::Zero(x[0].C.rows(), x[0].C.rows());
  for (int spin = 0; spin < 2; ++spin) {
    const SpinBlocks& b = x[spin];
    const Eigen::MatrixXd& z = solution.z[spin];
    P[spin].block(b.nocc, 0, b.nvir, b.nocc) = 0.5 * z;
    P[spin].block(0, b.nocc, b.nocc, b.nvir) = 0.5 * z.transpose();
    out.relaxed[spin] = b.C * P[spin] * b.C.transpose();

    Eigen::MatrixXd W = Eigen::MatrixXd::Zero(b.nmo, b.nmo);
    const Eigen::MatrixXd X_vir =
        2.0 * b.eps.tail(b.nvir).asDiagonal() * P_mp2[spin].virtuals + L2[spin].bottomRows(b.nvir);
    W.block(b.nocc, b.nocc, b.nvir, b.nvir) = 0.25 * (X_vir + X_vir.transpose());
    const Eigen::MatrixXd X_act =
        2.0 * b.eps.segment(nfz, b.active).asDiagonal() * P_mp2[spin].active + L1[spin].middleRows(nfz, b.active);
    W.block(nfz, nfz, b.active, b.active) = 0.25 * (X_act + X_act.transpose());
    for (Eigen::Index f = 0; f < nfz; ++f)
      for (Eigen::Index i = 0; i < b.active; ++i)
        W(f, nfz + i) = W(nfz + i, f) = 0.5 * frozen_active[spin](f, i) * b.eps_active(i);
    const Eigen::MatrixXd W_vo = 0.5 * (L2[spin].topRows(b.nocc).transpose() + z * b.eps.head(b.nocc).asDiagonal());
    W.block(b.nocc, 0, b.nvir, b.nocc) = W_vo;
    W.block(0, b.nocc, b.nocc, b.nvir) = W_vo.transpose();
    // The occupied block of C^σᵀ G^σ(P) C^σ for the relaxed P: the MP2 blocks' and the Z-vector's
    // (P_ak = ½ z_ak, so G^σ of it is half the solver's G^σ(Z)).
    W.topLeftCorner(b.nocc, b.nocc) +=
        G_unrelaxed[spin].topRows(b.nocc) + 0.5 * solution.occupied_response[spin];
    out.energy_weighted += b.C * W * b.C.transpose();
  }
  // The J/K builds of the Lagrangian and the Z-vector.
  out.work.flops_fp64 += jk.work().flops_fp64 - jk_before.flops_fp64;
  return out;
}

}  // namespace dfmp2
