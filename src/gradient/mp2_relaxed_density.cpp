#include "src/gradient/mp2_relaxed_density.hpp"

#include <algorithm>
#include <cstdio>
#include <span>
#include <stdexcept>
#include <vector>

#include "src/common/errors.hpp"
#include "src/gradient/ri_passes.hpp"
#include "src/integrals/density_fitting.hpp"

namespace dfmp2 {
namespace {

using RowMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// What the densities hold in the passes over the RI batches (the first holds B_ia^P, the second
// Γ_ia^P: the same size), in the loop over the amplitudes (p.amplitude_orbitals k at a time) and in
// the Z-vector, with the plan p's choices (its other fields are not read).
RiGradientPhases gradient_phases(const Mp2GradientSizes& s, std::size_t batch_functions, const Mp2GradientPlan& p) {
  const std::size_t disk_rows = s.naux - p.ram_rows;
  const std::size_t in_ram = MemoryBudget::double_array_bytes(p.ram_rows * s.ov()),
                    on_disk = sizeof(double) * disk_rows * s.ov();
  const std::size_t block = p.amplitude_orbitals;
  RiGradientPhases ph;
  ph.pass = ri_pass_plan(s, batch_functions, {{"B_ia^P, then Γ_ia^P", in_ram}}, p.keeps_ri_integrals);
  ph.pass.disk("B_ia^P's other rows, then Γ_ia^P's", on_disk);
  ph.amplitudes.ram("the RI metric, its fit and V_PQ", ri_fit_bytes(s.naux));
  if (p.keeps_ri_integrals)
    ph.amplitudes.ram(kKeptRiIntegrals, MemoryBudget::double_array_bytes(s.ao_batch(s.naux)));
  ph.amplitudes.ram("B_ia^P = M (P|ia)", in_ram);
  ph.amplitudes.ram("Γ_ia^P", in_ram);
  if (disk_rows > 0) {
    ph.amplitudes.ram("the buffers B_ia^P's rows on disk are read into",
                      MemoryBudget::double_array_bytes(2 * ri_read_buffer_elements(s.naux, s.ov(), disk_rows)));
    ph.amplitudes.disk("B_ia^P's other rows", on_disk);
    ph.amplitudes.disk("Γ_ia^P's other rows", on_disk);
    ph.amplitudes.read_bytes = 2 * on_disk;
    ph.amplitudes.read_per = "block of occupied orbitals k";
  }
  ph.amplitudes.ram("a block of occupied orbitals' B_kb^P and Γ_kb^P",
                    MemoryBudget::double_array_bytes(2 * s.naux * block * s.nvir()));
  ph.amplitudes.ram("a block of occupied orbitals' t and T",
                    2 * MemoryBudget::double_array_bytes(s.amplitude_block(block)));
  if (p.keeps_integrals)
    ph.amplitudes.ram("I_ia,kb of the block pairs still to be read",
                      MemoryBudget::double_array_bytes(s.kept_integrals(block)));
  else
    ph.amplitudes.ram("a block of occupied orbitals' I", MemoryBudget::double_array_bytes(s.amplitude_block(block)));
  ph.z_vector.ram("the RI metric, its fit and V_PQ", ri_fit_bytes(s.naux));
  ph.z_vector.ram("Γ_ia^P", in_ram);
  ph.z_vector.disk("Γ_ia^P's other rows", on_disk);
  ph.z_vector.ram("the Z-vector's B^Q C_o, C_oᵀ B^Q C_o and buffers",
                  OccupiedFockResponse::bytes(s.nbf, s.nocc, s.jk_rows, p.fp32_z_vector));
  std::vector<PlannedBlock> contraction_holds{{"Γ_ia^P", in_ram}};
  if (on_disk > 0) contraction_holds.push_back({"Γ_ia^P's other rows", on_disk, true});
  if (p.keeps_occupied_products)
    contraction_holds.push_back({"the Z-vector's B^Q C_o, kept for the JK set's term",
                                 OccupiedFockResponse::kept_products_bytes(s.nbf, s.nocc, s.jk_rows)});
  ph.add_contraction(contraction_holds, s, p);
  return ph;
}

// P_ab's sum over the blocks is symmetric, but not each block's share: C += alpha Aᵀ B on C's upper
// triangle only, by column blocks of kUpperColumns (about 60 % of the full product's flops for
// P_ab here), the lower triangle left to be mirrored from the sum. upper_elements(n): the elements
// of an n × n C those blocks cover, for the flops.
constexpr Eigen::Index kUpperColumns = 64;
double upper_elements(Eigen::Index n) {
  double elements = 0.0;
  for (Eigen::Index j0 = 0; j0 < n; j0 += kUpperColumns)
    elements += double(std::min(kUpperColumns, n - j0)) * double(std::min(j0 + kUpperColumns, n));
  return elements;
}
template <typename Matrix>
void add_upper_product(Eigen::MatrixXd& C, double alpha, const Matrix& A, const Matrix& B) {
  for (Eigen::Index j0 = 0; j0 < C.cols(); j0 += kUpperColumns) {
    const Eigen::Index width = std::min(kUpperColumns, C.cols() - j0), rows = j0 + width;
    C.block(0, j0, rows, width).noalias() += alpha * A.leftCols(rows).transpose() * B.middleCols(j0, width);
  }
}

struct Amplitudes {
  double e_mp2 = 0.0, e_os = 0.0;  // E_os = Σ t·I, E_ss = E − E_os
  Eigen::MatrixXd P_act, P_vir;  // unrelaxed P_ij, P_ab
  Eigen::MatrixXd V;             // V_PQ
};

// E_MP2, P_ij, P_ab, V_PQ and Γ_ia^P (written here) from B_ia^P = Σ_Q M_PQ (Q|ia) (rows P, columns
// i·v + a; Mᵀ M = J⁻¹ is `fit`'s), `block` occupied orbitals k at a time: I_ia,kb = Σ_P B_ia^P
// B_kb^P, then t_ik^ab and T_ik^ab, each row-major [i][a][k][b], then Γ_kb^P = Σ_Q M_QP Σ_ia
// B_ia^Q T_ia,kb (T_ia,kb = T_kb,ia) for the block's columns. Each reads B's rows in blocks, twice:
// for I, then for Γ. A block of k's, not one, gives the GEMMs of I and Γ (whose other dimensions
// are o·v and naux) k·v columns. V_PQ = Σ_ia c_ia^P Γ_ia^Q with c = Mᵀ B is Mᵀ (Σ_kb B_kb Γ'_kbᵀ) M,
// Γ' before Mᵀ. keeps_integrals (one rank): block kb's GEMMs make only its rows i of blocks ib ≥
// kb, each block pair (kb, ib) into a slot of an array that keeps it until block ib has read its
// rows i of block kb there, transposed (I_ia,kb = I_kb,ia); at most (kb + 1)(m − kb) pairs of the
// m blocks are kept at once. Otherwise the ranks share the blocks, each block makes all its rows
// into one reused array, and each rank sends the others its blocks' Γ. Each adds its GEMMs' flops
// to `work`.
Amplitudes amplitudes_by_occupied(const Mp2GradientSizes& s, std::size_t block, bool keeps_integrals,
                                  const Eigen::VectorXd& eps, const CoulombFitting& fit, const RowStore& B,
                                  RowStore& gamma, std::span<double> buffer, std::span<double> next_buffer,
                                  MemoryBudget& budget, Communicator& comm, Progress& progress, StageWork& work) {
  const auto o = static_cast<Eigen::Index>(s.active()), v = static_cast<Eigen::Index>(s.nvir()),
             ov = static_cast<Eigen::Index>(s.ov()), naux = static_cast<Eigen::Index>(s.naux),
             nfz = static_cast<Eigen::Index>(s.nfrozen), nocc = static_cast<Eigen::Index>(s.nocc);
  if (keeps_integrals && comm.size() > 1) throw std::logic_error("I_ia,kb is kept on one rank only");
  LargeArray<double> integrals =
      keeps_integrals ? budget.allocate<double>(s.kept_integrals(block), "I_ia,kb of the block pairs still to be read")
                      : budget.allocate<double>(s.amplitude_block(block), "a block of orbitals' I_ia,kb");
  LargeArray<double> t_block = budget.allocate<double>(s.amplitude_block(block), "a block of orbitals' t_ik^ab");
  LargeArray<double> T_block = budget.allocate<double>(s.amplitude_block(block), "a block of orbitals' T_ik^ab");
  LargeArray<double> factors =
      budget.allocate<double>(2 * s.naux * block * s.nvir(), "a block of orbitals' B_kb^P and Γ_kb^P");
  Amplitudes out{0.0, 0.0, Eigen::MatrixXd::Zero(o, o), Eigen::MatrixXd::Zero(v, v), {}};
  RowMajorMatrix V_inner = RowMajorMatrix::Zero(naux, naux);  // Σ_kb B_kb Γ'_kbᵀ
  const auto step = static_cast<Eigen::Index>(block);
  const Eigen::Index first = step * comm.rank(), stride = step * comm.size(), blocks = (o + step - 1) / step;
  // The kept slots, (step·v)² elements each: which holds block pair (kb, ib), and which are free.
  const auto slot_size = static_cast<std::size_t>(step * v * step * v);
  std::vector<Eigen::Index> slot_of(static_cast<std::size_t>(blocks * blocks), -1), free_slots;
  if (keeps_integrals)
    for (auto slot = static_cast<Eigen::Index>(s.kept_integrals(block) / slot_size); slot-- > 0;)
      free_slots.push_back(slot);
  const auto width = [&](Eigen::Index block_index) { return std::min(step, o - block_index * step) * v; };
  // Block kb's I rows i of block ib (ib·step ≤ i < ib·step + step), row-major [i][a][k][b]: a kept
  // slot, or rows of the reused array.
  const auto integrals_of = [&](Eigen::Index kb, Eigen::Index ib) {
    double* rows = keeps_integrals ? integrals.data() + slot_of[static_cast<std::size_t>(kb * blocks + ib)] * slot_size
                                   : integrals.data() + ib * step * v * width(kb);
    return Eigen::Map<RowMajorMatrix>(rows, width(ib), width(kb));
  };
  // A block's GEMMs: I, 2 (o − from)·v·kv·naux; Γ, 2 ov·kv·naux; V, 2 naux²·kv; P_ij, 2 o²·v·kv;
  // P_ab, 2 v²·ov·nk; and Mᵀ on Γ. Progress counts them: with I kept, the later blocks make fewer
  // rows.
  const auto first_row = [&](Eigen::Index k0) { return keeps_integrals ? k0 : Eigen::Index{0}; };
  const double P_vir_elements = upper_elements(v);
  const auto block_flops = [&](Eigen::Index k0) {
    const double nk = double(std::min(step, o - k0)), kv = nk * double(v);
    return 2.0 * kv * (double((o - first_row(k0)) * v) * double(naux) + double(ov) * double(naux + o) +
                       double(naux) * double(naux)) +
           2.0 * nk * double(ov) * P_vir_elements + fit.flops(static_cast<std::size_t>(kv));
  };
  double my_flops = 0.0, done_flops = 0.0;
  for (Eigen::Index k0 = first; k0 < o; k0 += stride) my_flops += block_flops(k0);
  for (Eigen::Index k0 = first; k0 < o; k0 += stride) {
    const Eigen::Index nk = std::min(step, o - k0), kv = nk * v, kb = k0 / step;
    Eigen::Map<RowMajorMatrix> t(t_block.data(), ov, kv), T(T_block.data(), ov, kv);
    Eigen::Map<RowMajorMatrix> B_k(factors.data(), naux, kv), gamma_k(factors.data() + naux * kv, naux, kv);
    B.read(0, s.naux, static_cast<std::size_t>(k0 * v), static_cast<std::size_t>(kv), B_k.data(),
           static_cast<std::size_t>(kv));
    if (keeps_integrals)
      for (Eigen::Index ib = kb; ib < blocks; ++ib) {
        slot_of[static_cast<std::size_t>(kb * blocks + ib)] = free_slots.back();
        free_slots.pop_back();
      }
    B.for_each_block(buffer, next_buffer, [&](std::size_t first_P, std::size_t count, const double* rows) {
      const Eigen::Map<const RowMajorMatrix> B_rows(rows, static_cast<Eigen::Index>(count), ov);
      const auto B_k_rows = B_k.middleRows(static_cast<Eigen::Index>(first_P), static_cast<Eigen::Index>(count));
      if (keeps_integrals)
        for (Eigen::Index ib = kb; ib < blocks; ++ib)
          assign_or_add(integrals_of(kb, ib), B_rows.middleCols(ib * step * v, width(ib)).transpose() * B_k_rows,
                        first_P == 0);
      else
        assign_or_add(Eigen::Map<RowMajorMatrix>(integrals.data(), ov, kv), B_rows.transpose() * B_k_rows,
                      first_P == 0);
    });
    // t_ik, T_ik and their energies from I_ik: this block's rows, or, for i before them, an
    // earlier block's (rows k·v + b, columns i·v + a).
    const auto amplitudes_of = [&](Eigen::Index i, Eigen::Index k, const auto& I_ik, double& e, double& e_os) {
      auto t_ik = t.block(i * v, k * v, v, v);
      for (Eigen::Index a = 0; a < v; ++a)
        for (Eigen::Index b = 0; b < v; ++b)
          t_ik(a, b) = I_ik(a, b) / (eps(nfz + i) + eps(nfz + k0 + k) - eps(nocc + a) - eps(nocc + b));
      auto T_ik = T.block(i * v, k * v, v, v);
      T_ik = 2.0 * t_ik - t_ik.transpose();
      e += T_ik.cwiseProduct(I_ik).sum();
      e_os += t_ik.cwiseProduct(I_ik).sum();
    };
    double e = 0.0, e_os = 0.0;
#pragma omp parallel for collapse(2) schedule(static) reduction(+ : e, e_os)
    for (Eigen::Index i = 0; i < o; ++i)
      for (Eigen::Index k = 0; k < nk; ++k) {
        const Eigen::Index ib = i / step, i_in = (i - ib * step) * v;
        if (ib >= kb || !keeps_integrals)
          amplitudes_of(i, k, integrals_of(kb, ib).block(i_in, k * v, v, v), e, e_os);
        else
          amplitudes_of(i, k, integrals_of(ib, kb).block(k * v, i_in, v, v).transpose(), e, e_os);
      }
    out.e_mp2 += e;
    out.e_os += e_os;
    if (keeps_integrals)  // block kb has read every pair (ib ≤ kb, kb)
      for (Eigen::Index ib = 0; ib <= kb; ++ib)
        free_slots.push_back(slot_of[static_cast<std::size_t>(ib * blocks + kb)]);
    // Rows i of [a][k][b]: P_ij −= 2 Σ_kab t_ik^ab T_jk^ab.
    const Eigen::Map<const RowMajorMatrix> t_rows(t_block.data(), o, v * kv), T_rows(T_block.data(), o, v * kv);
    out.P_act.noalias() -= 2.0 * t_rows * T_rows.transpose();
    // P_ab = 2 Σ_ijc t_ij^ac T_ij^bc is, summed over every k, 2 Σ_ick t_ik^ca T_ik^cb (t_ik^ca =
    // t_ki^ac): rows [i][c][k] of [b], one product's upper triangle.
    const Eigen::Map<const RowMajorMatrix> t_by_b(t_block.data(), ov * nk, v), T_by_b(T_block.data(), ov * nk, v);
    add_upper_product(out.P_vir, 2.0, t_by_b, T_by_b);
    // Γ'_kb^P = Σ_ia B_ia^P T_ia,kb, then V's inner sum, then Γ_kb = Mᵀ Γ'_kb.
    B.for_each_block(buffer, next_buffer, [&](std::size_t first_P, std::size_t count, const double* rows) {
      gamma_k.middleRows(static_cast<Eigen::Index>(first_P), static_cast<Eigen::Index>(count)).noalias() =
          Eigen::Map<const RowMajorMatrix>(rows, static_cast<Eigen::Index>(count), ov) * T;
    });
    V_inner.noalias() += B_k * gamma_k.transpose();
    fit.apply_transpose(gamma_k.data(), static_cast<std::size_t>(kv));
    gamma.write(0, s.naux, static_cast<std::size_t>(k0 * v), static_cast<std::size_t>(kv), gamma_k.data(),
                static_cast<std::size_t>(kv));
    work.flops_fp64 += block_flops(k0);
    done_flops += block_flops(k0);
    progress.fraction(done_flops / my_flops);
  }
  comm.allreduce_sum(&out.e_mp2, 1);
  comm.allreduce_sum(&out.e_os, 1);
  comm.allreduce_sum(out.P_act.data(), static_cast<std::size_t>(out.P_act.size()));
  comm.allreduce_sum(out.P_vir.data(), static_cast<std::size_t>(out.P_vir.size()));
  out.P_vir.triangularView<Eigen::StrictlyLower>() = out.P_vir.transpose();
  for (Eigen::Index kb = 0; kb < blocks; ++kb)  // each block's Γ from the rank that made it
    broadcast_columns(gamma, static_cast<std::size_t>(kb * step * v), static_cast<std::size_t>(width(kb)),
                      round_robin_owner(static_cast<std::size_t>(kb), comm.size()), factors.data(), comm);
  out.V = metric_lagrangian(fit, std::move(V_inner), comm, work);
  return out;
}

struct ZVector {
  Eigen::MatrixXd z;
  Eigen::MatrixXd occupied_response;  // C_oᵀ (4J − 2K)(Z) C_o, for W
};

// Solves (Δ + A) z = b by conjugate gradients preconditioned with Δ⁻¹, Δ_ak = ε_a − ε_k > 0 and
// A z = C_vᵀ (4J − 2K)(Z) C_o (positive definite for a stable RHF solution), until every residual
// element is below `convergence`. Each product's occupied block is summed with z's own
// coefficients, so (4J − 2K)(Z)'s is had without another build. fp32 (the response made with
// it): by iterative refinement, each correction solved in fp32 products to kFp32Reduction of the
// residual, then the residual and (4J − 2K)(Z)'s occupied block from one fp64 product of z; the
// fp64 iterations take over if a round gains less than a decade.
ZVector solve_z_vector(OccupiedFockResponse& response, Communicator& comm, const Eigen::MatrixXd& C_occ,
                       const Eigen::MatrixXd& C_vir, const Eigen::MatrixXd& delta, const Eigen::MatrixXd& b,
                       double convergence, bool fp32, int& iterations, const Progress& progress) {
  using kernels::Precision;
  Eigen::MatrixXd occupied_block;
  const auto apply = [&](const Eigen::MatrixXd& z, Precision precision) -> Eigen::MatrixXd {
    Eigen::MatrixXd F_occ = response(C_vir * z, precision);  // (4J − 2K)(Z) C_o
    comm.allreduce_sum(F_occ.data(), static_cast<std::size_t>(F_occ.size()));
    occupied_block = C_occ.transpose() * F_occ;
    return delta.cwiseProduct(z) + C_vir.transpose() * F_occ;
  };
  // Root's residual decides for every rank, so that all stop together even if their sums differ
  // in the last bits.
  const auto largest = [&](const Eigen::MatrixXd& r) {
    double residual = r.cwiseAbs().maxCoeff();
    comm.broadcast(&residual, 1, 0);
    return residual;
  };
  constexpr int kMaxIterations = 100;
  iterations = 0;
  // From x with residual r, until every element of r is below `target`; `occupied` gathers the
  // products' occupied blocks as x gathers its steps.
  const auto conjugate_gradients = [&](Eigen::MatrixXd& x, Eigen::MatrixXd& r, Eigen::MatrixXd& occupied,
                                       double target, Precision precision) {
    Eigen::MatrixXd s = r.cwiseQuotient(delta), p = s;
    double rs = r.cwiseProduct(s).sum();
    for (;; ++iterations) {
      const double residual = largest(r);
      report_z_vector_iteration(progress, iterations, residual);
      if (residual < target) return;
      if (iterations == kMaxIterations) throw ConvergenceError("the MP2 gradient's Z-vector equations did not converge");
      const Eigen::MatrixXd Ap = apply(p, precision);
      const double alpha = rs / p.cwiseProduct(Ap).sum();
      x += alpha * p;
      occupied += alpha * occupied_block;
      r -= alpha * Ap;
      s = r.cwiseQuotient(delta);
      const double rs_next = r.cwiseProduct(s).sum();
      p = s + (rs_next / rs) * p;
      rs = rs_next;
    }
  };
  ZVector out;
  Eigen::MatrixXd r;
  if (!fp32) {
    out.z = b.cwiseQuotient(delta);
    r = b - apply(out.z, Precision::fp64);
    out.occupied_response = occupied_block;
    conjugate_gradients(out.z, r, out.occupied_response, convergence, Precision::fp64);
    return out;
  }
  // fp32 products err by about 1e-6 of their size: each round gains some four decades.
  constexpr double kFp32Reduction = 1e-4;
  out.z = Eigen::MatrixXd::Zero(b.rows(), b.cols());
  r = b;  // z = 0's
  for (double residual = largest(r);;) {
    Eigen::MatrixXd correction = Eigen::MatrixXd::Zero(b.rows(), b.cols()), inner = r,
                    unused = Eigen::MatrixXd::Zero(C_occ.cols(), C_occ.cols());
    conjugate_gradients(correction, inner, unused, std::max(kFp32Reduction * residual, 0.5 * convergence),
                        Precision::fp32);
    out.z += correction;
    r = b - apply(out.z, Precision::fp64);
    out.occupied_response = occupied_block;
    const double previous = residual;
    residual = largest(r);
    if (residual < convergence) {
      report_z_vector_iteration(progress, iterations, residual);
      return out;
    }
    if (residual > 0.1 * previous) break;  // the next iterations report it first
  }
  conjugate_gradients(out.z, r, out.occupied_response, convergence, Precision::fp64);
  return out;
}

}  // namespace

Mp2GradientPlan plan_mp2_gradient(const libint2::BasisSet& ri_aux, const Mp2GradientSizes& sizes,
                                  const SeparableTermSizes& jk_terms, std::size_t ram_bytes, int ranks,
                                  bool fp32_z_vector) {
  Mp2GradientPlan p;
  p.sizes = sizes;
  p.ram_rows = sizes.naux;
  const std::size_t ri_shell = largest_shell(ri_aux);
  p.jk_terms = jk_terms;
  p.jk_layout.ram_rows = jk_terms.naux;
  p.ri_largest_shell = ri_shell;
  p.keeps_occupied_products = true;
  // About kBlockColumns columns k·b in the amplitude block's GEMMs run them at full rate; and
  // every rank should have a block.
  constexpr std::size_t kBlockColumns = 1024;
  const std::size_t active = std::max<std::size_t>(sizes.active(), 1);
  const std::size_t full_rate = std::min(share_of(active, 0, ranks).size(),
                                         (kBlockColumns + sizes.nvir() - 1) / std::max<std::size_t>(sizes.nvir(), 1));
  const auto amplitude_orbitals_that_fit = [&] {
    p.amplitude_orbitals = full_rate;
    while (p.amplitude_orbitals > 1 && gradient_phases(sizes, ri_shell, p).amplitudes.ram_bytes() > ram_bytes)
      --p.amplitude_orbitals;
  };
  amplitude_orbitals_that_fit();
  const auto peak = [&](const Mp2GradientPlan& trial) {
    return gradient_phases(sizes, ri_shell, trial).peak().ram_bytes();
  };
  if (peak(p) > ram_bytes) {
    // Out of core, the cheapest first: the JK set's arrays on disk with the least blocks, the
    // products dropped, then the amplitude blocks with every row of B and Γ on disk and as many
    // rows in memory as fit beside them and beside the other phases (they all grow with the rows);
    // then the room left to the products, the JK set's rows and blocks.
    p.jk_layout = {0, 0};
    p.keeps_occupied_products = peak(p) <= ram_bytes;
    if (peak(p) > ram_bytes) {
      p.ram_rows = 0;
      amplitude_orbitals_that_fit();
      p.ram_rows = most_ram_rows(sizes.naux, ram_bytes, [&](std::size_t rows) {
        Mp2GradientPlan trial = p;
        trial.ram_rows = rows;
        return peak(trial);
      });
    }
    Mp2GradientPlan with_products = p;
    with_products.keeps_occupied_products = true;
    p.keeps_occupied_products = peak(with_products) <= ram_bytes;
    p.jk_layout = separable_layout_that_fits(jk_terms.naux, ram_bytes, [&](const SeparableTermLayout& layout) {
      Mp2GradientPlan trial = p;
      trial.jk_layout = layout;
      return peak(trial);
    });
  }
  // Then, each in the room the ones before leave: the kept I (it saves the most), the RI integrals
  // between the passes, the Z-vector's fp32 copies.
  const auto fits_with = [&](bool Mp2GradientPlan::*choice, bool whole_peak) {
    Mp2GradientPlan trial = p;
    trial.*choice = true;
    const RiGradientPhases phases = gradient_phases(sizes, ri_shell, trial);
    return (whole_peak ? phases.peak() : phases.amplitudes).ram_bytes() <= ram_bytes;
  };
  p.keeps_integrals = ranks == 1 && fits_with(&Mp2GradientPlan::keeps_integrals, false);
  p.keeps_ri_integrals = ranks == 1 && fits_with(&Mp2GradientPlan::keeps_ri_integrals, true);
  p.fp32_z_vector = fp32_z_vector && fits_with(&Mp2GradientPlan::fp32_z_vector, true);
  const auto phases = [&](std::size_t functions) { return gradient_phases(sizes, functions, p); };
  p.batch_functions = ri_batch_functions(ri_aux, sizes, ram_bytes, ranks, phases, p.keeps_ri_integrals);
  p.densities = phases(p.batch_functions).peak();
  p.densities.note = rows_in_memory_note(p);
  return p;
}

Mp2GradientDensities mp2_gradient_densities(const libint2::BasisSet& obs, const libint2::BasisSet& ri_aux,
                                            const ShellPairs& pairs, DensityFittedFock& jk, const Orbitals& orbitals,
                                            const Mp2GradientPlan& plan, MemoryBudget& budget,
                                            const ScratchDirectory* scratch, Communicator& comm, double z_convergence,
                                            Progress& progress) {
  const Eigen::MatrixXd& C = orbitals.C;
  const Eigen::VectorXd& eps = orbitals.eps;
  // The plan's sizes with the orbitals' nmo: linear dependencies can only have removed virtuals,
  // so every array is at most as planned.
  Mp2GradientSizes s = plan.sizes;
  if (orbitals.unrestricted() || plan.beta || static_cast<std::size_t>(C.cols()) > s.nmo ||
      static_cast<std::size_t>(orbitals.nocc) != s.nocc || static_cast<std::size_t>(C.rows()) != s.nbf ||
      static_cast<std::size_t>(ri_aux.nbf()) != s.naux || pairs.layout.size() != s.stored)
    throw std::logic_error("the MP2 gradient's plan is not for these orbitals");
  s.nmo = static_cast<std::size_t>(C.cols());
  const Eigen::Index nmo = C.cols(), nocc = orbitals.nocc, nfz = static_cast<Eigen::Index>(s.nfrozen), o = nocc - nfz,
                     v = nmo - nocc, ov = o * v, m = nmo - nfz;
  const Eigen::MatrixXd C_occ = C.leftCols(nocc), C_vir = C.rightCols(v);

  Mp2GradientDensities out;
  const StageWork jk_before = jk.work();
  const auto fit_memory = budget.reserve(ri_fit_bytes(s.naux), "the RI metric, its fit and V_PQ");
  const Eigen::MatrixXd metric = coulomb_metric(ri_aux);
  if (plan.keeps_ri_integrals && comm.size() > 1) throw std::logic_error("the RI integrals are kept on one rank only");
  KeptRiIntegrals kept;
  if (plan.keeps_ri_integrals) kept.rows = budget.allocate<double>(s.ao_batch(s.naux), kKeptRiIntegrals);
  const RiPasses passes{obs, ri_aux, pairs, metric, s, plan.batch_functions, budget, comm,
                        [&progress](double done) { progress.fraction(done); },
                        plan.keeps_ri_integrals ? &kept : nullptr};
  // (P|ia), then B_ia^P = Σ_Q M_PQ (Q|ia) in its place, row-major [P][i·v + a].
  RowStore B(s.naux, s.ov(), plan.ram_rows, budget, scratch, "B_ia^P = M (P|ia)");
  progress.begin("MP2 gradient: (P|ia) (batches of RI shells)");
  RowMajorMatrix row(o, v);
  passes.for_each_function({{C.middleCols(nfz, o), C_vir}},
                           [&](std::size_t, Eigen::Index P, const Eigen::Map<const Eigen::MatrixXd>& ia) {
                             row = ia;
                             B.write(static_cast<std::size_t>(P), 1, 0, s.ov(), row.data(), s.ov());
                           },
                           out.work);
  out.gamma = RowStore(s.naux, s.ov(), plan.ram_rows, budget, scratch, "Γ_ia^P");
  Amplitudes mp2;
  {
    LargeArray<double> buffers =
        B.disk_rows() > 0
            ? budget.allocate<double>(2 * ri_read_buffer_elements(s.naux, s.ov(), B.disk_rows()),
                                      "the buffers B_ia^P's rows on disk are read into")
            : LargeArray<double>();
    const std::span<double> both(buffers.data(), buffers.size());
    passes.share_rows(B, both);  // every rank holds all of (P|ia)
    const CoulombFitting fit(metric);
    fit_in_place(fit, B, both);
    out.work.flops_fp64 += fit.flops(s.ov());
    progress.begin("MP2 gradient: amplitudes, P and Γ (blocks of occupied orbitals)");
    mp2 = amplitudes_by_occupied(s, plan.amplitude_orbitals, plan.keeps_integrals, eps, fit, B, out.gamma,
                                 both.first(both.size() / 2), both.last(both.size() / 2), budget, comm, progress,
                                 out.work);
    out.metric = std::move(mp2.V);
  }
  B = RowStore();
  out.energy.os = mp2.e_os;
  out.energy.ss = mp2.e_mp2 - mp2.e_os;
  const Eigen::MatrixXd& P_act = mp2.P_act;
  const Eigen::MatrixXd& P_vir = mp2.P_vir;

  // L1_pi = 4 Σ_aP (P|pa) Γ_ia^P = 4 [Cᵀ Σ_P (P|μν) C_v Γ^Pᵀ]_pi (i active) and
  // L2_pa = 4 Σ_iP (P|pi) Γ_ia^P = 4 [Cᵀ Σ_P (P|μν) C_act Γ^P]_pa, p every orbital.
  progress.begin("MP2 gradient: Σ (P|μν) Γ^P and the Lagrangian (batches of RI shells)");
  const Eigen::MatrixXd C_act = C.middleCols(nfz, o);
  Eigen::MatrixXd sum = passes.sum_of_products(
      {m},
      [&](std::size_t, Eigen::Index P, double* R) {
        std::vector<double> buffer;
        const Eigen::Map<const RowMajorMatrix> gamma_P(out.gamma.row(static_cast<std::size_t>(P), buffer), o, v);
        Eigen::Map<Eigen::MatrixXd> R_P(R, C.rows(), m);
        R_P.leftCols(o).noalias() = C_vir * gamma_P.transpose();
        R_P.rightCols(v).noalias() = C_act * gamma_P;
      },
      {4.0 * double(C.rows()) * double(ov)}, out.work)[0];
  kept.rows = LargeArray<double>();
  comm.allreduce_sum(sum.data(), static_cast<std::size_t>(sum.size()));
  const Eigen::MatrixXd L1 = 4.0 * C.transpose() * sum.leftCols(o), L2 = 4.0 * C.transpose() * sum.rightCols(v);

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
  progress.message("MP2 gradient: the orbital Lagrangian's J/K, then the Z-vector");
  // Only the occupied columns of Cᵀ (4J − 2K)(P) C are used: its vo block here, its oo block in W;
  // the Z-vector's factors give them.
  OccupiedFockResponse response(jk, C_occ, budget, plan.fp32_z_vector);
  Eigen::MatrixXd FC_occ = response.of_symmetric(C * P * C.transpose());
  comm.allreduce_sum(FC_occ.data(), static_cast<std::size_t>(FC_occ.size()));
  const Eigen::MatrixXd G_unrelaxed = C.transpose() * FC_occ;
  Eigen::MatrixXd lagrangian = G_unrelaxed.bottomRows(v) - L2.topRows(nocc).transpose();
  lagrangian.rightCols(o) += L1.bottomRows(v);
  Eigen::MatrixXd delta(v, nocc);
  for (Eigen::Index k = 0; k < nocc; ++k)
    for (Eigen::Index a = 0; a < v; ++a) delta(a, k) = eps(nocc + a) - eps(k);
  const ZVector solution =
      solve_z_vector(response, comm, C_occ, C_vir, delta, -lagrangian, z_convergence, plan.fp32_z_vector,
                     out.cphf_iterations, progress);
  const Eigen::MatrixXd& z = solution.z;
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
  // The occupied block of (4J − 2K)(P) for the relaxed P: the MP2 blocks' and the Z-vector's.
  W.topLeftCorner(nocc, nocc) += 0.5 * (G_unrelaxed.topRows(nocc) + solution.occupied_response);
  out.energy_weighted = C * W * C.transpose();
  // The J/K builds of the Lagrangian and the Z-vector.
  out.work.flops_fp64 += jk.work().flops_fp64 - jk_before.flops_fp64;
  out.work.flops_fp32 += jk.work().flops_fp32 - jk_before.flops_fp32;
  if (plan.keeps_occupied_products) out.occupied_products = response.release_occupied_products();
  return out;
}

void report_z_vector_iteration(const Progress& progress, int iteration, double residual) {
  char line[96];
  std::snprintf(line, sizeof line, "MP2 gradient: Z-vector iter %3d  max |residual| = %.3e", iteration, residual);
  progress.message(line);
}

}  // namespace dfmp2
