#include "src/gradient/mp2_amplitudes.hpp"

#include <algorithm>
#include <array>
#include <functional>
#include <optional>
#include <stdexcept>

#include "kernels/pair_schedule.hpp"
#include "src/common/matrix_view.hpp"
#include "src/gradient/ri_passes.hpp"

namespace dfmp2 {
namespace {

using RowMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
// The energy step's pair layer (kernels/pair_schedule.hpp, energy_reduction.hpp): the amplitude
// blocks' pairs are visited by its pair loop and their energies summed by its reduction.
using kernels::detail::PairBlock;
using kernels::detail::PairEnergy;
using kernels::detail::ProgressCounter;
using kernels::Op;
constexpr auto kEveryPair = [](std::size_t, std::size_t) { return true; };
constexpr const char* kBlockIntegrals = "a block of occupied orbitals' I";

// Pairs (i, k) of every i of `rows` with orbitals k of [k0, k0 + nk), as the pair loop takes them.
PairBlock pairs_with(Eigen::Index rows, Eigen::Index k0, Eigen::Index nk) {
  return {0, static_cast<std::size_t>(rows), static_cast<std::size_t>(k0), static_cast<std::size_t>(k0 + nk)};
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
void add_upper_product(kernels::ComputeEngine& engine, Eigen::MatrixXd& C, double alpha, const Matrix& A,
                       const Matrix& B) {
  for (Eigen::Index j0 = 0; j0 < C.cols(); j0 += kUpperColumns) {
    const Eigen::Index width = std::min(kUpperColumns, C.cols() - j0), rows = j0 + width;
    gemm(engine, Op::transpose, Op::none, alpha, A.leftCols(rows), B.middleCols(j0, width), 1.0,
         C.block(0, j0, rows, width));
  }
}

// One pair's t_ab = I_ab / (eps_ij − ε_a − ε_b), ε_a of I's rows and ε_b of its columns, divided as
// the reduction divides: for the pairs it does not visit (their energy is another pair's).
template <typename Out, typename In>
void divide(Out&& t, const In& I, double eps_ij, const double* eps_a, const double* eps_b) {
  for (Eigen::Index a = 0; a < t.rows(); ++a)
    for (Eigen::Index b = 0; b < t.cols(); ++b) t(a, b) = I(a, b) / (eps_ij - eps_a[a] - eps_b[b]);
}

// u − uᵀ in place, u square.
template <typename Square>
void antisymmetrize(Square&& u) {
  for (Eigen::Index a = 0; a < u.rows(); ++a) {
    u(a, a) = 0.0;
    for (Eigen::Index b = a + 1; b < u.cols(); ++b) {
      const double difference = u(a, b) - u(b, a);
      u(a, b) = difference;
      u(b, a) = -difference;
    }
  }
}

// The beta of a GEMM over a row store's blocks of rows P: the first block's product sets C, the
// later ones' add to it.
double beta_of_rows(std::size_t first_P) { return first_P == 0 ? 0.0 : 1.0; }

// What a loop pins on its engine (PinnedHost: a GPU's copies of them then run at the link's rate):
// its arrays copied at every block (null: none), and the buffers B's rows on disk are read into.
std::vector<std::span<const double>> copied_arrays(const AmplitudeLoop& loop,
                                                   std::vector<const LargeArray<double>*> arrays) {
  std::vector<std::span<const double>> out{loop.buffer, loop.next_buffer};
  for (const LargeArray<double>* array : arrays)
    if (array != nullptr) out.emplace_back(array->data(), array->size());
  return out;
}

// Σ over the ranks of each set's P (V's by metric_lagrangian).
void sum_over_ranks(Mp2AmplitudeSums& sums, Communicator& comm) {
  for (std::vector<Eigen::MatrixXd>* blocks : {&sums.P_occ, &sums.P_vir})
    for (Eigen::MatrixXd& P : *blocks) comm.allreduce_sum(P.data(), static_cast<std::size_t>(P.size()));
}

// The closed-shell loop, `step` occupied orbitals k at a time: I_ia,kb = Σ_P B_ia^P B_kb^P, then
// t_ik^ab and T_ik^ab, each row-major [i][a][k][b], then Γ_kb^P = Σ_Q M_QP Σ_ia B_ia^Q T_ia,kb
// (T_ia,kb = T_kb,ia) for the block's columns. Each block reads B's rows in blocks, twice: for I,
// then for Γ. A block of k's, not one, gives the GEMMs of I and Γ (whose other dimensions are o·v
// and naux) k·v columns. V_PQ = Σ_ia c_ia^P Γ_ia^Q with c = Mᵀ B is Mᵀ (Σ_kb B_kb Γ'_kbᵀ) M, Γ'
// before Mᵀ. keeps_integrals (one rank): block kb's GEMMs make only its rows i of blocks ib ≥ kb,
// each block pair (kb, ib) into a slot of an array that keeps it until block ib has read its rows
// i of block kb there, transposed (I_ia,kb = I_kb,ia); at most (kb + 1)(m − kb) pairs of the m
// blocks are kept at once. Otherwise the ranks share the blocks, each block makes all its rows
// into one reused array, and each rank sends the others its blocks' Γ.
class ClosedShellPairs {
 public:
  ClosedShellPairs(const CorrelatedOrbitals& x, const Mp2GradientSizes& s, std::size_t block, bool keeps_integrals,
                   AmplitudeLoop& loop)
      : x_(x), s_(s), loop_(loop), B_(loop.B[0]), keeps_(keeps_integrals),
        o_(x.active()), v_(x.nvir), ov_(x.ov()), naux_(static_cast<Eigen::Index>(s.naux)),
        step_(static_cast<Eigen::Index>(block)), blocks_((o_ + step_ - 1) / step_),
        slot_size_(static_cast<std::size_t>(step_ * v_ * step_ * v_)),
        integrals_(keeps_ ? loop.budget.allocate<double>(s.kept_integrals(block), kKeptIntegrals)
                          : loop.budget.allocate<double>(s.amplitude_block(block), "a block of orbitals' I_ia,kb")),
        t_block_(loop.budget.allocate<double>(s.amplitude_block(block), "a block of orbitals' t_ik^ab")),
        T_block_(loop.budget.allocate<double>(s.amplitude_block(block), "a block of orbitals' T_ik^ab")),
        factors_(loop.budget.allocate<double>(2 * s.naux * block * s.nvir(),
                                              "a block of orbitals' B_kb^P and Γ_kb^P")),
        pinned_(loop.engine, copied_arrays(loop, copied_each_block())),
        slot_of_(static_cast<std::size_t>(blocks_ * blocks_), -1) {
    if (keeps_ && loop.comm.size() > 1) throw std::logic_error("I_ia,kb is kept on one rank only");
    if (keeps_ && loop.amplitudes_on_gpu) throw std::logic_error("I_ia,kb made on the GPU is not kept");
    if (keeps_)
      for (auto slot = static_cast<Eigen::Index>(s.kept_integrals(block) / slot_size_); slot-- > 0;)
        free_slots_.push_back(slot);
  }
  Mp2AmplitudeSums run();

  static constexpr const char* kKeptIntegrals = "I_ia,kb of the block pairs still to be read";

 private:
  // B_k and Γ'_k; t and T (held) and I (back from the GPU) unless made there; not a kept I, whose
  // every slot crosses once.
  std::vector<const LargeArray<double>*> copied_each_block() const {
    if (loop_.amplitudes_on_gpu) return {&factors_};
    if (keeps_) return {&t_block_, &T_block_, &factors_};
    return {&integrals_, &t_block_, &T_block_, &factors_};
  }
  Eigen::Index width(Eigen::Index block_index) const { return std::min(step_, o_ - block_index * step_) * v_; }
  // Block kb's I rows i of block ib (ib·step ≤ i < ib·step + step), row-major [i][a][k][b]: a kept
  // slot, or rows of the reused array.
  Eigen::Map<RowMajorMatrix> integrals_of(Eigen::Index kb, Eigen::Index ib) {
    double* rows = keeps_ ? integrals_.data() + slot_of_[static_cast<std::size_t>(kb * blocks_ + ib)] * slot_size_
                          : integrals_.data() + ib * step_ * v_ * width(kb);
    return Eigen::Map<RowMajorMatrix>(rows, width(ib), width(kb));
  }
  double block_flops(Eigen::Index k0) const;
  void form_integrals(Eigen::Index k0, const Eigen::Map<RowMajorMatrix>& B_k);
  void form_amplitudes(Eigen::Index k0);
  // The block's arrays placed on the GPU (I before its products write it), then t and T made there.
  kernels::ClosedShellBlock place_on_gpu(Eigen::Index k0, Eigen::Index nk);
  void form_amplitudes_on_gpu(const kernels::ClosedShellBlock& block);
  void form_P(Eigen::Index nk);
  void form_gamma(Eigen::Index k0, const Eigen::Map<RowMajorMatrix>& B_k, Eigen::Map<RowMajorMatrix>& gamma_k);

  const CorrelatedOrbitals& x_;
  const Mp2GradientSizes& s_;
  AmplitudeLoop& loop_;
  const RowStore& B_;
  const bool keeps_;
  const Eigen::Index o_, v_, ov_, naux_, step_, blocks_;
  const std::size_t slot_size_;
  LargeArray<double> integrals_, t_block_, T_block_, factors_;
  const kernels::PinnedHost pinned_;   // before the arrays go
  std::vector<double> pair_energies_;  // on the GPU's path: each pair's (os, ss) of a block
  // The kept slots, (step·v)² elements each: which holds block pair (kb, ib), and which are free.
  std::vector<Eigen::Index> slot_of_, free_slots_;
  Mp2AmplitudeSums out_;
  double e_os_ = 0.0, e_ss_ = 0.0;
  RowMajorMatrix V_inner_;       // Σ_kb B_kb Γ'_kbᵀ
};

// A block's GEMMs: I, 2 (o − from)·v·kv·naux; Γ, 2 ov·kv·naux; V, 2 naux²·kv; P_ij, 2 o²·v·kv;
// P_ab, 2 v²·ov·nk; and Mᵀ on Γ. Progress counts them: with I kept, the later blocks make fewer
// rows.
double ClosedShellPairs::block_flops(Eigen::Index k0) const {
  const Eigen::Index first_row = keeps_ ? k0 : 0;
  const double nk = double(std::min(step_, o_ - k0)), kv = nk * double(v_);
  return 2.0 * kv * (double((o_ - first_row) * v_) * double(naux_) + double(ov_) * double(naux_ + o_) +
                     double(naux_) * double(naux_)) +
         2.0 * nk * double(ov_) * upper_elements(v_) + loop_.fit.flops(static_cast<std::size_t>(kv));
}

void ClosedShellPairs::form_integrals(Eigen::Index k0, const Eigen::Map<RowMajorMatrix>& B_k) {
  const Eigen::Index kb = k0 / step_, kv = B_k.cols();
  if (keeps_)
    for (Eigen::Index ib = kb; ib < blocks_; ++ib) {
      slot_of_[static_cast<std::size_t>(kb * blocks_ + ib)] = free_slots_.back();
      free_slots_.pop_back();
    }
  B_.for_each_block(loop_.buffer, loop_.next_buffer, [&](std::size_t first_P, std::size_t count, const double* rows) {
    const Eigen::Map<const RowMajorMatrix> B_rows(rows, static_cast<Eigen::Index>(count), ov_);
    const auto B_k_rows = B_k.middleRows(static_cast<Eigen::Index>(first_P), static_cast<Eigen::Index>(count));
    if (keeps_)
      for (Eigen::Index ib = kb; ib < blocks_; ++ib)
        gemm(loop_.engine, Op::transpose, Op::none, 1.0, B_rows.middleCols(ib * step_ * v_, width(ib)), B_k_rows,
             beta_of_rows(first_P), integrals_of(kb, ib));
    else
      gemm(loop_.engine, Op::transpose, Op::none, 1.0, B_rows, B_k_rows, beta_of_rows(first_P),
           Eigen::Map<RowMajorMatrix>(integrals_.data(), ov_, kv));
  });
}

// t_ik and T_ik of every pair (i, k) of the block from I_ik: this block's rows, or, for i before
// them, an earlier block's (rows k·v + b, columns i·v + a: I_ik = I_kiᵀ). As in the energy step
// (i ≥ j), only the pairs i ≥ k sum their E_OS = Σ t·I and E_SS = Σ (T − t)·I, by its reduction,
// twice for i > k (pair (k, i)'s energy is theirs, Δ_ab being symmetric in a, b), and their t is
// the reduction's own quotients; then the slots every pair (ib ≤ kb, kb) was read from.
void ClosedShellPairs::form_amplitudes(Eigen::Index k0) {
  const Eigen::Index nk = std::min(step_, o_ - k0), kv = nk * v_, kb = k0 / step_, v = v_;
  Eigen::Map<RowMajorMatrix> t(t_block_.data(), ov_, kv), T(T_block_.data(), ov_, kv);
  const double* eps_vir = x_.eps.data() + x_.nocc;
  const PairEnergy e = kernels::detail::sum_pairs(pairs_with(o_, 0, nk), kEveryPair, [&](std::size_t p, std::size_t q) {
    const auto i = static_cast<Eigen::Index>(p), k = static_cast<Eigen::Index>(q), ib = i / step_;
    const Eigen::Index i_in = (i - ib * step_) * v;
    const bool direct = ib >= kb || !keeps_;  // every i ≥ k is
    const Eigen::Map<RowMajorMatrix> rows = direct ? integrals_of(kb, ib) : integrals_of(ib, kb);
    const auto I = direct ? rows.block(i_in, k * v, v, v) : rows.block(k * v, i_in, v, v);
    auto t_ik = t.block(i * v, k * v, v, v);
    const double eps_ik = x_.eps_active(i) + x_.eps_active(k0 + k);
    PairEnergy energy;
    if (i >= k0 + k) {
      const double weight = i == k0 + k ? 1.0 : 2.0;
      energy = kernels::detail::reduce_pair_keeping(I.data(), static_cast<std::size_t>(I.outerStride()),
                                                    static_cast<std::size_t>(v), eps_ik, eps_vir, t_ik.data(),
                                                    static_cast<std::size_t>(t.outerStride()));
      energy = {weight * energy.os, weight * energy.ss};
    } else if (direct) {
      divide(t_ik, I, eps_ik, eps_vir, eps_vir);
    } else {
      divide(t_ik, I.transpose(), eps_ik, eps_vir, eps_vir);
    }
    T.block(i * v, k * v, v, v) = 2.0 * t_ik - t_ik.transpose();
    return energy;
  });
  e_os_ += e.os;
  e_ss_ += e.ss;
  if (keeps_)
    for (Eigen::Index ib = 0; ib <= kb; ++ib)
      free_slots_.push_back(slot_of_[static_cast<std::size_t>(ib * blocks_ + kb)]);
}

kernels::ClosedShellBlock ClosedShellPairs::place_on_gpu(Eigen::Index k0, Eigen::Index nk) {
  kernels::OffloadEngine& gpu = *loop_.amplitudes_on_gpu;
  const auto elements = static_cast<std::size_t>(ov_ * nk * v_), o = static_cast<std::size_t>(o_);
  pair_energies_.resize(2 * o * static_cast<std::size_t>(nk));
  kernels::ClosedShellBlock block;
  block.I = gpu.place({integrals_.data(), elements});
  block.t = gpu.place({t_block_.data(), elements});
  block.T = gpu.place({T_block_.data(), elements});
  block.energies = gpu.place(pair_energies_);
  block.eps_occ = gpu.hold({x_.eps.data() + x_.nfrozen, o});
  block.eps_vir = gpu.hold({x_.eps.data() + x_.nocc, static_cast<std::size_t>(v_)});
  if (!block.I || !block.t || !block.T || !block.energies || !block.eps_occ || !block.eps_vir)
    throw std::logic_error("the GPU's room for the amplitudes is smaller than planned");
  block.o = o;
  block.v = static_cast<std::size_t>(v_);
  block.k0 = static_cast<std::size_t>(k0);
  block.nk = static_cast<std::size_t>(nk);
  return block;
}

// The pairs' energies come back, summed in the CPU loop's order of pairs (i, k).
void ClosedShellPairs::form_amplitudes_on_gpu(const kernels::ClosedShellBlock& block) {
  kernels::JKDevice& device = loop_.amplitudes_on_gpu->device();
  device.closed_shell_amplitudes(block);
  device.copy_from(pair_energies_.data(), block.energies, sizeof(double) * pair_energies_.size());
  device.synchronise();
  for (std::size_t pair = 0; pair < pair_energies_.size(); pair += 2) {
    e_os_ += pair_energies_[pair];
    e_ss_ += pair_energies_[pair + 1];
  }
}

// P_ij −= 2 Σ_kab t_ik^ab T_jk^ab (rows i of [a][k][b]); P_ab = 2 Σ_ijc t_ij^ac T_ij^bc is, summed
// over every k, 2 Σ_ick t_ik^ca T_ik^cb (t_ik^ca = t_ki^ac): rows [i][c][k] of [b], one product's
// upper triangle.
void ClosedShellPairs::form_P(Eigen::Index nk) {
  const Eigen::Index kv = nk * v_;
  const Eigen::Map<const RowMajorMatrix> t_rows(t_block_.data(), o_, v_ * kv), T_rows(T_block_.data(), o_, v_ * kv);
  gemm(loop_.engine, Op::none, Op::transpose, -2.0, t_rows, T_rows, 1.0, out_.P_occ[0]);
  const Eigen::Map<const RowMajorMatrix> t_by_b(t_block_.data(), ov_ * nk, v_), T_by_b(T_block_.data(), ov_ * nk, v_);
  add_upper_product(loop_.engine, out_.P_vir[0], 2.0, t_by_b, T_by_b);
}

// Γ'_kb^P = Σ_ia B_ia^P T_ia,kb, then V's inner sum, then Γ_kb = Mᵀ Γ'_kb into the store.
void ClosedShellPairs::form_gamma(Eigen::Index k0, const Eigen::Map<RowMajorMatrix>& B_k,
                                  Eigen::Map<RowMajorMatrix>& gamma_k) {
  const Eigen::Index kv = B_k.cols();
  const Eigen::Map<RowMajorMatrix> T(T_block_.data(), ov_, kv);
  B_.for_each_block(loop_.buffer, loop_.next_buffer, [&](std::size_t first_P, std::size_t count, const double* rows) {
    const auto P_rows = static_cast<Eigen::Index>(count);
    gemm(loop_.engine, Op::none, Op::none, 1.0, Eigen::Map<const RowMajorMatrix>(rows, P_rows, ov_), T, 0.0,
         gamma_k.middleRows(static_cast<Eigen::Index>(first_P), P_rows));
  });
  gemm(loop_.engine, Op::none, Op::transpose, 1.0, B_k, gamma_k, 1.0, V_inner_);
  loop_.fit.apply_transpose(gamma_k.data(), static_cast<std::size_t>(kv));
  loop_.gamma[0].write(0, s_.naux, static_cast<std::size_t>(k0 * v_), static_cast<std::size_t>(kv), gamma_k.data(),
                       static_cast<std::size_t>(kv));
}

Mp2AmplitudeSums ClosedShellPairs::run() {
  Communicator& comm = loop_.comm;
  out_.P_occ = {Eigen::MatrixXd::Zero(o_, o_)};
  out_.P_vir = {Eigen::MatrixXd::Zero(v_, v_)};
  V_inner_ = RowMajorMatrix::Zero(naux_, naux_);
  const Eigen::Index first = step_ * comm.rank(), stride = step_ * comm.size();
  double my_flops = 0.0;
  for (Eigen::Index k0 = first; k0 < o_; k0 += stride) my_flops += block_flops(k0);
  const std::function<void(double)> report = [this](double done) { loop_.progress.fraction(done); };
  ProgressCounter progress(report, static_cast<std::size_t>(my_flops));
  for (Eigen::Index k0 = first; k0 < o_; k0 += stride) {
    const Eigen::Index nk = std::min(step_, o_ - k0), kv = nk * v_;
    Eigen::Map<RowMajorMatrix> B_k(factors_.data(), naux_, kv), gamma_k(factors_.data() + naux_ * kv, naux_, kv);
    B_.read(0, s_.naux, static_cast<std::size_t>(k0 * v_), static_cast<std::size_t>(kv), B_k.data(),
            static_cast<std::size_t>(kv));
    const kernels::OperandRelease release(loop_.engine);  // what the block held or placed on a GPU
    if (loop_.amplitudes_on_gpu) {
      const kernels::ClosedShellBlock block = place_on_gpu(k0, nk);
      form_integrals(k0, B_k);
      form_amplitudes_on_gpu(block);
    } else {
      form_integrals(k0, B_k);
      form_amplitudes(k0);
      // t and T, read by the products of P and Γ, copied once where the engine multiplies
      const auto elements = static_cast<std::size_t>(ov_ * kv);
      loop_.engine.hold_operands({t_block_.data(), elements});
      loop_.engine.hold_operands({T_block_.data(), elements});
    }
    form_P(nk);
    form_gamma(k0, B_k, gamma_k);
    loop_.work.flops_fp64 += block_flops(k0);
    progress.add(static_cast<std::size_t>(block_flops(k0)));
    progress.report();
  }
  progress.finish();
  comm.allreduce_sum(&e_os_, 1);
  comm.allreduce_sum(&e_ss_, 1);
  out_.energy.os = e_os_;
  out_.energy.ss = e_ss_;
  sum_over_ranks(out_, comm);
  out_.P_vir[0].triangularView<Eigen::StrictlyLower>() = out_.P_vir[0].transpose();
  for (Eigen::Index kb = 0; kb < blocks_; ++kb)  // each block's Γ from the rank that made it
    broadcast_columns(loop_.gamma[0], static_cast<std::size_t>(kb * step_ * v_), static_cast<std::size_t>(width(kb)),
                      round_robin_owner(static_cast<std::size_t>(kb), comm.size()), factors_.data(), comm);
  out_.V = metric_lagrangian(loop_.fit, std::move(V_inner_), comm, loop_.work);
  return std::move(out_);
}

}  // namespace

namespace {

// Elements of one occupied orbital k's arrays, the larger spin's of k: I (the same-spin or the
// opposite-spin pairs', one at a time), t of the same-spin pairs, t of the opposite-spin pairs,
// with every active i of a spin, a of i's and b of k's.
struct OpenShellBlocks {
  std::size_t I = 0, same = 0, opposite = 0;
};
OpenShellBlocks open_shell_blocks(const std::vector<Mp2GradientSizes>& s) {
  OpenShellBlocks out;
  for (int k = 0; k < 2; ++k) {
    out.same = std::max(out.same, s[k].ov() * s[k].nvir());
    out.opposite = std::max(out.opposite, s[1 - k].ov() * s[k].nvir());
  }
  out.I = std::max(out.same, out.opposite);
  return out;
}

// The open-shell loop: the pairs with one occupied orbital k of spin σ at a time (this rank's
// every size-th): the same-spin ones with every active i of σ, I_ia,kb = Σ_P B_ia^P B_kb^P,
// t_ik^ab row-major [i][a][b] (antisymmetric in a, b, so Σ_ic t_ik^ac t_ik^bc = (tᵀ t)_ab), and
// the opposite-spin ones with every active I of the other spin, I_IA,kb likewise, t_Ik^Ab =
// I_IA,kb / D; their shares of E (E_αβ from the k of β), of σ's P_ab and both spins' P_ij; then
// Γ's columns of k, complete with it, Γ_kb^P = Σ_Q M_QP (Σ_ia B_ia^Q t_ik^ab + Σ_IA B_IA^Q
// t_Ik^Ab) (t_ik^ab = t_ki^ba), written to σ's store. Each k reads both spins' B twice, in blocks
// of rows: for I, then for Γ.
class OpenShellPairs {
 public:
  OpenShellPairs(const std::vector<CorrelatedOrbitals>& x, const std::vector<Mp2GradientSizes>& s, AmplitudeLoop& loop)
      : x_(x), loop_(loop), naux_(static_cast<Eigen::Index>(s[0].naux)), blocks_(open_shell_blocks(s)),
        amplitudes_(loop.budget.allocate<double>(blocks_.I + blocks_.same + blocks_.opposite, kAmplitudes)),
        factors_(loop.budget.allocate<double>(2 * s[0].naux * std::max(s[0].nvir(), s[1].nvir()), kFactors)),
        pinned_(loop.engine, copied_arrays(loop, {&factors_, loop.amplitudes_on_gpu ? nullptr : &amplitudes_})) {}
  Mp2AmplitudeSums run();

  static constexpr const char* kAmplitudes = "one occupied orbital's I, same-spin t and opposite-spin t";
  static constexpr const char* kFactors = "one occupied orbital's B_kb^P and Γ_kb^P";

 private:
  // On the GPU's path, one k's I and both t placed in the offload engine's room, with the pairs'
  // energies and each spin's active and virtual orbitals' energies held there.
  struct OnGpu {
    double *I, *t_same, *t_opposite, *energies;
    std::array<const double*, 2> eps_occ, eps_vir;
  };

  double* I_data() { return amplitudes_.data(); }
  double* t_same_data() { return I_data() + blocks_.I; }
  double* t_opposite_data() { return t_same_data() + blocks_.same; }
  // I_ia,kb of spin `of`'s i with k of σ (B_k: its B_kb): Σ over blocks of rows P of B[of]ᵀ B_k.
  Eigen::Map<RowMajorMatrix> integrals(int of, const Eigen::Map<RowMajorMatrix>& B_k);
  OnGpu place_on_gpu();
  // t of k of σ with every i of spin `of` made on the GPU from I there; returns Σ t·I over the pairs
  // from i = first_counted on (same spin: i > k; opposite spins: every i, or none).
  double amplitudes_on_gpu(int of, int sigma, Eigen::Index k, Eigen::Index first_counted);
  // t made on the CPU threads and held for its products; returns the energy the loop counts.
  double same_spin_on_host(int sigma, Eigen::Index k, const Eigen::Map<RowMajorMatrix>& I);
  double opposite_spin_on_host(int sigma, Eigen::Index k, const Eigen::Map<RowMajorMatrix>& I);
  void same_spin(int sigma, Eigen::Index k, const Eigen::Map<RowMajorMatrix>& B_k);
  void opposite_spin(int sigma, Eigen::Index k, const Eigen::Map<RowMajorMatrix>& B_k);
  void form_gamma(int sigma, Eigen::Index k, const Eigen::Map<RowMajorMatrix>& B_k);
  void pairs_of(int sigma, ProgressCounter& progress);

  const std::vector<CorrelatedOrbitals>& x_;
  AmplitudeLoop& loop_;
  const Eigen::Index naux_;
  const OpenShellBlocks blocks_;
  LargeArray<double> amplitudes_, factors_;
  const kernels::PinnedHost pinned_;  // B_kb^P, Γ'_kb and, unless made on the GPU, I and t: before they go
  std::optional<OnGpu> on_gpu_;        // this k's, with loop.amplitudes_on_gpu
  std::vector<double> pair_energies_;  // on the GPU's path: each pair's Σ t·I of one k
  std::array<double, 2> e_same_{};
  double e_opposite_ = 0.0;
  Mp2AmplitudeSums out_;
  RowMajorMatrix V_inner_;
};

Eigen::Map<RowMajorMatrix> OpenShellPairs::integrals(int of, const Eigen::Map<RowMajorMatrix>& B_k) {
  const Eigen::Index ov_of = x_[static_cast<std::size_t>(of)].ov();
  Eigen::Map<RowMajorMatrix> I(I_data(), ov_of, B_k.cols());
  loop_.B[static_cast<std::size_t>(of)].for_each_block(
      loop_.buffer, loop_.next_buffer, [&](std::size_t first_P, std::size_t count, const double* data) {
        gemm(loop_.engine, Op::transpose, Op::none, 1.0,
             Eigen::Map<const RowMajorMatrix>(data, static_cast<Eigen::Index>(count), ov_of),
             B_k.middleRows(static_cast<Eigen::Index>(first_P), static_cast<Eigen::Index>(count)),
             beta_of_rows(first_P), I);
      });
  return I;
}

OpenShellPairs::OnGpu OpenShellPairs::place_on_gpu() {
  kernels::OffloadEngine& gpu = *loop_.amplitudes_on_gpu;
  std::size_t most_active = 0;
  for (const CorrelatedOrbitals& x : x_) most_active = std::max(most_active, static_cast<std::size_t>(x.active()));
  pair_energies_.resize(most_active);
  OnGpu out{gpu.place({I_data(), blocks_.I}), gpu.place({t_same_data(), blocks_.same}),
            gpu.place({t_opposite_data(), blocks_.opposite}), gpu.place(pair_energies_), {}, {}};
  const auto missing = [](std::size_t elements, const void* there) { return elements > 0 && there == nullptr; };
  bool short_of_room = missing(blocks_.I, out.I) || missing(blocks_.same, out.t_same) ||
                       missing(blocks_.opposite, out.t_opposite) || missing(most_active, out.energies);
  for (std::size_t s = 0; s < 2; ++s) {
    const auto active = static_cast<std::size_t>(x_[s].active()), nvir = static_cast<std::size_t>(x_[s].nvir);
    out.eps_occ[s] = gpu.hold({x_[s].eps.data() + x_[s].nfrozen, active});
    out.eps_vir[s] = gpu.hold({x_[s].eps.data() + x_[s].nocc, nvir});
    short_of_room = short_of_room || missing(active, out.eps_occ[s]) || missing(nvir, out.eps_vir[s]);
  }
  if (short_of_room) throw std::logic_error("the GPU's room for the amplitudes is smaller than planned");
  return out;
}

// The pairs' energies come back when some are counted, summed in the CPU loop's order of i.
double OpenShellPairs::amplitudes_on_gpu(int of, int sigma, Eigen::Index k, Eigen::Index first_counted) {
  const CorrelatedOrbitals &rows = x_[static_cast<std::size_t>(of)], &x = x_[static_cast<std::size_t>(sigma)];
  const bool same_spin = of == sigma;
  const kernels::OpenShellBlock block{on_gpu_->I,
                                      same_spin ? on_gpu_->t_same : on_gpu_->t_opposite,
                                      on_gpu_->eps_occ[static_cast<std::size_t>(of)],
                                      on_gpu_->eps_vir[static_cast<std::size_t>(of)],
                                      on_gpu_->eps_vir[static_cast<std::size_t>(sigma)],
                                      x.eps_active(k),
                                      on_gpu_->energies,
                                      static_cast<std::size_t>(rows.active()),
                                      static_cast<std::size_t>(rows.nvir),
                                      static_cast<std::size_t>(x.nvir),
                                      same_spin};
  kernels::JKDevice& device = loop_.amplitudes_on_gpu->device();
  device.open_shell_amplitudes(block);  // queued before the products that read t, on the same stream
  if (first_counted >= rows.active()) return 0.0;
  device.copy_from(pair_energies_.data(), block.energies, sizeof(double) * block.o);
  device.synchronise();
  double sum = 0.0;
  for (auto i = static_cast<std::size_t>(first_counted); i < block.o; ++i) sum += pair_energies_[i];
  return sum;
}

// t = (I − Iᵀ)/Δ as I/Δ − (I/Δ)ᵀ; the pairs i > k sum their energy and pair (k, i)'s, which is
// theirs (pair (k, k) has none, I_kk being symmetric), by the reduction, whose quotients they keep.
double OpenShellPairs::same_spin_on_host(int sigma, Eigen::Index k, const Eigen::Map<RowMajorMatrix>& I) {
  const CorrelatedOrbitals& x = x_[static_cast<std::size_t>(sigma)];
  const Eigen::Index v = x.nvir;
  Eigen::Map<RowMajorMatrix> t(t_same_data(), x.ov(), v);
  const double* eps_vir = x.eps.data() + x.nocc;
  const PairBlock pairs = pairs_with(x.active(), k, 1);
  const PairEnergy e = kernels::detail::sum_pairs(pairs, kEveryPair, [&](std::size_t p, std::size_t) {
    const auto i = static_cast<Eigen::Index>(p);
    const auto I_i = I.middleRows(i * v, v);
    auto t_i = t.middleRows(i * v, v);
    const double eps_ik = x.eps_active(i) + x.eps_active(k);
    PairEnergy energy;
    if (i > k)
      energy = kernels::detail::reduce_pair_keeping(I_i.data(), static_cast<std::size_t>(v),
                                                    static_cast<std::size_t>(v), eps_ik, eps_vir, t_i.data(),
                                                    static_cast<std::size_t>(v));
    else
      divide(t_i, I_i, eps_ik, eps_vir, eps_vir);
    antisymmetrize(t_i);
    return energy;
  });
  loop_.engine.hold_operands({t_same_data(), static_cast<std::size_t>(x.ov() * v)});  // for P and Γ
  return e.ss;
}

void OpenShellPairs::same_spin(int sigma, Eigen::Index k, const Eigen::Map<RowMajorMatrix>& B_k) {
  const CorrelatedOrbitals& x = x_[static_cast<std::size_t>(sigma)];
  const Eigen::Index v = x.nvir, o = x.active();
  const Eigen::Map<RowMajorMatrix> I = integrals(sigma, B_k);
  // Σ over i > k of Σ t·I, half the sum over every i
  e_same_[static_cast<std::size_t>(sigma)] +=
      on_gpu_ ? amplitudes_on_gpu(sigma, sigma, k, k + 1) : same_spin_on_host(sigma, k, I);
  const Eigen::Map<const RowMajorMatrix> t(t_same_data(), x.ov(), v);
  const Eigen::Map<const RowMajorMatrix> t_rows(t_same_data(), o, v * v);  // rows i of [a][b], for P_ij
  gemm(loop_.engine, Op::none, Op::transpose, -0.5, t_rows, t_rows, 1.0, out_.P_occ[static_cast<std::size_t>(sigma)]);
  gemm(loop_.engine, Op::transpose, Op::none, 0.5, t, t, 1.0, out_.P_vir[static_cast<std::size_t>(sigma)]);
}

// Each αβ pair's energy is summed once, with its k of β.
double OpenShellPairs::opposite_spin_on_host(int sigma, Eigen::Index k, const Eigen::Map<RowMajorMatrix>& I) {
  const CorrelatedOrbitals &x = x_[static_cast<std::size_t>(sigma)], &other = x_[static_cast<std::size_t>(1 - sigma)];
  const Eigen::Index v = x.nvir, va = other.nvir;
  Eigen::Map<RowMajorMatrix> t_other(t_opposite_data(), other.ov(), v);
  const double *eps_a = other.eps.data() + other.nocc, *eps_b = x.eps.data() + x.nocc;
  const PairBlock pairs = pairs_with(other.active(), k, 1);
  const PairEnergy e = kernels::detail::sum_pairs(pairs, kEveryPair, [&](std::size_t p, std::size_t) {
    const auto i = static_cast<Eigen::Index>(p);
    const auto I_i = I.middleRows(i * va, va);
    auto t_i = t_other.middleRows(i * va, va);
    const double eps_ik = other.eps_active(i) + x.eps_active(k);
    if (sigma == 0) {
      divide(t_i, I_i, eps_ik, eps_a, eps_b);
      return PairEnergy{};
    }
    return kernels::detail::reduce_pair_opposite_spin_keeping(
        I_i.data(), static_cast<std::size_t>(v), static_cast<std::size_t>(va), static_cast<std::size_t>(v), eps_ik,
        eps_a, eps_b, t_i.data(), static_cast<std::size_t>(v));
  });
  loop_.engine.hold_operands({t_opposite_data(), static_cast<std::size_t>(other.ov() * v)});  // for P and Γ
  return e.os;
}

void OpenShellPairs::opposite_spin(int sigma, Eigen::Index k, const Eigen::Map<RowMajorMatrix>& B_k) {
  const CorrelatedOrbitals &x = x_[static_cast<std::size_t>(sigma)], &other = x_[static_cast<std::size_t>(1 - sigma)];
  const Eigen::Index v = x.nvir, va = other.nvir, o_other = other.active();
  const Eigen::Map<RowMajorMatrix> I = integrals(1 - sigma, B_k);
  e_opposite_ += on_gpu_ ? amplitudes_on_gpu(1 - sigma, sigma, k, sigma == 1 ? 0 : o_other)
                         : opposite_spin_on_host(sigma, k, I);
  const Eigen::Map<const RowMajorMatrix> t_other(t_opposite_data(), other.ov(), v);
  const Eigen::Map<const RowMajorMatrix> t_rows(t_opposite_data(), o_other, va * v);
  gemm(loop_.engine, Op::none, Op::transpose, -1.0, t_rows, t_rows, 1.0,
       out_.P_occ[static_cast<std::size_t>(1 - sigma)]);
  gemm(loop_.engine, Op::transpose, Op::none, 1.0, t_other, t_other, 1.0, out_.P_vir[static_cast<std::size_t>(sigma)]);
}

// Γ'_kb = Σ_ia B_ia t_ik^ab + Σ_IA B_IA t_Ik^Ab (each block of rows P of Γ' set by the first sum,
// added to by the second), V's inner sum, then Γ_kb = Mᵀ Γ'_kb into σ's store.
void OpenShellPairs::form_gamma(int sigma, Eigen::Index k, const Eigen::Map<RowMajorMatrix>& B_k) {
  const Eigen::Index v = B_k.cols();
  Eigen::Map<RowMajorMatrix> gamma_k(factors_.data() + naux_ * v, naux_, v);
  const std::array<Eigen::Map<const RowMajorMatrix>, 2> t{
      Eigen::Map<const RowMajorMatrix>(t_same_data(), x_[static_cast<std::size_t>(sigma)].ov(), v),
      Eigen::Map<const RowMajorMatrix>(t_opposite_data(), x_[static_cast<std::size_t>(1 - sigma)].ov(), v)};
  for (const int of : {sigma, 1 - sigma})
    loop_.B[static_cast<std::size_t>(of)].for_each_block(
        loop_.buffer, loop_.next_buffer, [&](std::size_t first_P, std::size_t count, const double* data) {
          const Eigen::Map<const RowMajorMatrix>& t_of = t[of == sigma ? 0 : 1];
          gemm(loop_.engine, Op::none, Op::none, 1.0,
               Eigen::Map<const RowMajorMatrix>(data, static_cast<Eigen::Index>(count), t_of.rows()), t_of,
               of == sigma ? 0.0 : 1.0,
               gamma_k.middleRows(static_cast<Eigen::Index>(first_P), static_cast<Eigen::Index>(count)));
        });
  gemm(loop_.engine, Op::none, Op::transpose, 1.0, B_k, gamma_k, 1.0, V_inner_);
  loop_.fit.apply_transpose(gamma_k.data(), static_cast<std::size_t>(v));
  RowStore& gamma = loop_.gamma[static_cast<std::size_t>(sigma)];
  gamma.write(0, gamma.rows(), static_cast<std::size_t>(k * v), static_cast<std::size_t>(v), gamma_k.data(),
              static_cast<std::size_t>(v));
}

// Every k of σ of this rank's, each counted done; per k the two I and Γ', 4 (ov + ov_other)·v·naux;
// V, 2 naux²·v; the same-spin P_ij and P_ab, 2 o²·v² and 2 v²·ov; the opposite-spin ones, 2
// o_other²·va·v and 2 v²·ov_other; Mᵀ on Γ'.
void OpenShellPairs::pairs_of(int sigma, ProgressCounter& progress) {
  const CorrelatedOrbitals &x = x_[static_cast<std::size_t>(sigma)], &other = x_[static_cast<std::size_t>(1 - sigma)];
  const Eigen::Index v = x.nvir, ov = x.ov(), ov_other = other.ov(), o = x.active(), o_other = other.active();
  const RowStore& B = loop_.B[static_cast<std::size_t>(sigma)];
  Eigen::Map<RowMajorMatrix> B_k(factors_.data(), naux_, v);
  double mine = 0.0;
  for (Eigen::Index k = loop_.comm.rank(); k < o; k += loop_.comm.size(), ++mine) {
    B.read(0, B.rows(), static_cast<std::size_t>(k * v), static_cast<std::size_t>(v), B_k.data(),
           static_cast<std::size_t>(v));
    const kernels::OperandRelease release(loop_.engine);  // the t that same_spin and opposite_spin hold or place
    on_gpu_.reset();
    if (loop_.amplitudes_on_gpu) on_gpu_ = place_on_gpu();
    same_spin(sigma, k, B_k);
    opposite_spin(sigma, k, B_k);
    form_gamma(sigma, k, B_k);
    progress.add(1);
    progress.report();
  }
  const double n = double(naux_), vv = double(v);
  loop_.work.flops_fp64 += mine * (4.0 * double(ov + ov_other) * vv * n + 2.0 * n * n * vv +
                                   2.0 * double(o) * double(o) * vv * vv + 2.0 * vv * vv * double(ov) +
                                   2.0 * double(o_other) * double(ov_other) * vv + 2.0 * vv * vv * double(ov_other) +
                                   loop_.fit.flops(static_cast<std::size_t>(v)));
}

Mp2AmplitudeSums OpenShellPairs::run() {
  Communicator& comm = loop_.comm;
  V_inner_ = RowMajorMatrix::Zero(naux_, naux_);
  for (const CorrelatedOrbitals& x : x_) {
    out_.P_occ.push_back(Eigen::MatrixXd::Zero(x.active(), x.active()));
    out_.P_vir.push_back(Eigen::MatrixXd::Zero(x.nvir, x.nvir));
  }
  std::size_t mine = 0;  // this rank's orbitals k
  for (const CorrelatedOrbitals& x : x_)
    for (Eigen::Index k = comm.rank(); k < x.active(); k += comm.size()) ++mine;
  const std::function<void(double)> report = [this](double done) { loop_.progress.fraction(done); };
  ProgressCounter progress(report, mine);
  for (int sigma = 0; sigma < 2; ++sigma) pairs_of(sigma, progress);
  progress.finish();
  comm.allreduce_sum(e_same_.data(), e_same_.size());
  comm.allreduce_sum(&e_opposite_, 1);
  sum_over_ranks(out_, comm);
  for (int sigma = 0; sigma < 2; ++sigma) {
    const auto v = static_cast<std::size_t>(x_[static_cast<std::size_t>(sigma)].nvir);
    for (std::size_t k = 0; k < static_cast<std::size_t>(x_[static_cast<std::size_t>(sigma)].active()); ++k)
      broadcast_columns(loop_.gamma[static_cast<std::size_t>(sigma)], k * v, v, round_robin_owner(k, comm.size()),
                        factors_.data(), comm);  // Γ's columns of k from their rank
  }
  out_.energy = {e_opposite_, e_same_[0] + e_same_[1], e_same_[0], e_same_[1]};
  out_.V = metric_lagrangian(loop_.fit, std::move(V_inner_), comm, loop_.work);
  return std::move(out_);
}

}  // namespace

Mp2AmplitudeSums closed_shell_amplitudes(const CorrelatedOrbitals& orbitals, const Mp2GradientSizes& sizes,
                                         std::size_t block, bool keeps_integrals, AmplitudeLoop& loop) {
  return ClosedShellPairs(orbitals, sizes, block, keeps_integrals, loop).run();
}

Mp2AmplitudeSums open_shell_amplitudes(const std::vector<CorrelatedOrbitals>& orbitals,
                                       const std::vector<Mp2GradientSizes>& sizes, AmplitudeLoop& loop) {
  return OpenShellPairs(orbitals, sizes, loop).run();
}

void closed_shell_amplitude_blocks(StagePlan& phase, const Mp2GradientSizes& s, std::size_t block,
                                   bool keeps_integrals) {
  phase.ram("a block of occupied orbitals' B_kb^P and Γ_kb^P",
            MemoryBudget::double_array_bytes(2 * s.naux * block * s.nvir()));
  phase.ram("a block of occupied orbitals' t and T", 2 * MemoryBudget::double_array_bytes(s.amplitude_block(block)));
  if (keeps_integrals)
    phase.ram(ClosedShellPairs::kKeptIntegrals, MemoryBudget::double_array_bytes(s.kept_integrals(block)));
  else
    phase.ram(kBlockIntegrals, MemoryBudget::double_array_bytes(s.amplitude_block(block)));
}

void drop_kept_integrals(StagePlan& phase, const Mp2GradientSizes& s, std::size_t block) {
  for (PlannedBlock& planned : phase.blocks)
    if (planned.what == ClosedShellPairs::kKeptIntegrals) {
      planned.what = kBlockIntegrals;
      planned.bytes = MemoryBudget::double_array_bytes(s.amplitude_block(block));
    }
}

std::size_t gpu_amplitude_elements(const std::vector<Mp2GradientSizes>& s, std::size_t block) {
  std::size_t orbital_energies = 0, most_active = 0;
  for (const Mp2GradientSizes& set : s) {
    orbital_energies += set.active() + set.nvir();
    most_active = std::max(most_active, set.active());
  }
  if (s.size() == 1) return 3 * s[0].amplitude_block(block) + 2 * s[0].active() * block + orbital_energies;
  const OpenShellBlocks blocks = open_shell_blocks(s);
  return blocks.I + blocks.same + blocks.opposite + most_active + orbital_energies;
}

void open_shell_amplitude_blocks(StagePlan& phase, const std::vector<Mp2GradientSizes>& s) {
  const OpenShellBlocks blocks = open_shell_blocks(s);
  phase.ram(OpenShellPairs::kAmplitudes, MemoryBudget::double_array_bytes(blocks.I) +
                                             MemoryBudget::double_array_bytes(blocks.same) +
                                             MemoryBudget::double_array_bytes(blocks.opposite));
  phase.ram(OpenShellPairs::kFactors,
            MemoryBudget::double_array_bytes(2 * s[0].naux * std::max(s[0].nvir(), s[1].nvir())));
}

}  // namespace dfmp2
