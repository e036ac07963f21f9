#include "src/mp2/df_transform.hpp"

#include <omp.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "kernels/block_packed.hpp"
#include "kernels/compute_engine.hpp"
#include "src/common/row_store.hpp"
#include "src/integrals/density_fitting.hpp"
#include "src/integrals/three_index.hpp"

namespace dfmp2 {
namespace {

constexpr std::size_t kChunkBytes = std::size_t(64) << 20;     // (Q|ia) rows transformed before being placed
constexpr std::size_t kFitBlockBytes = std::size_t(1) << 30;   // (Q|ia) columns fitted at once, through disk

// Over MPI, what the in-memory trade of one spin's (Q|ia) holds beside its two layouts.
std::size_t trade_buffer_bytes(const DFTransformPlan& p, std::size_t spin) {
  const std::size_t nvir = p.spins[spin].nvir, nov = p.spins[spin].nocc * nvir;
  const std::size_t parts = std::max(nov * p.q.size(), p.occ_of(spin, p.rank).size() * nvir * p.naux);
  return redistribute_buffer_bytes(sizeof(double) * p.naux, sizeof(double) * parts);
}

// Through disk over MPI, what one round's trade holds beside its two layouts: this rank's Q of
// every rank's block of `block` columns, and all Q of its own block.
std::size_t round_buffer_bytes(const DFTransformPlan& p, std::size_t block) {
  const std::size_t round = block * static_cast<std::size_t>(p.ranks);
  return redistribute_buffer_bytes(sizeof(double) * std::max(round, block),
                                   sizeof(double) * std::max(p.q.size() * round, p.naux * block));
}

struct Sizes {
  std::size_t nocc_all = 0, nov_all = 0, nov_mine = 0, nvir_max = 0, occ_mine_max = 0;
};
Sizes sizes_of(const DFTransformPlan& p) {
  Sizes z;
  for (std::size_t s = 0; s < p.spins.size(); ++s) {
    z.nocc_all += p.spins[s].nocc;
    z.nov_all += p.spins[s].nocc * p.spins[s].nvir;
    z.nov_mine += p.occ_of(s, p.rank).size() * p.spins[s].nvir;
    z.nvir_max = std::max(z.nvir_max, p.spins[s].nvir);
    z.occ_mine_max = std::max(z.occ_mine_max, p.occ_of(s, p.rank).size());
  }
  return z;
}

// The blocks of the pass over the integrals (A) and of the fit (B), as the plan decided them.
struct Phases {
  StagePlan pass, fit;
};
Phases phases_of(const DFTransformPlan& p) {
  const Sizes z = sizes_of(p);
  Phases ph;
  std::size_t B_bytes = 0, B_disk = 0, exchange = 0, qia_disk = 0;
  for (std::size_t s = 0; s < p.spins.size(); ++s) {
    const std::size_t nov = p.spins[s].nocc * p.spins[s].nvir, mine = p.occ_of(s, p.rank).size() * p.spins[s].nvir;
    (p.b_in_memory ? B_bytes : B_disk) +=
        p.b_in_memory ? MemoryBudget::double_array_bytes(mine * p.naux) : sizeof(double) * mine * p.naux;
    exchange += MemoryBudget::double_array_bytes(nov * p.q.size());
    qia_disk += sizeof(double) * p.q.size() * nov;
  }
  const bool written_in_pass = p.ranks == 1 && !p.through_disk;  // else B is made after the pass
  for (StagePlan* phase : {&ph.pass, &ph.fit}) {
    phase->ram("the DF-MP2 fitting metric", CoulombFitting::peak_bytes(p.naux));
    if (p.b_in_memory && (phase == &ph.fit || written_in_pass)) phase->ram("B_ia^P, in memory", B_bytes);
    phase->disk("B_ia^P, on disk", B_disk);
  }
  ph.pass.ram("the DF-MP2 integrals (Q|μν) of a batch", MemoryBudget::double_array_bytes(p.batch_functions * p.stored));
  ph.pass.ram("the transform's per-thread buffers", OccupiedVirtualTransform::thread_buffer_bytes(p.nbf, z.nocc_all));
  ph.pass.ram("(Q|ia) of a chunk of Q", MemoryBudget::double_array_bytes(p.chunk_rows * z.nov_all));
  if (!p.through_disk) {
    if (p.ranks > 1) {
      for (StagePlan* phase : {&ph.pass, &ph.fit}) phase->ram("(Q|ia) of this rank's Q, to be traded", exchange);
      std::size_t trade = 0;
      for (std::size_t s = 0; s < p.spins.size(); ++s) trade = std::max(trade, trade_buffer_bytes(p, s));
      ph.fit.ram("the exchange between ranks", trade);
    }
    return ph;
  }
  for (StagePlan* phase : {&ph.pass, &ph.fit}) phase->disk("(Q|ia) of this rank's Q, on disk", qia_disk);
  const std::size_t block = p.fit_occ * z.nvir_max;  // (Q|ia) columns of one fitted block
  ph.fit.ram("(Q|ia) of a block of occupied orbitals", MemoryBudget::double_array_bytes(p.naux * block));
  if (!p.b_in_memory)
    ph.fit.ram("B_ia^P of a block of occupied orbitals", MemoryBudget::double_array_bytes(p.naux * block));
  if (p.ranks > 1) {
    const std::size_t round = block * static_cast<std::size_t>(p.ranks);  // every rank's block
    ph.fit.ram("(Q|ia) of this rank's Q for every rank's block", MemoryBudget::double_array_bytes(p.q.size() * round));
    ph.fit.ram("the exchange between ranks", round_buffer_bytes(p, block));
  }
  return ph;
}

}  // namespace

DFTransformPlan plan_df_transform(const libint2::BasisSet& obs, const libint2::BasisSet& aux,
                                  const ShellPairs& pairs, const std::vector<TransformSizes>& spins,
                                  bool b_in_memory, std::size_t ram_bytes, Communicator& comm) {
  DFTransformPlan p;
  p.ranks = comm.size();
  p.rank = comm.rank();
  p.nbf = obs.nbf();
  p.naux = aux.nbf();
  p.stored = pairs.layout.size();
  p.spins = spins;
  p.shells = shell_part(aux, p.rank, p.ranks);
  p.q = {first_function(aux, p.shells.first), first_function(aux, p.shells.last)};
  p.b_in_memory = b_in_memory;
  const Sizes z = sizes_of(p);
  p.chunk_rows = std::clamp<std::size_t>(kChunkBytes / (sizeof(double) * std::max<std::size_t>(z.nov_all, 1)), 1, 64);
  const std::size_t shell = largest_shell(aux, p.shells);
  const std::size_t row = sizeof(double) * std::max<std::size_t>(p.stored, 1);
  // The batches of (Q|μν) take what the rest of the pass leaves.
  const auto size_batches = [&] {
    p.batch_functions = shell;
    const std::size_t other = phases_of(p).pass.ram_bytes() -
                              MemoryBudget::double_array_bytes(shell * p.stored) + MemoryBudget::kPageSlack;
    const std::size_t fit = ram_bytes > other ? (ram_bytes - other) / row : 0;
    p.batch_functions = std::clamp(fit, shell, std::max(shell, p.q.size()));
  };
  p.through_disk = !b_in_memory;
  if (!p.through_disk) {
    size_batches();
    const Phases ph = phases_of(p);
    // Every rank takes the same route: the trades pair up.
    const auto too_big = comm.allgather(std::max(ph.pass.ram_bytes(), ph.fit.ram_bytes()) > ram_bytes ? 1.0 : 0.0);
    if (*std::max_element(too_big.begin(), too_big.end()) == 0.0) {
      p.stage = ph.pass.ram_bytes() >= ph.fit.ram_bytes() ? ph.pass : ph.fit;
      return p;
    }
    p.through_disk = true;
  }
  const std::size_t fit_target = std::min(kFitBlockBytes, ram_bytes / 8);
  p.fit_occ = std::clamp<std::size_t>(fit_target / (sizeof(double) * p.naux * std::max<std::size_t>(z.nvir_max, 1)), 1,
                                      std::max<std::size_t>(z.occ_mine_max, 1));
  size_batches();
  // When that does not fit, the least: one occupied orbital fitted and one Q transformed at a time.
  if (const Phases ph = phases_of(p); std::max(ph.pass.ram_bytes(), ph.fit.ram_bytes()) > ram_bytes) {
    p.fit_occ = 1;
    p.chunk_rows = 1;
    size_batches();
  }
  // Every rank fits blocks of one size: the rounds' trades pair up.
  const auto proposed = comm.allgather(double(p.fit_occ));
  p.fit_occ = static_cast<std::size_t>(*std::min_element(proposed.begin(), proposed.end()));
  const Phases ph = phases_of(p);
  p.stage = ph.pass.ram_bytes() >= ph.fit.ram_bytes() ? ph.pass : ph.fit;
  return p;
}

// The squares start zeroed (where no block is stored: rows of one layout overwrite the same
// positions).
OccupiedVirtualTransform::OccupiedVirtualTransform(const kernels::BlockPackedLayout& layout,
                                                   const std::vector<TransformSpin>& spins,
                                                   kernels::ComputeEngine& engine,
                                                   const kernels::GpuTransformPlan* gpu)
    : layout_(layout), spins_(spins), engine_(engine) {
  std::size_t nocc_all = 0;
  for (const TransformSpin& spin : spins) {
    occ_offset_.push_back(nocc_all);
    ov_offset_.push_back(nov_all_);
    nocc_all += static_cast<std::size_t>(spin.C_occ.cols());
    nov_all_ += static_cast<std::size_t>(spin.C_occ.cols() * spin.C_vir.cols());
  }
  C_occ_all_.resize(static_cast<Eigen::Index>(layout.n()), static_cast<Eigen::Index>(nocc_all));
  for (std::size_t s = 0; s < spins.size(); ++s)
    C_occ_all_.middleCols(static_cast<Eigen::Index>(occ_offset_[s]), spins[s].C_occ.cols()) = spins[s].C_occ;
  if (gpu) {
    std::vector<kernels::TransformOrbitals> orbitals;
    for (const TransformSpin& spin : spins)
      orbitals.push_back({spin.C_occ.data(), static_cast<std::size_t>(spin.C_occ.cols()), spin.C_vir.data(),
                          static_cast<std::size_t>(spin.C_vir.cols())});
    device_ = kernels::make_cuda_device(gpu->device_bytes(), "the DF transform");
    gpu_ = std::make_unique<kernels::StackedTransform>(layout, *gpu, orbitals, *device_);
    return;
  }
  const auto threads = static_cast<std::size_t>(omp_get_max_threads());
  square_.assign(threads, std::vector<double>(layout.n() * layout.n(), 0.0));
  X_.assign(threads, std::vector<double>(layout.n() * nocc_all));
}

std::size_t OccupiedVirtualTransform::thread_buffer_bytes(std::size_t nbf, std::size_t nocc_all) {
  return sizeof(double) * static_cast<std::size_t>(omp_get_max_threads()) * nbf * (nbf + nocc_all);
}

double OccupiedVirtualTransform::flops_per_row() const {
  const auto nbf = double(layout_.n());
  return 2.0 * nbf * (nbf * double(C_occ_all_.cols()) + double(nov_all_));
}

void OccupiedVirtualTransform::operator()(const double* ao, std::size_t nq, double* out) {
  if (gpu_) {
    (*gpu_)(ao, nq, out);
    return;
  }
  const std::size_t nbf = layout_.n(), nocc_all = static_cast<std::size_t>(C_occ_all_.cols());
#pragma omp parallel
  {
    const auto t = static_cast<std::size_t>(omp_get_thread_num());
    double* square = square_[t].data();
    double* X = X_[t].data();
#pragma omp for schedule(dynamic)
    for (std::size_t q = 0; q < nq; ++q) {
      kernels::unpack_upper(layout_, ao + q * layout_.size(), square);
      engine_.symm_upper_left(1.0, kernels::host_matrix<const double>(square, nbf, nbf, nbf),
                              kernels::host_matrix(C_occ_all_.data(), nbf, nocc_all, nbf), 0.0,
                              kernels::host_matrix(X, nbf, nocc_all, nbf));
      for (std::size_t s = 0; s < spins_.size(); ++s) {
        const Eigen::MatrixXd& C_vir = spins_[s].C_vir;
        const std::size_t nvir = C_vir.cols(), nocc = spins_[s].C_occ.cols();
        // column-major nvir × nocc is row-major [i][a]
        engine_.gemm(kernels::Op::transpose, kernels::Op::none, 1.0,
                     kernels::host_matrix(C_vir.data(), nbf, nvir, nbf),
                     kernels::host_matrix<const double>(X + nbf * occ_offset_[s], nbf, nocc, nbf), 0.0,
                     kernels::host_matrix(out + q * nov_all_ + ov_offset_[s], nvir, nocc, nvir));
      }
    }
  }
}

namespace {

// The pass's input and plan, and its transform.
struct Pass {
  const DFTransformInput& in;
  const DFTransformPlan& plan;
  OccupiedVirtualTransform transform;
};

// rows [nrows][ncols] (leading dimension ld_in) → columns [ncols][...] of `out` (leading dimension
// ld_out), in tiles that stay in cache.
void transpose(const double* in, std::size_t nrows, std::size_t ncols, std::size_t ld_in, double* out,
               std::size_t ld_out) {
  constexpr std::size_t kTile = 64;
#pragma omp parallel for collapse(2) schedule(static)
  for (std::size_t r0 = 0; r0 < nrows; r0 += kTile)
    for (std::size_t c0 = 0; c0 < ncols; c0 += kTile)
      for (std::size_t c = c0; c < std::min(ncols, c0 + kTile); ++c)
        for (std::size_t r = r0; r < std::min(nrows, r0 + kTile); ++r) out[c * ld_out + r] = in[r * ld_in + c];
}

// The destinations of one spin's (Q|ia) during the pass and of its B.
struct SpinTarget {
  BiaTensor df;
  LargeArray<double> exchange;  // in memory over MPI: [ia][this rank's Q]
  RowStore qia;                 // through disk: [this rank's Q][ia]
};

// The pass over this rank's auxiliary shells: (Q|μν) in batches, transformed and placed.
void integrals_pass(Pass& pass, std::vector<SpinTarget>& targets, MemoryBudget& budget, const Eigen::MatrixXd& metric,
                    const std::function<void(double)>& progress, StageWork& work) {
  const DFTransformPlan& p = pass.plan;
  const ThreeIndexIntegrals integrals(pass.in.aux, pass.in.obs, pass.in.pairs, metric);
  const auto batches = shell_batches(pass.in.aux, p.shells, p.batch_functions);
  LargeArray<double> ao = budget.allocate<double>(p.batch_functions * p.stored, "the DF-MP2 integrals (Q|μν)");
  const std::size_t nov_all = pass.transform.row_elements();
  LargeArray<double> chunk = budget.allocate<double>(p.chunk_rows * nov_all, "(Q|ia) of a chunk of Q");
  const ShellRange all_rows{0, pass.in.obs.size()};
  std::size_t done = 0;
  for (const ShellRange& batch : batches) {
    const std::size_t q_first = first_function(pass.in.aux, batch.first), q_count = function_count(pass.in.aux, batch);
    integrals.compute(batch, all_rows, ao.data());
    work.libint_seconds += integrals.libint_seconds(batch, all_rows);
    for (std::size_t c = 0; c < q_count; c += p.chunk_rows) {
      const std::size_t nq = std::min(p.chunk_rows, q_count - c), q = q_first + c;
      pass.transform(ao.data() + c * p.stored, nq, chunk.data());
      for (std::size_t s = 0; s < targets.size(); ++s) {
        const double* rows = chunk.data() + pass.transform.offset(s);
        const std::size_t nov = p.spins[s].nocc * p.spins[s].nvir;
        if (p.through_disk)
          targets[s].qia.write(q - p.q.begin, nq, 0, nov, rows, nov_all);
        else if (p.ranks == 1)
          transpose(rows, nq, nov, nov_all, targets[s].df.B64.data() + q, p.naux);
        else
          transpose(rows, nq, nov, nov_all, targets[s].exchange.data() + (q - p.q.begin), p.q.size());
      }
    }
    work.add_fp64_flops(pass.transform.flops_per_row() * double(q_count), p.gpu.has_value(), p.gpu_gflops);
    done += q_count;
    if (progress) progress(double(done) / double(std::max<std::size_t>(p.q.size(), 1)));
  }
}

// Through disk: each round, every rank's next block of occupied orbitals, fitted and written to B.
void fit_through_disk(const DFTransformPlan& p, const libint2::BasisSet& aux, std::size_t spin, SpinTarget& target,
                      const CoulombFitting& fitting, MemoryBudget& budget, Communicator& comm, StageWork& work) {
  const std::size_t nvir = p.spins[spin].nvir, N = static_cast<std::size_t>(p.ranks);
  const Range mine = p.occ_of(spin, p.rank);
  const std::size_t block = p.fit_occ * p.spins[spin].nvir;
  std::size_t rounds = 0;
  for (int r = 0; r < p.ranks; ++r) rounds = std::max(rounds, (p.occ_of(spin, r).size() + p.fit_occ - 1) / p.fit_occ);
  LargeArray<double> columns = budget.allocate<double>(p.naux * block, "(Q|ia) of a block of occupied orbitals");
  LargeArray<double> fitted, sent;
  if (!p.b_in_memory) fitted = budget.allocate<double>(p.naux * block, "B_ia^P of a block of occupied orbitals");
  MemoryBudget::Reservation slabs;
  if (N > 1) {
    sent = budget.allocate<double>(p.q.size() * block * N, "(Q|ia) of this rank's Q for every rank's block");
    slabs = budget.reserve(round_buffer_bytes(p, block), "the exchange between ranks");
  }
  // Block k of rank r: its occupied orbitals [begin, end), as ia columns.
  const auto block_of = [&](int r, std::size_t k) {
    const Range occ = p.occ_of(spin, r);
    const std::size_t begin = std::min(occ.end, occ.begin + k * p.fit_occ);
    return Range{begin, std::min(occ.end, begin + p.fit_occ)};
  };
  for (std::size_t k = 0; k < rounds; ++k) {
    const Range occ = block_of(p.rank, k);
    const std::size_t width = occ.size() * nvir;
    if (N == 1) {
      target.qia.read(0, p.naux, occ.begin * nvir, width, columns.data(), width);
    } else {
      std::vector<std::size_t> offset(N + 1, 0);
      for (std::size_t r = 0; r < N; ++r) {
        const Range b = block_of(static_cast<int>(r), k);
        offset[r + 1] = offset[r] + b.size() * nvir;
      }
      for (std::size_t r = 0; r < N; ++r) {
        const Range b = block_of(static_cast<int>(r), k);
        target.qia.read(0, p.q.size(), b.begin * nvir, b.size() * nvir, sent.data() + offset[r], offset[N]);
      }
      redistribute(
          comm, sent.data(),
          [&](int r) {
            const ShellRange shells = shell_part(aux, r, p.ranks);
            return MatrixPart{{first_function(aux, shells.first), first_function(aux, shells.last)}, {0, offset[N]}};
          },
          [&](int r) { return MatrixPart{{0, p.naux}, {offset[r], offset[r + 1]}}; }, columns.data());
    }
    if (occ.size() == 0) continue;
    const std::size_t local = occ.begin - mine.begin;  // first of this rank's rows
    double* out = p.b_in_memory ? target.df.B64.data() + local * nvir * p.naux : fitted.data();
    transpose(columns.data(), p.naux, width, width, out, p.naux);
    fitting.apply_to_rows(out, width);
    work.flops_fp64 += fitting.flops(width);
    if (!p.b_in_memory) target.df.on_disk.write(local, occ.size(), 0, nvir * p.naux, out, nvir * p.naux);
  }
}

// One spin's DF tensor and the stores the plan writes it through, before the pass.
SpinTarget make_target(const DFTransformInput& in, const DFTransformPlan& p, std::size_t s, MemoryBudget& budget,
                       const ScratchDirectory* scratch) {
  SpinTarget target;
  const Range occ = p.occ_of(s, p.rank);
  const std::size_t nvir = p.spins[s].nvir, nov = p.spins[s].nocc * nvir;
  BiaTensor& df = target.df;
  df.nocc = occ.size();
  df.occ_begin = occ.begin;
  df.nvir = nvir;
  df.naux = p.naux;
  df.eps_occ.assign(in.spins[s].eps_occ.data(), in.spins[s].eps_occ.data() + p.spins[s].nocc);
  df.eps_vir.assign(in.spins[s].eps_vir.data(), in.spins[s].eps_vir.data() + nvir);
  if (p.b_in_memory && p.ranks == 1 && !p.through_disk)  // the pass writes straight into it
    df.B64 = budget.allocate<double>(occ.size() * nvir * p.naux, "B_ia^P, in memory");
  if (!p.b_in_memory) df.on_disk = RowStore(occ.size(), nvir * p.naux, 0, budget, scratch, "B_ia^P, on disk");
  if (p.through_disk)
    target.qia = RowStore(p.q.size(), nov, 0, budget, scratch, "(Q|ia) of this rank's Q, on disk");
  else if (p.ranks > 1)
    target.exchange = budget.allocate<double>(nov * p.q.size(), "(Q|ia) of this rank's Q, to be traded");
  return target;
}

// The integrals pass over this rank's auxiliary shells, with its own buffers (freed on return).
void run_pass(const DFTransformInput& in, const DFTransformPlan& p, std::vector<SpinTarget>& targets,
              MemoryBudget& budget, const Eigen::MatrixXd& metric, const std::function<void(double)>& progress,
              StageWork& work) {
  const auto workspace = budget.reserve(OccupiedVirtualTransform::thread_buffer_bytes(p.nbf, sizes_of(p).nocc_all),
                                        "the transform's per-thread buffers");
  Pass pass{in, p, OccupiedVirtualTransform(in.pairs.layout, in.spins, kernels::cpu_engine(), p.gpu ? &*p.gpu : nullptr)};
  integrals_pass(pass, targets, budget, metric, progress, work);
}

// One spin's (Q|ia) held in memory fitted into B_ia^P: over MPI, traded first so each rank holds
// its occupied rows over every Q.
void fit_in_memory(const DFTransformPlan& p, const libint2::BasisSet& aux, std::size_t s, SpinTarget& target,
                   const CoulombFitting& fitting, MemoryBudget& budget, Communicator& comm, StageWork& work) {
  BiaTensor& df = target.df;
  const std::size_t rows = df.nocc * df.nvir;
  if (p.ranks > 1) {
    df.B64 = budget.allocate<double>(rows * p.naux, "B_ia^P, in memory");
    const auto slabs = budget.reserve(trade_buffer_bytes(p, s), "the exchange between ranks");
    const std::size_t nov = p.spins[s].nocc * p.spins[s].nvir;
    redistribute(
        comm, target.exchange.data(),
        [&](int r) {
          const ShellRange shells = shell_part(aux, r, p.ranks);
          return MatrixPart{{0, nov}, {first_function(aux, shells.first), first_function(aux, shells.last)}};
        },
        [&](int r) {
          const Range occ = p.occ_of(s, r);
          return MatrixPart{{occ.begin * df.nvir, occ.end * df.nvir}, {0, p.naux}};
        },
        df.B64.data());
    target.exchange = LargeArray<double>();
  }
  fitting.apply_to_rows(df.B64.data(), rows);
  work.flops_fp64 += fitting.flops(rows);
}

}  // namespace

std::vector<BiaTensor> build_bia_tensors(const DFTransformInput& in, const DFTransformPlan& plan, MemoryBudget& budget,
                                       const ScratchDirectory* scratch, const std::function<void(double)>& progress,
                                       Communicator& comm, StageWork& work) {
  const DFTransformPlan& p = plan;
  const auto fit_memory = budget.reserve(CoulombFitting::peak_bytes(p.naux), "the DF-MP2 fitting metric");
  const Eigen::MatrixXd metric = coulomb_metric(in.aux);
  std::vector<SpinTarget> targets;
  targets.reserve(in.spins.size());
  for (std::size_t s = 0; s < in.spins.size(); ++s) targets.push_back(make_target(in, p, s, budget, scratch));

  // Progress by work: the pass's flops, then the fit's.
  CoulombFitting fitting(metric);
  double fit_flops = 0.0, occupied = 0.0, pairs_ia = 0.0;
  for (std::size_t s = 0; s < in.spins.size(); ++s) {
    fit_flops += fitting.flops(targets[s].df.nocc * p.spins[s].nvir);
    occupied += double(p.spins[s].nocc);
    pairs_ia += double(p.spins[s].nocc * p.spins[s].nvir);
  }
  const double pass_flops = 2.0 * double(p.nbf) * (double(p.nbf) * occupied + pairs_ia) * double(p.q.size());
  const double pass_share = pass_flops / std::max(1.0, pass_flops + fit_flops);
  run_pass(in, p, targets, budget, metric, [&](double done) { if (progress) progress(pass_share * done); }, work);
  // The fit on the GPU when planned there, in GPU memory of its own now that the pass's is given back.
  std::optional<GpuFit> gpu_fit;
  if (p.gpu_fit) fitting.use_engine(gpu_fit.emplace(*p.gpu_fit, "the DF-MP2 fit").engine());
  if (p.through_disk && p.b_in_memory)
    for (SpinTarget& target : targets)
      target.df.B64 = budget.allocate<double>(target.df.nocc * target.df.nvir * p.naux, "B_ia^P, in memory");
  double fitted = 0.0;
  StageWork fit_work;
  for (std::size_t s = 0; s < in.spins.size(); ++s) {
    if (p.through_disk)
      fit_through_disk(p, in.aux, s, targets[s], fitting, budget, comm, fit_work);
    else
      fit_in_memory(p, in.aux, s, targets[s], fitting, budget, comm, fit_work);
    fitted += fitting.flops(targets[s].df.nocc * targets[s].df.nvir);
    if (progress) progress(pass_share + (1.0 - pass_share) * fitted / std::max(1.0, fit_flops));
  }
  work.add_fp64_flops(fit_work.flops_fp64, gpu_fit.has_value(), p.gpu_gflops);  // the fits count only these
  std::vector<BiaTensor> tensors;
  for (SpinTarget& target : targets) tensors.push_back(std::move(target.df));
  return tensors;
}

}  // namespace dfmp2
