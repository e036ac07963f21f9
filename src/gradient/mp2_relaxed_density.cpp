#include "src/gradient/mp2_relaxed_density.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "src/common/matrix_view.hpp"
#include "src/gradient/mp2_amplitudes.hpp"
#include "src/gradient/ri_passes.hpp"
#include "src/gradient/z_vector.hpp"
#include "src/integrals/density_fitting.hpp"

namespace dfmp2 {
namespace {

using RowMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Sets = std::vector<Eigen::MatrixXd>;
using kernels::Op;

// What a plan and the densities' arrays call set s of `sets`: nothing for RHF's one, ", α" or ", β".
std::string set_name(std::size_t sets, std::size_t s) {
  if (sets == 1) return "";
  return s == 0 ? ", α" : ", β";
}

// Each set's B_ia^P and Γ_ia^P (the same size) in the phases that hold them, `ram_rows` rows P in
// memory and the rest on disk.
void add_three_index_blocks(RiGradientPhases& ph, std::vector<PlannedBlock>& passes_hold,
                            std::vector<PlannedBlock>& contraction_holds, const std::vector<Mp2GradientSizes>& sets,
                            std::size_t ram_rows) {
  for (std::size_t s = 0; s < sets.size(); ++s) {
    const std::size_t disk_rows = sets[s].naux - ram_rows;
    const std::size_t in_ram = MemoryBudget::double_array_bytes(ram_rows * sets[s].ov()),
                      on_disk = sizeof(double) * disk_rows * sets[s].ov();
    const std::string name = set_name(sets.size(), s);
    passes_hold.push_back({"B_ia^P, then Γ_ia^P" + name, in_ram});
    if (on_disk > 0) passes_hold.push_back({"B_ia^P's other rows, then Γ_ia^P's" + name, on_disk, true});
    ph.amplitudes.ram("B_ia^P = M (P|ia)" + name, in_ram);
    ph.amplitudes.ram("Γ_ia^P" + name, in_ram);
    ph.amplitudes.disk("B_ia^P's other rows" + name, on_disk);
    ph.amplitudes.disk("Γ_ia^P's other rows" + name, on_disk);
    ph.amplitudes.read_bytes += 2 * on_disk;  // each block of orbitals k reads B twice
    ph.z_vector.ram("Γ_ia^P" + name, in_ram);
    ph.z_vector.disk("Γ_ia^P's other rows" + name, on_disk);
    contraction_holds.push_back({"Γ_ia^P" + name, in_ram});
    if (on_disk > 0) contraction_holds.push_back({"Γ_ia^P's other rows" + name, on_disk, true});
  }
}

// What the densities hold in the passes over the RI batches (the first holds each set's B_ia^P,
// the second its Γ_ia^P), in the loop over the amplitudes, in the Z-vector and in the contraction,
// with the plan p's choices (its batch_functions and densities are not read).
RiGradientPhases gradient_phases(const std::vector<Mp2GradientSizes>& sets, std::size_t batch_functions,
                                 const Mp2GradientPlan& p) {
  const Mp2GradientSizes& s = sets[0];
  RiGradientPhases ph;
  std::vector<PlannedBlock> passes_hold, contraction_holds;
  ph.amplitudes.ram("the RI metric, its fit and V_PQ", ri_fit_bytes(s.naux));
  if (p.keeps_ri_integrals)
    ph.amplitudes.ram(kKeptRiIntegrals, MemoryBudget::double_array_bytes(s.ao_batch(s.naux)));
  ph.z_vector.ram("the RI metric, its fit and V_PQ", ri_fit_bytes(s.naux));
  add_three_index_blocks(ph, passes_hold, contraction_holds, sets, p.ram_rows);
  std::vector<std::size_t> nocc;
  std::size_t largest_ov = 0;
  for (const Mp2GradientSizes& set : sets) {
    nocc.push_back(set.nocc);
    largest_ov = std::max(largest_ov, set.ov());
  }
  if (s.naux > p.ram_rows) {
    ph.amplitudes.ram("the buffers B_ia^P's rows on disk are read into",
                      MemoryBudget::double_array_bytes(
                          2 * ri_read_buffer_elements(s.naux, largest_ov, s.naux - p.ram_rows)));
    ph.amplitudes.read_per = p.closed_shell() ? "block of occupied orbitals k" : "occupied orbital k";
  }
  if (p.closed_shell())
    closed_shell_amplitude_blocks(ph.amplitudes, s, p.amplitude_orbitals, p.keeps_integrals);
  else
    open_shell_amplitude_blocks(ph.amplitudes, sets);
  ph.z_vector.ram("the Z-vector's B^Q C_o, C_oᵀ B^Q C_o and buffers",
                  OccupiedFockResponse::bytes(s.nbf, nocc, s.jk_rows, p.fp32_z_vector, p.z_vector_gpu.has_value()));
  if (p.keeps_occupied_products)
    contraction_holds.push_back({"the Z-vector's B^Q C_o, kept for the JK set's term",
                                 OccupiedFockResponse::kept_products_bytes(s.nbf, s.nocc, s.jk_rows)});
  ph.pass = ri_pass_plan(sets, batch_functions, passes_hold, p.keeps_ri_integrals);
  ph.add_contraction(contraction_holds, s, p);
  return ph;
}

// Out of core, the cheapest first: the JK set's arrays on disk with the least blocks, the products
// dropped, then the amplitude blocks with every row of B and Γ on disk and as many rows in memory
// as fit beside them and beside the other phases (they all grow with the rows); then the room left
// to the products, the JK set's rows and blocks. orbitals_that_fit(p): p's amplitude blocks as
// large as fit.
void fit_out_of_core(Mp2GradientPlan& p, std::size_t ram_bytes,
                     const std::function<std::size_t(const Mp2GradientPlan&)>& peak,
                     const std::function<void(Mp2GradientPlan&)>& orbitals_that_fit) {
  p.jk_layout = {0, 0};
  p.keeps_occupied_products = p.closed_shell() && peak(p) <= ram_bytes;
  if (peak(p) > ram_bytes) {
    p.ram_rows = 0;
    orbitals_that_fit(p);
    p.ram_rows = most_ram_rows(p.sets[0].naux, ram_bytes, [&](std::size_t rows) {
      Mp2GradientPlan trial = p;
      trial.ram_rows = rows;
      return peak(trial);
    });
  }
  Mp2GradientPlan with_products = p;
  with_products.keeps_occupied_products = true;
  p.keeps_occupied_products = p.closed_shell() && peak(with_products) <= ram_bytes;
  p.jk_layout = separable_layout_that_fits(p.jk_terms.naux, ram_bytes, [&](const SeparableTermLayout& layout) {
    Mp2GradientPlan trial = p;
    trial.jk_layout = layout;
    return peak(trial);
  });
}

// One set of orbitals as the densities use them.
struct OrbitalSet : CorrelatedOrbitals {
  Eigen::MatrixXd C, C_occ, C_act, C_vir;
  Eigen::Index nmo() const { return C.cols(); }
};

// The plan's sizes with the orbitals' nmo: linear dependencies can only have removed virtuals, so
// every array is at most as planned.
std::vector<Mp2GradientSizes> checked_sizes(const Mp2GradientPlan& plan, const Orbitals& orbitals,
                                            const libint2::BasisSet& ri_aux, const ShellPairs& pairs) {
  std::vector<Mp2GradientSizes> sets = plan.sets;
  const auto nmo = static_cast<std::size_t>(orbitals.C.cols());
  if (sets.size() != static_cast<std::size_t>(orbitals.spin_count()))
    throw std::logic_error("the MP2 gradient's plan is not for these orbitals");
  for (std::size_t s = 0; s < sets.size(); ++s) {
    if (nmo > sets[s].nmo || static_cast<std::size_t>(orbitals.spin(int(s)).nocc) != sets[s].nocc ||
        static_cast<std::size_t>(orbitals.C.rows()) != sets[s].nbf || std::size_t(ri_aux.nbf()) != sets[s].naux ||
        pairs.layout.size() != sets[s].stored || sets[s].nfrozen != sets[0].nfrozen)
      throw std::logic_error("the MP2 gradient's plan is not for these orbitals");
    sets[s].nmo = nmo;
  }
  return sets;
}

std::vector<OrbitalSet> orbital_sets(const Orbitals& orbitals, const std::vector<Mp2GradientSizes>& sizes) {
  std::vector<OrbitalSet> sets;
  for (int s = 0; s < orbitals.spin_count(); ++s) {
    const SpinOrbitals& spin = orbitals.spin(s);
    const Eigen::Index nmo = spin.C.cols(), nfz = static_cast<Eigen::Index>(sizes[std::size_t(s)].nfrozen);
    OrbitalSet set;
    static_cast<CorrelatedOrbitals&>(set) = {nfz, spin.nocc, nmo - spin.nocc, spin.eps};
    set.C = spin.C;
    set.C_occ = spin.C.leftCols(spin.nocc);
    set.C_act = spin.C.middleCols(nfz, spin.nocc - nfz);
    set.C_vir = spin.C.rightCols(nmo - spin.nocc);
    sets.push_back(std::move(set));
  }
  return sets;
}

// Each set's (P|ia), this rank's batches' rows (B_ia^P = Σ_Q M_PQ (Q|ia) in its place later),
// row-major [P][i·v + a].
std::vector<RowStore> form_B(const RiPasses& passes, const std::vector<OrbitalSet>& x, const Mp2GradientPlan& plan,
                             const ScratchDirectory* scratch, Progress& progress, StageWork& work) {
  std::vector<RowStore> B;
  std::vector<TransformSpin> active_virtual;
  const std::size_t naux = passes.sizes.naux;
  for (std::size_t s = 0; s < x.size(); ++s) {
    B.emplace_back(naux, std::size_t(x[s].ov()), plan.ram_rows, passes.budget, scratch,
                   "B_ia^P = M (P|ia)" + set_name(x.size(), s));
    active_virtual.push_back({x[s].C_act, x[s].C_vir, {}, {}});
  }
  progress.begin(x.size() == 1 ? "MP2 gradient: (P|ia) (batches of RI shells)"
                               : "MP2 gradient: (P|ia), α and β (batches of RI shells)");
  passes.occupied_virtual(active_virtual, B, work);
  return B;
}

// Each set's rows of B in memory: the ranges an OffloadEngine keeps on the GPU.
std::vector<std::span<const double>> rows_in_memory(const std::vector<RowStore>& B) {
  std::vector<std::span<const double>> ranges;
  for (const RowStore& set : B) ranges.emplace_back(set.ram(), set.ram_rows() * set.cols());
  return ranges;
}

// The amplitude loop on the CPU's loop's engine, or with its products run on `gpu`.
Mp2AmplitudeSums amplitude_loop(const AmplitudeLoop& cpu, const std::vector<OrbitalSet>& x,
                                const std::vector<Mp2GradientSizes>& s, const Mp2GradientPlan& plan,
                                kernels::JKDevice* gpu, Mp2GradientDensities& out) {
  std::optional<kernels::OffloadEngine> offload;
  if (gpu) offload.emplace(*plan.gpu, *gpu, cpu.engine, rows_in_memory(cpu.B));
  kernels::ComputeEngine& engine = offload ? static_cast<kernels::ComputeEngine&>(*offload) : cpu.engine;
  AmplitudeLoop loop{cpu.fit,    cpu.B,  cpu.gamma, cpu.buffer, cpu.next_buffer, engine,
                     cpu.budget, cpu.comm, cpu.progress, cpu.work};
  if (plan.amplitudes_on_gpu) loop.amplitudes_on_gpu = &*offload;
  const double flops_before = out.work.flops_fp64;
  Mp2AmplitudeSums sums;
  if (plan.closed_shell()) {
    loop.progress.begin("MP2 gradient: amplitudes, P and Γ (blocks of occupied orbitals)");
    sums = closed_shell_amplitudes(x[0], s[0], plan.amplitude_orbitals, plan.keeps_integrals, loop);
  } else {
    loop.progress.begin("MP2 gradient: amplitudes, P and Γ (αα and αβ with k of α, ββ and αβ with k of β)");
    sums = open_shell_amplitudes({x[0], x[1]}, s, loop);
  }
  if (offload) {  // the loop's work (bar the fits of Γ', a small part) at cuBLAS's rate, for the floor
    out.work.add_gpu_flops(out.work.flops_fp64 - flops_before, plan.gpu_gflops);
    out.work.flops_fp64 = flops_before;
    out.gpu_uploaded_bytes = offload->uploaded_bytes();
  }
  return sums;
}

// B (Γ's stores made once its pass is done, as the plan's phases hold them), then the amplitudes'
// loop: the energy, each set's unrelaxed P_ij and P_ab, V_PQ, and Γ_ia^P
// (into out.gamma).
Mp2AmplitudeSums form_gamma(const RiPasses& passes, const std::vector<OrbitalSet>& x,
                            const std::vector<Mp2GradientSizes>& s, const Mp2GradientPlan& plan,
                            const ScratchDirectory* scratch, kernels::JKDevice* gpu, Progress& progress,
                            Mp2GradientDensities& out) {
  MemoryBudget& budget = passes.budget;
  const auto start = std::chrono::steady_clock::now();
  std::vector<RowStore> B = form_B(passes, x, plan, scratch, progress, out.work);
  const std::size_t disk_rows = s[0].naux - plan.ram_rows;
  std::size_t largest_ov = 0;
  for (std::size_t set = 0; set < s.size(); ++set) {
    largest_ov = std::max(largest_ov, s[set].ov());
    out.gamma.emplace_back(s[set].naux, s[set].ov(), plan.ram_rows, budget, scratch,
                           "Γ_ia^P" + set_name(s.size(), set));
  }
  LargeArray<double> buffers = disk_rows > 0 ? budget.allocate<double>(
                                                   2 * ri_read_buffer_elements(s[0].naux, largest_ov, disk_rows),
                                                   "the buffers B_ia^P's rows on disk are read into")
                                             : LargeArray<double>();
  const std::span<double> both(buffers.data(), buffers.size());
  const CoulombFitting fit(passes.metric, passes.engine);
  for (RowStore& set : B) {
    passes.share_rows(set, both);  // every rank holds all of (P|ia)
    fit_in_place(fit, set, both);
    out.work.flops_fp64 += fit.flops(set.cols());
  }
  out.parts.push_back({"ri_b", seconds_since(start)});
  return timed_part(out.parts, "ampl", [&] {
    return amplitude_loop({fit, B, out.gamma, both.first(both.size() / 2), both.last(both.size() / 2), passes.engine,
                           budget, passes.comm, progress, out.work},
                          x, s, plan, gpu, out);
  });
}

// Each set's L1_pi = 2w Σ_aP (P|pa) Γ_ia^P = 2w [Cᵀ Σ_P (P|μν) C_v Γ^Pᵀ]_pi (i active) and L2_pa =
// 2w Σ_iP (P|pi) Γ_ia^P = 2w [Cᵀ Σ_P (P|μν) C_act Γ^P]_pa, p every orbital; the kept RI integrals
// are freed once read.
struct Lagrangian {
  Sets L1, L2;
};
Lagrangian form_L(const RiPasses& passes, const std::vector<OrbitalSet>& x, const std::vector<RowStore>& gamma,
                  double w, KeptRiIntegrals& kept, Progress& progress, StageWork& work) {
  progress.begin(x.size() == 1 ? "MP2 gradient: Σ (P|μν) Γ^P and the Lagrangian (batches of RI shells)"
                               : "MP2 gradient: Σ (P|μν) Γ^P and the Lagrangian, α and β (batches of RI shells)");
  const Eigen::Index m = x[0].nmo() - x[0].nfrozen;
  std::vector<double> flops;
  for (const OrbitalSet& set : x) flops.push_back(4.0 * double(set.C.rows()) * double(set.ov()));
  std::vector<Eigen::MatrixXd> sums = passes.sum_of_products(
      std::vector<Eigen::Index>(x.size(), m),
      [&](std::size_t s, Eigen::Index P, double* R) {
        const OrbitalSet& b = x[s];
        std::vector<double> buffer;
        const Eigen::Map<const RowMajorMatrix> gamma_P(gamma[s].row(static_cast<std::size_t>(P), buffer), b.active(),
                                                       b.nvir);
        Eigen::Map<Eigen::MatrixXd> R_P(R, b.C.rows(), m);
        gemm(passes.engine, Op::none, Op::transpose, 1.0, b.C_vir, gamma_P, 0.0, R_P.leftCols(b.active()));
        gemm(passes.engine, Op::none, Op::none, 1.0, b.C_act, gamma_P, 0.0, R_P.rightCols(b.nvir));
      },
      flops, work);
  kept.rows = LargeArray<double>();
  Lagrangian L;
  for (std::size_t s = 0; s < x.size(); ++s) {
    passes.comm.allreduce_sum(sums[s].data(), static_cast<std::size_t>(sums[s].size()));
    L.L1.push_back(product(passes.engine, Op::transpose, Op::none, 2.0 * w, x[s].C, sums[s].leftCols(x[s].active())));
    L.L2.push_back(product(passes.engine, Op::transpose, Op::none, 2.0 * w, x[s].C, sums[s].rightCols(x[s].nvir)));
  }
  return L;
}

// Each set's P in the MO basis: the MP2 blocks, then frozen–active from the SCF's response,
// Z_fi = −X_fi / (ε_f − ε_i) (X_if is zero), P_fi = ½ Z_fi.
struct MoDensities {
  Sets P, frozen_active;
};
MoDensities form_P(const std::vector<OrbitalSet>& x, const Mp2AmplitudeSums& mp2, const Lagrangian& L) {
  MoDensities out;
  for (std::size_t s = 0; s < x.size(); ++s) {
    const OrbitalSet& b = x[s];
    const Eigen::Index nfz = b.nfrozen, o = b.active();
    Eigen::MatrixXd P = Eigen::MatrixXd::Zero(b.nmo(), b.nmo());
    P.block(nfz, nfz, o, o) = mp2.P_occ[s];
    P.block(b.nocc, b.nocc, b.nvir, b.nvir) = mp2.P_vir[s];
    Eigen::MatrixXd frozen_active(nfz, o);
    for (Eigen::Index f = 0; f < nfz; ++f)
      for (Eigen::Index i = 0; i < o; ++i) {
        frozen_active(f, i) = -L.L1[s](f, i) / (b.eps(f) - b.eps_active(i));
        P(f, nfz + i) = P(nfz + i, f) = 0.5 * frozen_active(f, i);
      }
    out.P.push_back(std::move(P));
    out.frozen_active.push_back(std::move(frozen_active));
  }
  return out;
}

// C M Cᵀ, an MO matrix M in the AO basis, as (C M) Cᵀ.
Eigen::MatrixXd to_ao(kernels::ComputeEngine& engine, const Eigen::MatrixXd& C, const Eigen::MatrixXd& M) {
  return product(engine, Op::none, Op::transpose, 1.0, product(engine, Op::none, Op::none, 1.0, C, M), C);
}

// Each set's Cᵀ F(P) C_o (summed over the ranks): only F's occupied columns are used, its vo block
// in the Z-vector's right-hand side, its oo block in W.
Sets fock_response(FockResponse& response, const std::vector<OrbitalSet>& x, const Sets& P,
                   kernels::ComputeEngine& engine) {
  Sets D;
  for (std::size_t s = 0; s < x.size(); ++s) D.push_back(to_ao(engine, x[s].C, P[s]));
  const Sets FC_occ = response.of_symmetric(D);
  Sets G;
  for (std::size_t s = 0; s < x.size(); ++s)
    G.push_back(product(engine, Op::transpose, Op::none, 1.0, x[s].C, FC_occ[s]));
  return G;
}

// Each set's Z-vector equations: right-hand side −(X_ak − X_ka) and denominators ε_a − ε_k.
ZVectorEquations form_Z_equations(const std::vector<OrbitalSet>& x, const Sets& G, const Lagrangian& L) {
  ZVectorEquations eq;
  for (std::size_t s = 0; s < x.size(); ++s) {
    const OrbitalSet& b = x[s];
    Eigen::MatrixXd lagrangian = G[s].bottomRows(b.nvir) - L.L2[s].topRows(b.nocc).transpose();
    lagrangian.rightCols(b.active()) += L.L1[s].bottomRows(b.nvir);
    Eigen::MatrixXd delta(b.nvir, b.nocc);
    for (Eigen::Index k = 0; k < b.nocc; ++k)
      for (Eigen::Index a = 0; a < b.nvir; ++a) delta(a, k) = b.eps_virtual(a) - b.eps(k);
    eq.C_occ.push_back(b.C_occ);
    eq.C_vir.push_back(b.C_vir);
    eq.delta.push_back(std::move(delta));
    eq.b.push_back(-lagrangian);
  }
  return eq;
}

// Set s's relaxed P (its vo block ½ z) into out.relaxed, and its W, the coefficients of S^x_pq
// block by block (mp2_relaxed_density.hpp), added to out.energy_weighted.
void form_W(std::size_t s, const OrbitalSet& b, const Mp2AmplitudeSums& mp2, const Lagrangian& L,
            MoDensities& mo, const Sets& G, const ZVector& solution, kernels::ComputeEngine& engine,
            Mp2GradientDensities& out) {
  const Eigen::Index nfz = b.nfrozen, o = b.active(), v = b.nvir, nocc = b.nocc;
  const Eigen::MatrixXd& z = solution.z[s];
  Eigen::MatrixXd& P = mo.P[s];
  P.block(nocc, 0, v, nocc) = 0.5 * z;
  P.block(0, nocc, nocc, v) = 0.5 * z.transpose();
  out.relaxed.push_back(to_ao(engine, b.C, P));
  Eigen::MatrixXd W = Eigen::MatrixXd::Zero(b.nmo(), b.nmo());
  const Eigen::MatrixXd X_vir = 2.0 * b.eps.tail(v).asDiagonal() * mp2.P_vir[s] + L.L2[s].bottomRows(v);
  W.block(nocc, nocc, v, v) = 0.25 * (X_vir + X_vir.transpose());
  const Eigen::MatrixXd X_act = 2.0 * b.eps.segment(nfz, o).asDiagonal() * mp2.P_occ[s] + L.L1[s].middleRows(nfz, o);
  W.block(nfz, nfz, o, o) = 0.25 * (X_act + X_act.transpose());
  for (Eigen::Index f = 0; f < nfz; ++f)
    for (Eigen::Index i = 0; i < o; ++i)
      W(f, nfz + i) = W(nfz + i, f) = 0.5 * mo.frozen_active[s](f, i) * b.eps_active(i);
  const Eigen::MatrixXd W_vo = 0.5 * (L.L2[s].topRows(nocc).transpose() + z * b.eps.head(nocc).asDiagonal());
  W.block(nocc, 0, v, nocc) = W_vo;
  W.block(0, nocc, nocc, v) = W_vo.transpose();
  // The occupied block of F(P) for the relaxed P: the MP2 blocks' and the Z-vector's.
  W.topLeftCorner(nocc, nocc) += 0.5 * (G[s].topRows(nocc) + solution.occupied_response[s]);
  if (s == 0)
    out.energy_weighted = to_ao(engine, b.C, W);
  else
    out.energy_weighted += to_ao(engine, b.C, W);
}

}  // namespace

Mp2GradientPlan plan_mp2_gradient(const libint2::BasisSet& ri_aux, const std::vector<Mp2GradientSizes>& sets,
                                  const SeparableTermSizes& jk_terms, std::size_t ram_bytes, int ranks,
                                  bool fp32_z_vector, std::optional<kernels::GpuResponsePlan> z_vector_gpu) {
  Mp2GradientPlan p;
  p.sets = sets;
  p.z_vector_gpu = std::move(z_vector_gpu);
  const Mp2GradientSizes& sizes = sets[0];
  p.ram_rows = sizes.naux;
  const std::size_t ri_shell = largest_shell(ri_aux);
  p.jk_terms = jk_terms;
  p.jk_layout.ram_rows = jk_terms.naux;
  p.ri_largest_shell = ri_shell;
  p.keeps_occupied_products = p.closed_shell();
  // About kBlockColumns columns k·b in RHF's amplitude block's GEMMs run them at full rate; and
  // every rank should have a block. UHF's loop makes one orbital k at a time.
  constexpr std::size_t kBlockColumns = 1024;
  const std::size_t active = std::max<std::size_t>(sizes.active(), 1);
  const std::size_t full_rate =
      p.closed_shell() ? std::min(share_of(active, 0, ranks).size(),
                                  (kBlockColumns + sizes.nvir() - 1) / std::max<std::size_t>(sizes.nvir(), 1))
                       : 1;
  const auto orbitals_that_fit = [&](Mp2GradientPlan& plan) {
    plan.amplitude_orbitals = full_rate;
    while (plan.amplitude_orbitals > 1 && gradient_phases(sets, ri_shell, plan).amplitudes.ram_bytes() > ram_bytes)
      --plan.amplitude_orbitals;
  };
  orbitals_that_fit(p);
  const auto peak = [&](const Mp2GradientPlan& trial) {
    return gradient_phases(sets, ri_shell, trial).peak().ram_bytes();
  };
  if (peak(p) > ram_bytes) fit_out_of_core(p, ram_bytes, peak, orbitals_that_fit);
  // Then, each in the room the ones before leave: RHF's kept I (it saves the most), the RI
  // integrals between the passes, the Z-vector's fp32 copies.
  const auto fits_with = [&](bool Mp2GradientPlan::*choice, bool whole_peak) {
    Mp2GradientPlan trial = p;
    trial.*choice = true;
    const RiGradientPhases phases = gradient_phases(sets, ri_shell, trial);
    return (whole_peak ? phases.peak() : phases.amplitudes).ram_bytes() <= ram_bytes;
  };
  p.keeps_integrals = p.closed_shell() && ranks == 1 && fits_with(&Mp2GradientPlan::keeps_integrals, false);
  p.keeps_ri_integrals = ranks == 1 && fits_with(&Mp2GradientPlan::keeps_ri_integrals, true);
  p.fp32_z_vector = fp32_z_vector && !p.z_vector_gpu && fits_with(&Mp2GradientPlan::fp32_z_vector, true);
  const auto phases = [&](std::size_t functions) { return gradient_phases(sets, functions, p); };
  p.batch_functions = ri_batch_functions(ri_aux, sets, ram_bytes, ranks, phases, p.keeps_ri_integrals);
  p.densities = phases(p.batch_functions).peak();
  p.densities.note = rows_in_memory_note(p);
  return p;
}

Mp2GradientDensities mp2_gradient_densities(const libint2::BasisSet& obs, const libint2::BasisSet& ri_aux,
                                            const ShellPairs& pairs, FockBuilder& scf_fock,
                                            const Orbitals& orbitals, const Mp2GradientPlan& plan, MemoryBudget& budget,
                                            const ScratchDirectory* scratch, Communicator& comm,
                                            kernels::ComputeEngine& engine, kernels::JKDevice* gpu,
                                            double z_convergence, Progress& progress) {
  const std::vector<Mp2GradientSizes> s = checked_sizes(plan, orbitals, ri_aux, pairs);
  const std::vector<OrbitalSet> x = orbital_sets(orbitals, s);
  Mp2GradientDensities out;
  out.electrons_per_orbital = 2.0 / double(x.size());
  const auto fit_memory = budget.reserve(ri_fit_bytes(s[0].naux), "the RI metric, its fit and V_PQ");
  const Eigen::MatrixXd metric = coulomb_metric(ri_aux);
  if (plan.keeps_ri_integrals && comm.size() > 1) throw std::logic_error("the RI integrals are kept on one rank only");
  KeptRiIntegrals kept;
  if (plan.keeps_ri_integrals) kept.rows = budget.allocate<double>(s[0].ao_batch(s[0].naux), kKeptRiIntegrals);
  const RiPasses passes{obs, ri_aux, pairs, metric, s[0], plan.batch_functions, budget, comm, engine,
                        [&progress](double done) { progress.fraction(done); },
                        plan.keeps_ri_integrals ? &kept : nullptr};
  const Mp2AmplitudeSums mp2 = form_gamma(passes, x, s, plan, scratch, gpu, progress, out);
  out.energy = mp2.energy;
  out.metric = mp2.V;
  const Lagrangian L = timed_part(out.parts, "ri_lag", [&] {
    return form_L(passes, x, out.gamma, out.electrons_per_orbital, kept, progress, out.work);
  });
  MoDensities mo = form_P(x, mp2, L);

  progress.message("MP2 gradient: the orbital Lagrangian's J/K, then the Z-vector");
  const auto z_vector_start = std::chrono::steady_clock::now();
  Sets C_occ;
  for (const OrbitalSet& set : x) C_occ.push_back(set.C_occ);
  std::optional<ResponseOnGpu> on_gpu;
  if (gpu && plan.z_vector_gpu) on_gpu.emplace(*plan.z_vector_gpu, *gpu, plan.gpu_gflops);
  const std::unique_ptr<FockResponse> response =
      scf_fock.occupied_response(C_occ, budget, plan.fp32_z_vector, on_gpu ? &*on_gpu : nullptr);
  const Sets G = fock_response(*response, x, mo.P, engine);
  const ZVector solution = solve_z_vector(*response, form_Z_equations(x, G, L), z_convergence, plan.fp32_z_vector,
                                          engine, comm, progress);
  out.cphf_iterations = solution.iterations;
  for (std::size_t set = 0; set < x.size(); ++set) form_W(set, x[set], mp2, L, mo, G, solution, engine, out);
  out.parts.push_back({"zvector", seconds_since(z_vector_start)});
  out.work += response->work();  // the Fock responses of the Lagrangian and the Z-vector
  out.gpu_uploaded_bytes += response->gpu_uploaded_bytes();
  if (plan.keeps_occupied_products) out.occupied_products = response->release_fitted_occupied_products();
  return out;
}

kernels::GpuResponsePlan plan_z_vector_on_gpu(const std::vector<Mp2GradientSizes>& sets, std::size_t device_bytes) {
  std::vector<std::size_t> nocc;
  for (const Mp2GradientSizes& s : sets) nocc.push_back(s.nocc);
  const Mp2GradientSizes& s = sets[0];
  return kernels::plan_gpu_response(s.nbf, s.stored, s.jk_rows, std::move(nocc), device_bytes);
}

// The amplitudes the loop holds on the GPU while its products read them (hold_operands): RHF, a
// block's t and T (o·v × k·v each); UHF, one k's same-spin t (o·v × v) and opposite-spin t (of the
// other spin's i), the larger spin's of each.
std::size_t held_amplitudes(const Mp2GradientPlan& plan) {
  const std::vector<Mp2GradientSizes>& s = plan.sets;
  if (plan.closed_shell()) return 2 * s[0].ov() * plan.amplitude_orbitals * s[0].nvir();
  return std::max(s[0].ov() * s[0].nvir(), s[1].ov() * s[1].nvir()) +
         std::max(s[1].ov() * s[0].nvir(), s[0].ov() * s[1].nvir());
}

// Each loop's operands are B_kb and Γ_kb (naux × k·v), I, t and T (o·v × k·v, of either set's i),
// V (naux²) and P (o², v², smaller than I), with k·v the columns of a block of orbitals k (UHF:
// one); B's rows on disk come in blocks of the read buffer. t and T are held where they fit.
kernels::GpuOffloadPlan plan_amplitudes_on_gpu(const Mp2GradientPlan& plan, std::size_t device_bytes) {
  const std::size_t naux = plan.sets[0].naux, disk_rows = naux - plan.ram_rows;
  std::size_t largest_ov = 0, largest_v = 0;
  std::vector<std::size_t> ranges;
  for (const Mp2GradientSizes& s : plan.sets) {
    largest_ov = std::max(largest_ov, s.ov());
    largest_v = std::max(largest_v, s.nvir());
    ranges.push_back(plan.ram_rows * s.ov());
  }
  const std::size_t kv = (plan.closed_shell() ? plan.amplitude_orbitals : 1) * largest_v;
  std::size_t largest_other = std::max(std::max(naux, largest_ov) * kv, naux * naux);
  if (disk_rows > 0) largest_other = std::max(largest_other, ri_read_buffer_elements(naux, largest_ov, disk_rows));
  return kernels::plan_gpu_offload(ranges, largest_other,
                                   plan.amplitudes_on_gpu ? gpu_amplitude_elements(plan.sets, plan.amplitude_orbitals)
                                                          : held_amplitudes(plan),
                                   device_bytes, "the MP2 gradient's amplitude products");
}

void plan_amplitude_loop_on_gpu(Mp2GradientPlan& plan, std::size_t device_bytes, bool make_amplitudes_there) {
  plan.amplitudes_on_gpu = make_amplitudes_there;
  plan.gpu = plan_amplitudes_on_gpu(plan, device_bytes);
  if (plan.amplitudes_on_gpu && plan.gpu->held_elements == 0) {  // no room: made on the host, t and T held
    plan.amplitudes_on_gpu = false;
    plan.gpu = plan_amplitudes_on_gpu(plan, device_bytes);
  }
  if (plan.amplitudes_on_gpu && plan.keeps_integrals) {
    plan.keeps_integrals = false;
    drop_kept_integrals(plan.densities, plan.sets[0], plan.amplitude_orbitals);
  }
}

}  // namespace dfmp2
