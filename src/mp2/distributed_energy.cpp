#include "src/mp2/distributed_energy.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <future>
#include <optional>
#include <span>
#include <type_traits>
#include <vector>

#include "kernels/gpu/gpu_energy.hpp"

namespace dfmp2 {
namespace {

using kernels::Precision;

std::size_t element_bytes(Precision precision) { return precision == Precision::fp32 ? sizeof(float) : sizeof(double); }

// Visiting shares arrive in chunks of at most 1/8 of the largest share (at least one orbital),
// so a rank holds little more than its own share of B.
std::size_t chunk_rows(std::size_t nocc_total, int ranks) {
  return std::max<std::size_t>(1, share_of(nocc_total, 0, ranks).size() / 8);
}

// Blocks of `size` rows (the last shorter) of n rows.
std::vector<Range> blocks_of(std::size_t n, std::size_t size) {
  std::vector<Range> blocks;
  for (std::size_t first = 0; first < n; first += size) blocks.push_back({first, std::min(n, first + size)});
  return blocks;
}

// As many block rounds as the rank with the most blocks of this spin.
std::size_t rounds_of(std::size_t nocc_total, std::size_t block, int ranks) {
  std::size_t rounds = 0;
  for (int r = 0; r < ranks; ++r) rounds = std::max(rounds, (share_of(nocc_total, r, ranks).size() + block - 1) / block);
  return rounds;
}

// The pair spaces one step sums on this rank: for the backend's workspace.
std::vector<kernels::PairSpaceShape> pair_spaces(const std::vector<EnergySpin>& spins, std::size_t block, int ranks,
                                                 bool blocked) {
  std::vector<kernels::PairSpaceShape> shapes;
  for (const EnergySpin& s : spins) {
    const std::size_t rows = std::min(block, s.nocc_mine), chunk = chunk_rows(s.nocc, ranks);
    shapes.push_back({rows, rows, true, s.nvir, s.nvir});
    if (blocked) shapes.push_back({rows, rows, false, s.nvir, s.nvir});
    if (ranks > 1) shapes.push_back({rows, chunk, false, s.nvir, s.nvir});
  }
  if (spins.size() == 2) {
    const EnergySpin &a = spins[0], &b = spins[1];
    const std::size_t rows_a = std::min(block, a.nocc_mine), rows_b = std::min(block, b.nocc_mine);
    shapes.push_back({rows_a, rows_b, false, a.nvir, b.nvir});
    if (ranks > 1) shapes.push_back({rows_a, chunk_rows(b.nocc, ranks), false, a.nvir, b.nvir});
  }
  return shapes;
}

// The GPU's plan for this rank's shares: the largest blocks its memory holds (all of B when it
// fits), or blocks of `block_occ` rows when given; slots hold the chunks visiting over MPI too.
kernels::GpuEnergyPlan plan_on_gpu(const std::vector<EnergySpin>& spins, std::size_t naux, kernels::Backend backend,
                                   kernels::Precision precision, const EnergyDevice& device, std::size_t visiting,
                                   std::size_t block_occ = 0) {
  std::vector<kernels::GpuSpin> shares;
  for (const EnergySpin& s : spins) shares.push_back({s.nocc_mine, s.nvir});
  return block_occ > 0 ? kernels::plan_gpu_blocks(shares, naux, backend, precision, device.gpu_bytes, block_occ, visiting)
                       : kernels::plan_gpu_energy(shares, naux, backend, precision, device.gpu_bytes, visiting);
}

void describe_gpu(const kernels::GpuEnergyPlan& gpu, const EnergyDevice& device, StagePlan& stage) {
  stage.gpu(gpu.resident ? "B_ia^P, resident on the GPU"
                         : "B_ia^P blocks of " + std::to_string(gpu.block_occ) + " occupied orbitals streamed to the GPU",
            gpu.slots * gpu.slot_bytes);
  stage.gpu("T_flat (the loop backend's pair blocks)", gpu.workspace_bytes);
  stage.gpu("orbital energies, pair lists and partial sums", gpu.small_bytes);
  stage.note = "on the GPU (" + device.properties.name + ", " + format_bytes(device.gpu_bytes) + " for the step): " +
               kernels::to_string(gpu.backend) + ", " + kernels::to_string(gpu.precision);
}

}  // namespace

EnergyPlan plan_energy(const std::vector<EnergySpin>& spins, std::size_t naux, kernels::Backend backend,
                       kernels::Precision precision, std::size_t ram_bytes, Communicator& comm,
                       const EnergyDevice& device) {
  EnergyPlan plan;
  plan.precision = precision;
  plan.device = device;
  const int N = comm.size(), threads = omp_get_max_threads();
  const std::size_t elem = element_bytes(precision);
  const EnergySpin::Stored wanted = precision == Precision::fp32 ? EnergySpin::Stored::fp32 : EnergySpin::Stored::fp64;
  std::size_t row = 0, mine_max = 0, chunk = 0, held = 0, on_disk = 0, copy = 0;
  bool in_place = true, in_memory = true;
  for (const EnergySpin& s : spins) {
    row = std::max(row, s.nvir * naux);
    // Every rank takes blocks of the same size (the exchanges pair up round by round): at most
    // the largest share.
    mine_max = std::max(mine_max, share_of(s.nocc, 0, N).size());
    if (N > 1) chunk = std::max(chunk, chunk_rows(s.nocc, N));
    const std::size_t bytes = s.nocc_mine * s.nvir * naux;
    if (s.stored == EnergySpin::Stored::disk) on_disk += sizeof(double) * bytes;
    else
      held +=
          MemoryBudget::array_bytes(bytes * (s.stored == EnergySpin::Stored::fp32 ? sizeof(float) : sizeof(double)));
    copy += MemoryBudget::array_bytes(elem * bytes);
    in_place = in_place && s.stored == wanted;
    in_memory = in_memory && s.stored != EnergySpin::Stored::disk;
  }
  mine_max = std::max<std::size_t>(mine_max, 1);
  plan.chunk_occ = chunk;
  const std::size_t visiting = N > 1 ? MemoryBudget::array_bytes(chunk * row * elem) : 0;
  // Blocks of `block` orbitals: three of fp64 rows (one block, the block paired with it and the
  // next one being read, narrowed in place to fp32 where asked) and, over MPI, a chunk being sent.
  const auto buffers_of = [&](std::size_t block) {
    return MemoryBudget::array_bytes(sizeof(double) * row * (3 * block + (N > 1 ? chunk : 0)));
  };
  // The backend's workspace for blocks of `block` orbitals with `beside` bytes held besides:
  // the loop backend's T_flat takes what is left.
  const auto workspace = [&](std::size_t block, std::size_t beside, bool blocked) -> std::size_t {
    if (device.gpu) {  // the GPU's workspace is in its own memory
      plan.backend = backend == kernels::Backend::automatic ? kernels::gpu_automatic_backend(precision) : backend;
      return 0;
    }
    const std::size_t rest = ram_bytes > beside ? ram_bytes - beside : 0;
    plan.loop_memory_bytes = rest;
    plan.backend = backend == kernels::Backend::automatic
                       ? kernels::resolve_automatic(precision, std::min(block, spins[0].nocc), spins[0].nvir, rest)
                       : backend;
    std::size_t most = 0;
    for (const auto& shape : pair_spaces(spins, block, N, blocked))
      most = std::max(most, kernels::energy_workspace_bytes(plan.backend, precision, shape, threads, rest));
    return MemoryBudget::array_bytes(most);
  };
  std::size_t buffers = 0;
  plan.block_occ = mine_max;
  plan.workspace_bytes = workspace(mine_max, visiting, false);
  if (in_place) {  // B used where it lies
  } else if (in_memory && (plan.workspace_bytes = workspace(mine_max, visiting + copy, false)) + visiting + copy <= ram_bytes) {
    plan.converted_copy = true;
  } else {  // the largest blocks that fit
    plan.blocks_loaded = true;
    const auto needs = [&](std::size_t block) {
      const std::size_t beside = buffers_of(block) + visiting;
      return beside + workspace(block, beside, true);
    };
    std::size_t low = 1, high = mine_max;
    while (low < high) {
      const std::size_t mid = (low + high + 1) / 2;
      if (needs(mid) <= ram_bytes) low = mid; else high = mid - 1;
    }
    plan.block_occ = low;
  }
  if (device.gpu)
    plan.block_occ = std::min(plan.block_occ, plan_on_gpu(spins, naux, plan.backend, precision, device, chunk).block_occ);
  // Every rank takes blocks of one size, the smallest any rank needs: the exchanges pair up round
  // by round.
  const auto proposed = comm.allgather(double(plan.block_occ));
  if (const auto agreed = static_cast<std::size_t>(*std::min_element(proposed.begin(), proposed.end()));
      agreed != plan.block_occ) {
    plan.block_occ = agreed;
    if (!plan.blocks_loaded) plan.workspace_bytes = workspace(agreed, visiting + (plan.converted_copy ? copy : 0), true);
  }
  if (plan.blocks_loaded) {
    buffers = buffers_of(plan.block_occ);
    plan.workspace_bytes = workspace(plan.block_occ, buffers + visiting, true);
  }
  StagePlan& stage = plan.stage;
  if (device.gpu) {
    plan.gpu = plan_on_gpu(spins, naux, plan.backend, precision, device, chunk, plan.block_occ);
    describe_gpu(*plan.gpu, device, stage);
  }
  if (held > 0) stage.ram("B_ia^P, in memory", held);
  stage.disk("B_ia^P, on disk", on_disk);
  if (plan.converted_copy) stage.ram("B_ia^P converted to " + kernels::to_string(precision), copy);
  if (buffers > 0) stage.ram("B_ia^P blocks being summed, read and sent", buffers);
  if (N > 1) stage.ram("B_ia^P visiting from other ranks", visiting);
  stage.ram("the energy backend's workspace", plan.workspace_bytes);
  // Reads: block k against the k blocks before it, per spin; αβ: each α block against every β block.
  for (const EnergySpin& s : spins)
    if (s.stored == EnergySpin::Stored::disk) {
      const std::size_t blocks = (s.nocc_mine + plan.block_occ - 1) / plan.block_occ;
      const std::size_t loads = blocks * (blocks + 1) / 2 +
                                (spins.size() == 2 && &s == &spins[1] ? blocks * ((spins[0].nocc_mine + plan.block_occ - 1) / plan.block_occ) : 0);
      stage.read_bytes += loads * std::min(plan.block_occ, s.nocc_mine) * s.nvir * naux * sizeof(double);
    }
  stage.read_per = "energy step";
  return plan;
}

namespace {

// Rows of this rank's share of one spin's B in precision Real: in place, or loaded into a buffer
// of fp64 rows (read from disk or converted; narrowed to Real in place).
template <typename Real>
class ShareRows {
 public:
  ShareRows(const DFTensor& df, const Real* in_place) : df_(df), in_place_(in_place) {}
  const DFTensor& df() const { return df_; }
  std::size_t row() const { return df_.nvir * df_.naux; }
  Range all() const { return {0, df_.nocc}; }
  bool in_place() const { return in_place_ != nullptr; }

  const Real* load(Range r, double* buffer) const {
    if (in_place_ != nullptr) return in_place_ + r.begin * row();
    const std::size_t count = r.size() * row();
    if (df_.is_on_disk()) {
      df_.on_disk.read(r.begin, r.size(), buffer);
      if constexpr (std::is_same_v<Real, float>) narrow_in_place(buffer, count);
      return reinterpret_cast<const Real*>(buffer);
    }
    Real* out = reinterpret_cast<Real*>(buffer);
    if constexpr (std::is_same_v<Real, double>)
      std::copy(df_.B32.data() + r.begin * row(), df_.B32.data() + r.begin * row() + count, out);
    else
      std::copy(df_.B64.data() + r.begin * row(), df_.B64.data() + r.begin * row() + count, out);
    return out;
  }
  // Rows r as the GPU's next block: only where they lie (loaded ones are refilled).
  kernels::GpuNextBlock next_block(Range r) const {
    if (in_place_ == nullptr) return {};
    return {in_place_ + r.begin * row(), r.size(), row() * sizeof(Real)};
  }
  // Rows used where they lie keep their contents for the step; loaded ones are refilled.
  kernels::DFTensorView<Real> view(const Real* data, Range r) const {
    return {data, r.size(), df_.nvir, df_.naux, in_place()};
  }
  std::span<const double> eps(Range r) const {
    return std::span<const double>(df_.eps_occ).subspan(df_.occ_begin + r.begin, r.size());
  }

 private:
  // fp64 values to fp32 in the same storage, front to back through a small copy (each float lands
  // below every double not yet read).
  static void narrow_in_place(double* data, std::size_t count) {
    constexpr std::size_t kPiece = 512;
    double wide[kPiece];
    float narrow[kPiece];
    char* bytes = reinterpret_cast<char*>(data);
    for (std::size_t first = 0; first < count; first += kPiece) {
      const std::size_t n = std::min(kPiece, count - first);
      std::memcpy(wide, bytes + first * sizeof(double), n * sizeof(double));
      for (std::size_t k = 0; k < n; ++k) narrow[k] = static_cast<float>(wide[k]);
      std::memcpy(bytes + first * sizeof(float), narrow, n * sizeof(float));
    }
  }

  const DFTensor& df_;
  const Real* in_place_;
};

// Progress by work: each kernel call's own progress mapped onto its share of this rank's flops.
class WorkProgress {
 public:
  WorkProgress(const std::function<void(double)>& report, double total) : report_(report), total_(std::max(total, 1.0)) {}
  kernels::EnergyOptions options_for(kernels::EnergyOptions options, double flops) {
    if (report_)
      options.progress = [this, flops](double done) { report_(std::min(1.0, (done_ + done * flops) / total_)); };
    return options;
  }
  void finished(double flops) {
    done_ += flops;
    if (report_) report_(std::min(1.0, done_ / total_));
  }

 private:
  const std::function<void(double)>& report_;
  double total_, done_ = 0.0;
};

double pair_flops(std::size_t pairs, std::size_t nvir_a, std::size_t nvir_b, std::size_t naux) {
  return 2.0 * double(pairs) * double(nvir_a) * double(nvir_b) * double(naux);
}

void add(kernels::EnergyResult& sum, const kernels::EnergyResult& part) {
  sum.e_os += part.e_os;
  sum.e_ss += part.e_ss;
  sum.backend = part.backend;
  sum.gemm_seconds += part.gemm_seconds;
  sum.reduce_seconds += part.reduce_seconds;
  sum.total_seconds += part.total_seconds;
  sum.workspace_bytes = std::max(sum.workspace_bytes, part.workspace_bytes);
}

// What every sum of the step shares: the backend and its options, the buffers, the ranks.
template <typename Real>
struct Step {
  kernels::Backend backend;
  kernels::EnergyOptions kernel;  // the planned workspace and T_flat budget; no progress of its own
  std::size_t block;
  double *buffer_I, *buffer_J[2], *buffer_send;
  Real* visiting;
  WorkProgress& progress;
  Communicator& comm;
};

// Chunk t of the exchange k steps round the ring: sends chunk t of rows `sent` of this rank's
// share to rank r − k while receiving chunk t of rows `summed` of rank r + k's share.
template <typename Real>
kernels::DFTensorView<Real> exchange(Step<Real>& step, const ShareRows<Real>& mine, int k, Range sent, Range summed,
                                     std::size_t t, std::span<const double>& eps_in) {
  const int N = step.comm.size(), r = step.comm.rank();
  const std::size_t nocc_total = mine.df().eps_occ.size(), chunk = chunk_rows(nocc_total, N);
  auto chunk_of = [&](Range rows) {
    const std::size_t begin = std::min(rows.end, rows.begin + t * chunk);
    return Range{begin, std::min(rows.end, begin + chunk)};
  };
  const Range out = chunk_of(sent), in = chunk_of(summed);
  const Range visitor = share_of(nocc_total, (r + k) % N, N);
  const Real* out_data = out.size() > 0 ? mine.load(out, step.buffer_send) : nullptr;
  step.comm.sendrecv(out_data, sizeof(Real) * out.size() * mine.row(), (r - k + N) % N, step.visiting,
                     sizeof(Real) * in.size() * mine.row(), (r + k) % N);
  eps_in = std::span<const double>(mine.df().eps_occ).subspan(visitor.begin + in.begin, in.size());
  return {step.visiting, in.size(), mine.df().nvir, mine.df().naux};
}

template <typename Real>
std::size_t chunks_of(const ShareRows<Real>& rows, int N) {
  const std::size_t nocc = rows.df().eps_occ.size();
  return (share_of(nocc, 0, N).size() + chunk_rows(nocc, N) - 1) / chunk_rows(nocc, N);
}

// Sums `pairs(I data, J data, J rows)` of block I against every block of `other` (this rank's),
// each loaded while the one before is summed.
template <typename Real, typename Pairs>
void against_blocks(Step<Real>& step, const ShareRows<Real>& other, const std::vector<Range>& blocks, Pairs pairs) {
  if (blocks.empty()) return;
  std::future<const Real*> next =
      std::async(std::launch::deferred, [&] { return other.load(blocks[0], step.buffer_J[0]); });
  for (std::size_t j = 0; j < blocks.size(); ++j) {
    const Real* data = next.get();
    if (j + 1 < blocks.size())
      next = std::async(other.in_place() ? std::launch::deferred : std::launch::async,
                        [&, j] { return other.load(blocks[j + 1], step.buffer_J[(j + 1) % 2]); });
    // On a GPU, block j + 1 travels while this pair computes.
    step.kernel.gpu_next = j + 1 < blocks.size() ? other.next_block(blocks[j + 1]) : kernels::GpuNextBlock{};
    pairs(data, blocks[j]);
    step.kernel.gpu_next = {};
  }
}

// One spin's same-spin pairs (see distributed_energy.hpp).
template <typename Real>
kernels::EnergyResult same_spin_pairs(Step<Real>& step, const ShareRows<Real>& mine) {
  const int N = step.comm.size(), r = step.comm.rank();
  const DFTensor& df = mine.df();
  const std::size_t nocc_total = df.eps_occ.size(), row = mine.row();
  const std::vector<Range> blocks = blocks_of(df.nocc, step.block);
  kernels::EnergyResult sum;
  for (std::size_t k = 0; k < rounds_of(nocc_total, step.block, N); ++k) {
    const Range I = k < blocks.size() ? blocks[k] : Range{df.nocc, df.nocc};
    const Real* B_I = I.size() > 0 ? mine.load(I, step.buffer_I) : nullptr;
    if (I.size() > 0) {
      const double flops = pair_flops(I.size() * (I.size() + 1) / 2, df.nvir, df.nvir, df.naux);
      add(sum, kernels::mp2_energy<Real>(step.backend, mine.view(B_I, I), mine.eps(I), df.eps_vir,
                                         step.progress.options_for(step.kernel, flops)));
      step.progress.finished(flops);
      const std::vector<Range> earlier(blocks.begin(), blocks.begin() + static_cast<long>(k));
      against_blocks(step, mine, earlier, [&](const Real* B_J, Range J) {
        const double f = pair_flops(I.size() * J.size(), df.nvir, df.nvir, df.naux);
        add(sum, kernels::mp2_energy_cross<Real>(step.backend, mine.view(B_I, I), mine.eps(I), mine.view(B_J, J),
                                                 mine.eps(J), df.eps_vir, step.progress.options_for(step.kernel, f)));
        step.progress.finished(f);
      });
    }
    for (int k2 = 1; k2 <= N / 2; ++k2) {
      // Rows of my share I send, rows of the visitor's share I sum against, and my rows in them.
      Range sent = mine.all(), summed{0, share_of(nocc_total, (r + k2) % N, N).size()}, own = mine.all();
      // With N even, ranks r and r + N/2 meet at k = N/2 from both sides and split the pair: the
      // lower sums I_lo × (first half of I_hi), the higher (second half of I_hi) × I_lo.
      if (N % 2 == 0 && k2 == N / 2) {
        if (r < N / 2) {
          summed.end = summed.size() / 2;
        } else {
          sent.end = df.nocc / 2;
          own.begin = df.nocc / 2;
        }
      }
      const std::size_t own_first = std::max(own.begin, I.begin);
      const Range own_I{own_first, std::max(own_first, std::min(own.end, I.end))};
      for (std::size_t t = 0; t < chunks_of(mine, N); ++t) {
        std::span<const double> eps_in;
        const auto in = exchange(step, mine, k2, sent, summed, t, eps_in);
        if (in.nocc == 0 || own_I.size() == 0) continue;
        const double f = pair_flops(own_I.size() * in.nocc, df.nvir, df.nvir, df.naux);
        add(sum, kernels::mp2_energy_cross<Real>(step.backend, mine.view(B_I + (own_I.begin - I.begin) * row, own_I),
                                                 mine.eps(own_I), in, eps_in, df.eps_vir,
                                                 step.progress.options_for(step.kernel, f)));
        step.progress.finished(f);
      }
    }
  }
  return sum;
}

// UHF's opposite-spin pairs: each α block against this rank's β blocks and every other rank's β share.
template <typename Real>
kernels::EnergyResult opposite_spin_pairs(Step<Real>& step, const ShareRows<Real>& alpha, const ShareRows<Real>& beta) {
  const int N = step.comm.size();
  const DFTensor &a = alpha.df(), &b = beta.df();
  const std::vector<Range> blocks_a = blocks_of(a.nocc, step.block), blocks_b = blocks_of(b.nocc, step.block);
  kernels::EnergyResult sum;
  for (std::size_t k = 0; k < rounds_of(a.eps_occ.size(), step.block, N); ++k) {
    const Range I = k < blocks_a.size() ? blocks_a[k] : Range{a.nocc, a.nocc};
    const Real* B_I = I.size() > 0 ? alpha.load(I, step.buffer_I) : nullptr;
    const auto pairs_with = [&](const kernels::DFTensorView<Real>& B_beta, std::span<const double> eps_beta) {
      const double f = pair_flops(I.size() * B_beta.nocc, a.nvir, b.nvir, a.naux);
      add(sum, kernels::mp2_energy_opposite_spin<Real>(step.backend, alpha.view(B_I, I), alpha.eps(I), a.eps_vir, B_beta,
                                                       eps_beta, b.eps_vir, step.progress.options_for(step.kernel, f)));
      step.progress.finished(f);
    };
    if (I.size() > 0)
      against_blocks(step, beta, blocks_b, [&](const Real* B_J, Range J) { pairs_with(beta.view(B_J, J), beta.eps(J)); });
    for (int k2 = 1; k2 < N; ++k2)
      for (std::size_t t = 0; t < chunks_of(beta, N); ++t) {
        std::span<const double> eps_in;
        const auto in = exchange(step, beta, k2, beta.all(),
                                 {0, share_of(b.eps_occ.size(), (step.comm.rank() + k2) % N, N).size()}, t, eps_in);
        if (in.nocc > 0 && I.size() > 0) pairs_with(in, eps_in);
      }
  }
  return sum;
}

// The flops this rank sums, for progress: its share of every pair block's.
double rank_flops(const DFTensor& alpha, const DFTensor* beta, int ranks) {
  const double total = beta ? kernels::needed_flops_unrestricted(alpha.eps_occ.size(), alpha.nvir, beta->eps_occ.size(),
                                                                 beta->nvir, alpha.naux)
                            : kernels::needed_flops(alpha.eps_occ.size(), alpha.nvir, alpha.naux);
  return total / ranks;
}

template <typename Real>
DistributedEnergy run_energy(const DFTensor& alpha, const DFTensor* beta, const EnergyPlan& plan, MemoryBudget& budget,
                             const std::function<void(double)>& progress, Communicator& comm) {
  const std::size_t row = std::max(alpha.nvir * alpha.naux, beta ? beta->nvir * beta->naux : 0);
  // B in place: as stored, or converted whole.
  LargeArray<Real> copy_a, copy_b;
  const auto in_place = [&](const DFTensor& df, LargeArray<Real>& copy) -> const Real* {
    if (plan.blocks_loaded) return nullptr;
    if constexpr (std::is_same_v<Real, double>) {
      if (!df.B64.empty() || df.nocc == 0) return df.B64.data();
    } else {
      if (!df.B32.empty() || df.nocc == 0) return df.B32.data();
    }
    copy = budget.allocate<Real>(df.nocc * df.nvir * df.naux, "B_ia^P converted to " + kernels::to_string(plan.precision));
    if constexpr (std::is_same_v<Real, double>)
      std::copy(df.B32.begin(), df.B32.end(), copy.begin());
    else
      std::copy(df.B64.begin(), df.B64.end(), copy.begin());
    return copy.data();
  };
  const ShareRows<Real> a(alpha, in_place(alpha, copy_a));
  std::optional<ShareRows<Real>> b;
  if (beta) b.emplace(*beta, in_place(*beta, copy_b));
  LargeArray<double> buffers;
  if (plan.blocks_loaded)
    buffers = budget.allocate<double>(3 * plan.block_occ * row + (comm.size() > 1 ? plan.chunk_occ * row : 0),
                                      "B_ia^P blocks being summed, read and sent");
  LargeArray<Real> visiting;
  if (comm.size() > 1) visiting = budget.allocate<Real>(plan.chunk_occ * row, "B_ia^P visiting from other ranks");
  LargeArray<std::byte> workspace = budget.allocate<std::byte>(plan.workspace_bytes, "the energy backend's workspace");
  std::optional<kernels::GpuEnergyEngine> gpu;
  if (plan.gpu) gpu.emplace(*plan.gpu);
  kernels::EnergyOptions kernel;
  kernel.gpu = gpu ? &*gpu : nullptr;
  kernel.memory_bytes = plan.loop_memory_bytes;
  kernel.workspace = workspace.data();
  kernel.workspace_bytes = workspace.size();
  WorkProgress work(progress, rank_flops(alpha, beta, comm.size()));
  double* base = buffers.data();
  const std::size_t block = plan.block_occ * row;
  Step<Real> step{plan.backend, kernel, plan.block_occ,
                  base, {base ? base + block : nullptr, base ? base + 2 * block : nullptr},
                  base ? base + 3 * block : nullptr, visiting.data(), work, comm};
  DistributedEnergy result;
  kernels::EnergyResult aa = same_spin_pairs(step, a), bb, ab;
  if (beta) {
    bb = same_spin_pairs(step, *b);
    ab = opposite_spin_pairs(step, a, *b);
  }
  for (const auto* part : {&aa, &bb, &ab}) add(result.energy, *part);
  if (gpu) result.gpu_uploaded_bytes = gpu->uploaded_bytes();
  result.peak_b_bytes = (plan.blocks_loaded ? buffers.size() * sizeof(double)
                                            : sizeof(Real) * (alpha.nocc * alpha.nvir * alpha.naux +
                                                              (beta ? beta->nocc * beta->nvir * beta->naux : 0))) +
                        visiting.size() * sizeof(Real);
  // One spin's e_ss sums both orderings of its exchange-antisymmetrised pairs: twice E_σσ.
  double sums[3] = {beta ? 0.5 * aa.e_ss : aa.e_ss, 0.5 * bb.e_ss, beta ? ab.e_os : aa.e_os};
  comm.allreduce_sum(sums, 3);
  if (beta) {
    result.e_aa = sums[0];
    result.e_bb = sums[1];
    result.energy.e_ss = sums[0] + sums[1];
    result.energy.e_os = sums[2];
  } else {
    result.energy.e_ss = sums[0];
    result.energy.e_os = sums[2];
  }
  return result;
}

}  // namespace

DistributedEnergy distributed_mp2_energy(const DFTensor& alpha, const DFTensor* beta, const EnergyPlan& plan,
                                         MemoryBudget& budget, const std::function<void(double)>& progress,
                                         Communicator& comm) {
  return plan.precision == Precision::fp32 ? run_energy<float>(alpha, beta, plan, budget, progress, comm)
                                           : run_energy<double>(alpha, beta, plan, budget, progress, comm);
}

}  // namespace dfmp2
