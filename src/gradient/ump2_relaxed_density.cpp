#include "src/gradient/ump2_relaxed_density.hpp"


#include <algorithm>
#include <array>
#include <span>
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

// Elements of one occupied orbital k's arrays, the larger spin's of k: I (the same-spin or the
// opposite-spin pairs', one at a time), t of the same-spin pairs, t of the opposite-spin pairs,
// with every active i of a spin, a of i's and b of k's.
struct AmplitudeBlocks {
  std::size_t I = 0, same = 0, opposite = 0;
};
AmplitudeBlocks amplitude_blocks(const std::array<Mp2GradientSizes, 2>& s) {
  AmplitudeBlocks out;
  for (int k = 0; k < 2; ++k) {
    out.same = std::max(out.same, s[k].ov() * s[k].nvir());
    out.opposite = std::max(out.opposite, s[1 - k].ov() * s[k].nvir());
  }
  out.I = std::max(out.same, out.opposite);
  return out;
}

// What the densities hold in the passes over the RI batches (the first holds each spin's B_ia^P,
// the second its Γ_ia^P: the same size), in the loops over the amplitudes and in the contraction,
// with `ram_rows` rows P of each in memory and the rest on disk, and p's jk_terms, jk_layout and
// ri_largest_shell.
RiGradientPhases ump2_gradient_phases(const std::array<Mp2GradientSizes, 2>& s, std::size_t batch_functions,
                                      std::size_t ram_rows, const Mp2GradientPlan& p) {
  const std::size_t naux = s[0].naux, disk_rows = naux - ram_rows;
  std::vector<PlannedBlock> passes_hold, contraction_holds;
  RiGradientPhases ph;
  ph.amplitudes.ram("the RI metric, its fit and V_PQ", ri_fit_bytes(naux));
  for (int spin = 0; spin < 2; ++spin) {
    const std::size_t in_ram = MemoryBudget::double_array_bytes(ram_rows * s[spin].ov()),
                      on_disk = sizeof(double) * disk_rows * s[spin].ov();
    const std::string name = kSpinName[spin];
    passes_hold.push_back({"B_ia^P, then Γ_ia^P, " + name, in_ram});
    if (disk_rows > 0) passes_hold.push_back({"B_ia^P's other rows, then Γ_ia^P's, " + name, on_disk, true});
    ph.amplitudes.ram("B_ia^P = M (P|ia), " + name, in_ram);
    ph.amplitudes.ram("Γ_ia^P, " + name, in_ram);
    ph.amplitudes.disk("B_ia^P's other rows, " + name, on_disk);
    ph.amplitudes.disk("Γ_ia^P's other rows, " + name, on_disk);
    contraction_holds.push_back({"Γ_ia^P, " + name, in_ram});
    if (disk_rows > 0) contraction_holds.push_back({"Γ_ia^P's other rows, " + name, on_disk, true});
    ph.amplitudes.read_bytes += 2 * on_disk;  // each orbital k reads both spins' B twice
  }
  if (disk_rows > 0) {
    ph.amplitudes.ram("the buffers B_ia^P's rows on disk are read into",
                      MemoryBudget::double_array_bytes(
                          2 * ri_read_buffer_elements(naux, std::max(s[0].ov(), s[1].ov()), disk_rows)));
    ph.amplitudes.read_per = "occupied orbital k";
  }
  const AmplitudeBlocks blocks = amplitude_blocks(s);
  ph.amplitudes.ram("one occupied orbital's I, same-spin t and opposite-spin t",
                    MemoryBudget::double_array_bytes(blocks.I) + MemoryBudget::double_array_bytes(blocks.same) +
                        MemoryBudget::double_array_bytes(blocks.opposite));
  ph.amplitudes.ram("one occupied orbital's B_kb^P and Γ_kb^P",
                    MemoryBudget::double_array_bytes(2 * naux * std::max(s[0].nvir(), s[1].nvir())));
  ph.pass = ri_pass_plan(s[0], batch_functions, passes_hold);
  ph.add_contraction(contraction_holds, s[0], p);
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

// What the loops over the amplitudes sum: E_αα, E_ββ, E_αβ, each spin's P_ij and P_ab, and V's
// inner sum Σ B Γ'ᵀ (metric_lagrangian).
struct SpinAmplitudes {
  std::array<double, 2> e_same{};
  double e_opposite = 0.0;
  std::array<SpinDensity, 2> P;
  RowMajorMatrix V_inner;
};

// The pairs with one occupied orbital k of spin σ at a time (this rank's every size-th): the
// same-spin ones with every active i of σ, I_ia,kb = Σ_P B_ia^P B_kb^P, t_ik^ab row-major [i][a][b]
// (antisymmetric in a, b, so Σ_ic t_ik^ac t_ik^bc = (tᵀ t)_ab), and the opposite-spin ones with
// every active I of the other spin, I_IA,kb likewise, t_Ik^Ab = I_IA,kb / D; their shares of E (E_αβ
// from the k of β), of σ's P_ab and both spins' P_ij; then Γ's columns of k, complete with it,
// Γ_kb^P = Σ_Q M_QP (Σ_ia B_ia^Q t_ik^ab + Σ_IA B_IA^Q t_Ik^Ab) (t_ik^ab = t_ki^ba), written to σ's
// store. Each reads both spins' B twice, in blocks of rows: for I, then for Γ. amplitudes: I (the
// larger of the two) and the two t, as `blocks` counts them; factors: k's B_kb and Γ'_kb (naux × v
// each). Adds its GEMMs' flops to `work`.
void pairs_of_occupied(int sigma, const std::array<SpinBlocks, 2>& x, const CoulombFitting& fit,
                       const std::array<RowStore, 2>& B, RowStore& gamma, std::span<double> buffer,
                       std::span<double> next_buffer, const AmplitudeBlocks& blocks, double* amplitudes,
                       double* factors, SpinAmplitudes& out, const Communicator& comm, StageWork& work) {
  const SpinBlocks &k_spin = x[sigma], &other = x[1 - sigma];
  const Eigen::Index v = k_spin.nvir, naux = static_cast<Eigen::Index>(B[0].rows());
  const Eigen::Index ov = k_spin.ov(), ov_other = other.ov(), o = k_spin.active, o_other = other.active;
  double* const I_data = amplitudes;
  double* const t_same_data = I_data + blocks.I;
  double* const t_opposite_data = t_same_data + blocks.same;
  Eigen::Map<RowMajorMatrix> B_k(factors, naux, v), gamma_k(factors + naux * v, naux, v);
  Eigen::Map<RowMajorMatrix> t(t_same_data, ov, v), t_other(t_opposite_data, ov_other, v);
  // I_ia,kb of spin `of`'s i (ov_of = its o·v) with this k: Σ over blocks of rows P of B[of]ᵀ B_k.
  const auto integrals = [&](int of, Eigen::Index ov_of) {
    Eigen::Map<RowMajorMatrix> I(I_data, ov_of, v);
    B[of].for_each_block(buffer, next_buffer, [&](std::size_t first_P, std::size_t count, const double* data) {
      assign_or_add(I,
                    Eigen::Map<const RowMajorMatrix>(data, static_cast<Eigen::Index>(count), ov_of).transpose() *
                        B_k.middleRows(static_cast<Eigen::Index>(first_P), static_cast<Eigen::Index>(count)),
                    first_P == 0);
    });
    return I;
  };
  double mine = 0.0;
  for (Eigen::Index k = comm.rank(); k < o; k += comm.size(), ++mine) {
    B[sigma].read(0, B[sigma].rows(), static_cast<std::size_t>(k * v), static_cast<std::size_t>(v), B_k.data(),
                  static_cast<std::size_t>(v));
    {
      const Eigen::Map<RowMajorMatrix> I = integrals(sigma, ov);
#pragma omp parallel for schedule(static)
      for (Eigen::Index i = 0; i < o; ++i) {
        const auto I_i = I.middleRows(i * v, v);
        auto t_i = t.middleRows(i * v, v);
        for (Eigen::Index a = 0; a < v; ++a)
          for (Eigen::Index b = 0; b < v; ++b)
            t_i(a, b) = (I_i(a, b) - I_i(b, a)) /
                        (k_spin.eps_active(i) + k_spin.eps_active(k) - k_spin.eps_virtual(a) - k_spin.eps_virtual(b));
      }
      out.e_same[sigma] += 0.5 * t.cwiseProduct(I).sum();
      const Eigen::Map<const RowMajorMatrix> t_rows(t_same_data, o, v * v);  // rows i of [a][b], for P_ij
      out.P[sigma].active.noalias() -= 0.5 * t_rows * t_rows.transpose();
      out.P[sigma].virtuals.noalias() += 0.5 * t.transpose() * t;
    }
    {
      const Eigen::Index va = other.nvir;
      const Eigen::Map<RowMajorMatrix> I = integrals(1 - sigma, ov_other);
#pragma omp parallel for schedule(static)
      for (Eigen::Index i = 0; i < o_other; ++i)
        for (Eigen::Index a = 0; a < va; ++a)
          for (Eigen::Index b = 0; b < v; ++b)
            t_other(i * va + a, b) = I(i * va + a, b) / (other.eps_active(i) + k_spin.eps_active(k) -
                                                          other.eps_virtual(a) - k_spin.eps_virtual(b));
      if (sigma == 1) out.e_opposite += t_other.cwiseProduct(I).sum();
      const Eigen::Map<const RowMajorMatrix> t_rows(t_opposite_data, o_other, va * v);
      out.P[1 - sigma].active.noalias() -= t_rows * t_rows.transpose();
      out.P[sigma].virtuals.noalias() += t_other.transpose() * t_other;
    }
    // Γ'_kb = Σ_ia B_ia t_ik^ab + Σ_IA B_IA t_Ik^Ab (each block of rows P of Γ' set by the first
    // sum, added to by the second), V's inner sum, then Γ_kb = Mᵀ Γ'_kb.
    const std::array<const Eigen::Map<RowMajorMatrix>*, 2> amplitudes_by_spin{sigma == 0 ? &t : &t_other,
                                                                             sigma == 0 ? &t_other : &t};
    for (const int of : {sigma, 1 - sigma})
      B[of].for_each_block(buffer, next_buffer, [&](std::size_t first_P, std::size_t count, const double* data) {
        const Eigen::Map<RowMajorMatrix>& t_of = *amplitudes_by_spin[static_cast<std::size_t>(of)];
        assign_or_add(gamma_k.middleRows(static_cast<Eigen::Index>(first_P), static_cast<Eigen::Index>(count)),
                      Eigen::Map<const RowMajorMatrix>(data, static_cast<Eigen::Index>(count), t_of.rows()) * t_of,
                      of == sigma);
      });
    out.V_inner.noalias() += B_k * gamma_k.transpose();
    fit.apply_transpose(gamma_k.data(), static_cast<std::size_t>(v));
    gamma.write(0, gamma.rows(), static_cast<std::size_t>(k * v), static_cast<std::size_t>(v), gamma_k.data(),
                static_cast<std::size_t>(v));
  }
  // Per k: the two I and Γ', 4 (ov + ov_other)·v·naux; V, 2 naux²·v; the same-spin P_ij and P_ab,
  // 2 o²·v² and 2 v²·ov; the opposite-spin ones, 2 o_other²·va·v and 2 v²·ov_other; Mᵀ on Γ'.
  const double n = double(naux), vv = double(v);
  work.flops_fp64 += mine * (4.0 * double(ov + ov_other) * vv * n + 2.0 * n * n * vv +
                             2.0 * double(o) * double(o) * vv * vv + 2.0 * vv * vv * double(ov) +
                             2.0 * double(o_other) * double(ov_other) * vv + 2.0 * vv * vv * double(ov_other) +
                             fit.flops(static_cast<std::size_t>(v)));
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
                                   const Mp2GradientSizes& beta, const SeparableTermSizes& jk_terms,
                                   std::size_t ram_bytes, int ranks) {
  const std::array<Mp2GradientSizes, 2> spins{alpha, beta};
  Mp2GradientPlan p;
  p.sizes = alpha;
  p.beta = beta;
  const std::size_t ri_shell = largest_shell(ri_aux);
  p.jk_terms = jk_terms;
  p.jk_layout.ram_rows = jk_terms.naux;
  p.ri_largest_shell = ri_shell;
  const auto peak = [&](std::size_t rows) {
    return ump2_gradient_phases(spins, ri_shell, rows, p).peak().ram_bytes();
  };
  p.ram_rows = alpha.naux;
  if (peak(p.ram_rows) > ram_bytes) {
    // As RHF's (no products): the JK set's arrays on disk with the least blocks first, then B's and
    // Γ's rows, then the room left to the JK set's rows and blocks.
    p.jk_layout = {0, 0};
    if (peak(p.ram_rows) > ram_bytes) p.ram_rows = most_ram_rows(alpha.naux, ram_bytes, peak);
    p.jk_layout = separable_layout_that_fits(jk_terms.naux, ram_bytes, [&](const SeparableTermLayout& layout) {
      Mp2GradientPlan trial = p;
      trial.jk_layout = layout;
      return ump2_gradient_phases(spins, ri_shell, p.ram_rows, trial).peak().ram_bytes();
    });
  }
  p.batch_functions = ri_batch_functions(ri_aux, alpha, ram_bytes, ranks, [&](std::size_t functions) {
    return ump2_gradient_phases(spins, functions, p.ram_rows, p);
  });
  p.densities = ump2_gradient_phases(spins, p.batch_functions, p.ram_rows, p).peak();
  p.densities.note = rows_in_memory_note(p);
  return p;
}

Ump2GradientDensities ump2_gradient_densities(const libint2::BasisSet& obs, const libint2::BasisSet& ri_aux,
                                              const ShellPairs& pairs, DensityFittedFock& jk,
                                              const Orbitals& orbitals, const Mp2GradientPlan& plan,
                                              MemoryBudget& budget, const ScratchDirectory* scratch,
                                              Communicator& comm, double z_convergence, Progress& progress) {
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

  // Each spin's (P|ia), then B_ia^P = Σ_Q M_PQ (Q|ia) in its place, row-major [P][i·v + a].
  std::array<RowStore, 2> B;
  std::vector<RiTransform> active_virtual;
  for (int spin = 0; spin < 2; ++spin) {
    B[spin] = RowStore(s[spin].naux, s[spin].ov(), plan.ram_rows, budget, scratch,
                       std::string("B_ia^P = M (P|ia), ") + kSpinName[spin]);
    active_virtual.push_back({x[spin].C.middleCols(nfz, x[spin].active), x[spin].C_vir});
  }
  progress.begin("MP2 gradient: (P|ia), α and β (batches of RI shells)");
  std::array<RowMajorMatrix, 2> row{RowMajorMatrix(x[0].active, x[0].nvir), RowMajorMatrix(x[1].active, x[1].nvir)};
  passes.for_each_function(active_virtual,
                           [&](std::size_t spin, Eigen::Index P, const Eigen::Map<const Eigen::MatrixXd>& ia) {
                             row[spin] = ia;
                             B[spin].write(static_cast<std::size_t>(P), 1, 0, s[spin].ov(), row[spin].data(),
                                           s[spin].ov());
                           },
                           out.work);
  SpinAmplitudes mp2;
  mp2.V_inner = RowMajorMatrix::Zero(naux, naux);
  for (int spin = 0; spin < 2; ++spin) {
    out.gamma[spin] = RowStore(s[spin].naux, s[spin].ov(), plan.ram_rows, budget, scratch,
                               std::string("Γ_ia^P, ") + kSpinName[spin]);
    mp2.P[spin] = {Eigen::MatrixXd::Zero(x[spin].active, x[spin].active),
                   Eigen::MatrixXd::Zero(x[spin].nvir, x[spin].nvir)};
  }
  {
    const std::size_t disk_rows = B[0].disk_rows();
    LargeArray<double> buffers =
        disk_rows > 0 ? budget.allocate<double>(
                            2 * ri_read_buffer_elements(s[0].naux, std::max(s[0].ov(), s[1].ov()), disk_rows),
                            "the buffers B_ia^P's rows on disk are read into")
                      : LargeArray<double>();
    const std::span<double> both(buffers.data(), buffers.size());
    const CoulombFitting fit(metric);
    for (int spin = 0; spin < 2; ++spin) {
      passes.share_rows(B[spin], both);  // every rank holds all of (P|ia)
      fit_in_place(fit, B[spin], both);
      out.work.flops_fp64 += fit.flops(s[spin].ov());
    }
    const AmplitudeBlocks blocks = amplitude_blocks(s);
    const std::size_t largest_nvir = std::max(s[0].nvir(), s[1].nvir());
    LargeArray<double> I_and_t = budget.allocate<double>(blocks.I + blocks.same + blocks.opposite,
                                                         "one occupied orbital's I, same-spin t and opposite-spin t");
    LargeArray<double> factors =
        budget.allocate<double>(2 * s[0].naux * largest_nvir, "one occupied orbital's B_kb^P and Γ_kb^P");
    progress.message("MP2 gradient: amplitudes, P and Γ (αα and αβ with k of α, ββ and αβ with k of β)");
    for (int spin = 0; spin < 2; ++spin)
      pairs_of_occupied(spin, x, fit, B, out.gamma[spin], both.first(both.size() / 2), both.last(both.size() / 2),
                        blocks, I_and_t.data(), factors.data(), mp2, comm, out.work);
    comm.allreduce_sum(mp2.e_same.data(), mp2.e_same.size());
    comm.allreduce_sum(&mp2.e_opposite, 1);
    for (int spin = 0; spin < 2; ++spin) {
      for (Eigen::MatrixXd* m : {&mp2.P[spin].active, &mp2.P[spin].virtuals})
        comm.allreduce_sum(m->data(), static_cast<std::size_t>(m->size()));
      const auto v = static_cast<std::size_t>(x[spin].nvir);
      for (std::size_t k = 0; k < static_cast<std::size_t>(x[spin].active); ++k)  // Γ's columns of k from their rank
        broadcast_columns(out.gamma[spin], k * v, v, round_robin_owner(k, comm.size()), factors.data(), comm);
    }
    out.energy.aa = mp2.e_same[0];
    out.energy.bb = mp2.e_same[1];
    out.energy.ss = mp2.e_same[0] + mp2.e_same[1];
    out.energy.os = mp2.e_opposite;
    out.metric = metric_lagrangian(fit, std::move(mp2.V_inner), comm, out.work);
  }
  B = {};
  const std::array<SpinDensity, 2>& P_mp2 = mp2.P;

  // L1_pi = 2 Σ_aP (P|pa) Γ_ia^P = 2 [Cᵀ Σ_P (P|μν) C_v Γ^Pᵀ]_pi (i active) and
  // L2_pa = 2 Σ_iP (P|pi) Γ_ia^P = 2 [Cᵀ Σ_P (P|μν) C_act Γ^P]_pa, p every orbital of the spin.
  progress.begin("MP2 gradient: Σ (P|μν) Γ^P and the Lagrangian, α and β (batches of RI shells)");
  std::vector<Eigen::MatrixXd> sums = passes.sum_of_products(
      {m, m},
      [&](std::size_t spin, Eigen::Index P, double* R) {
        const SpinBlocks& b = x[spin];
        std::vector<double> buffer;
        const Eigen::Map<const RowMajorMatrix> gamma_P(out.gamma[spin].row(static_cast<std::size_t>(P), buffer),
                                                       b.active, b.nvir);
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
