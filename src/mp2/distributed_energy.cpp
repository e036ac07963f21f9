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

// The sizes the plan weighs, per rank: B's rows, shares and chunks, and where B lies.
struct EnergySizes {
  std::size_t row = 0;       // elements of the longest row of B (nvir · naux)
  std::size_t mine_max = 1;  // the largest rank's share (every rank takes blocks of one size)
  std::size_t chunk = 0;     // over MPI: rows of a visiting chunk
  std::size_t held = 0, on_disk = 0, copy = 0;  // bytes of B in memory, on disk, converted whole
  std::size_t visiting = 0;                     // bytes of the chunk visiting from another rank
  bool in_place = true, in_memory = true;       // B usable where it lies; all of B in memory
  int ranks = 1;
};

EnergySizes energy_sizes(const std::vector<EnergySpin>& spins, std::size_t naux, Precision precision, int ranks) {
  EnergySizes z;
  z.ranks = ranks;
  const std::size_t elem = element_bytes(precision);
  const EnergySpin::Stored wanted = precision == Precision::fp32 ? EnergySpin::Stored::fp32 : EnergySpin::Stored::fp64;
  for (const EnergySpin& s : spins) {
    z.row = std::max(z.row, s.nvir * naux);
    z.mine_max = std::max(z.mine_max, share_of(s.nocc, 0, ranks).size());
    if (ranks > 1) z.chunk = std::max(z.chunk, chunk_rows(s.nocc, ranks));
    const std::size_t elements = s.nocc_mine * s.nvir * naux;
    if (s.stored == EnergySpin::Stored::disk)
      z.on_disk += sizeof(double) * elements;
    else
      z.held += MemoryBudget::array_bytes(elements * (s.stored == EnergySpin::Stored::fp32 ? sizeof(float) : sizeof(double)));
    z.copy += MemoryBudget::array_bytes(elem * elements);
    z.in_place = z.in_place && s.stored == wanted;
    z.in_memory = z.in_memory && s.stored != EnergySpin::Stored::disk;
  }
  z.visiting = ranks > 1 ? MemoryBudget::array_bytes(z.chunk * z.row * elem) : 0;
  return z;
}

// Blocks of `block` orbitals: three of fp64 rows (one block, the block paired with it and the
// next one being read, narrowed in place to fp32 where asked) and, over MPI, a chunk being sent.
std::size_t block_buffer_bytes(const EnergySizes& z, std::size_t block) {
  return MemoryBudget::array_bytes(sizeof(double) * z.row * (3 * block + (z.ranks > 1 ? z.chunk : 0)));
}

// The backend and its workspace for blocks of `block` orbitals with `beside` bytes held besides:
// the loop backend's T_flat takes what is left (rest). On the GPU the workspace is in its memory.
struct Workspace {
  kernels::Backend backend;
  std::size_t bytes = 0, rest = 0;
};
struct WorkspaceRule {
  const std::vector<EnergySpin>& spins;
  kernels::Backend backend;
  Precision precision;
  bool on_gpu;
  std::size_t ram_bytes;
  int ranks, threads;

  Workspace at(std::size_t block, std::size_t beside, bool blocked) const {
    if (on_gpu)
      return {backend == kernels::Backend::automatic ? kernels::gpu_automatic_backend(precision) : backend, 0, 0};
    const std::size_t rest = ram_bytes > beside ? ram_bytes - beside : 0;
    const kernels::Backend chosen =
        backend == kernels::Backend::automatic
            ? kernels::resolve_automatic(precision, std::min(block, spins[0].nocc), spins[0].nvir, rest)
            : backend;
    std::size_t most = 0;
    for (const auto& shape : pair_spaces(spins, block, ranks, blocked))
      most = std::max(most, kernels::energy_workspace_bytes(chosen, precision, shape, threads, rest));
    return {chosen, MemoryBudget::array_bytes(most), rest};
  }
};

// The largest blocks whose buffers, visiting chunk and workspace fit in ram_bytes (at least one orbital).
std::size_t largest_block(const WorkspaceRule& rule, const EnergySizes& z) {
  const auto needs = [&](std::size_t block) {
    const std::size_t beside = block_buffer_bytes(z, block) + z.visiting;
    return beside + rule.at(block, beside, true).bytes;
  };
  std::size_t low = 1, high = z.mine_max;
  while (low < high) {
    const std::size_t mid = (low + high + 1) / 2;
    if (needs(mid) <= rule.ram_bytes) low = mid; else high = mid - 1;
  }
  return low;
}

// Bytes of B read from disk in the step: block k against the k blocks before it, per spin; αβ:
// each α block against every β block.
std::size_t disk_read_bytes(const std::vector<EnergySpin>& spins, std::size_t naux, std::size_t block) {
  std::size_t bytes = 0;
  const auto blocks_of_spin = [&](const EnergySpin& s) { return (s.nocc_mine + block - 1) / block; };
  for (const EnergySpin& s : spins) {
    if (s.stored != EnergySpin::Stored::disk) continue;
    const std::size_t blocks = blocks_of_spin(s);
    const std::size_t loads = blocks * (blocks + 1) / 2 + (spins.size() == 2 && &s == &spins[1] ? blocks * blocks_of_spin(spins[0]) : 0);
    bytes += loads * std::min(block, s.nocc_mine) * s.nvir * naux * sizeof(double);
  }
  return bytes;
}

// The stage's memory plan: where B lies, the buffers, the visiting chunk, the workspace, the reads.
void describe_energy_stage(EnergyPlan& plan, const EnergySizes& z, const std::vector<EnergySpin>& spins,
                           std::size_t naux, std::size_t buffers) {
  StagePlan& stage = plan.stage;
  if (plan.gpu) describe_gpu(*plan.gpu, plan.device, stage);
  if (z.held > 0) stage.ram("B_ia^P, in memory", z.held);
  stage.disk("B_ia^P, on disk", z.on_disk);
  if (plan.converted_copy) stage.ram("B_ia^P converted to " + kernels::to_string(plan.precision), z.copy);
  if (buffers > 0) stage.ram("B_ia^P blocks being summed, read and sent", buffers);
  if (z.ranks > 1) stage.ram("B_ia^P visiting from other ranks", z.visiting);
  stage.ram("the energy backend's workspace", plan.workspace_bytes);
  stage.read_bytes = disk_read_bytes(spins, naux, plan.block_occ);
  stage.read_per = "energy step";
}

}  // namespace

EnergyPlan plan_energy(const std::vector<EnergySpin>& spins, std::size_t naux, kernels::Backend backend,
                       kernels::Precision precision, std::size_t ram_bytes, Communicator& comm,
                       const EnergyDevice& device) {
  const EnergySizes z = energy_sizes(spins, naux, precision, comm.size());
  const WorkspaceRule rule{spins, backend, precision, device.gpu, ram_bytes, comm.size(), omp_get_max_threads()};
  EnergyPlan plan;
  plan.precision = precision;
  plan.device = device;
  plan.chunk_occ = z.chunk;
  plan.block_occ = z.mine_max;
  std::size_t beside = z.visiting;  // held besides the workspace
  bool blocked = false;             // pairs of different blocks of one spin are summed
  if (z.in_place) {  // B used where it lies
  } else if (z.in_memory && rule.at(z.mine_max, z.visiting + z.copy, false).bytes + z.visiting + z.copy <= ram_bytes) {
    plan.converted_copy = true;
    beside += z.copy;
  } else {
    plan.blocks_loaded = true;
    plan.block_occ = largest_block(rule, z);
  }
  if (device.gpu)
    plan.block_occ = std::min(plan.block_occ,
                              plan_on_gpu(spins, naux, rule.at(1, 0, false).backend, precision, device, z.chunk).block_occ);
  // Every rank takes blocks of one size, the smallest any rank needs: the exchanges pair up round
  // by round.
  const auto proposed = comm.allgather(double(plan.block_occ));
  if (const auto agreed = static_cast<std::size_t>(*std::min_element(proposed.begin(), proposed.end()));
      agreed != plan.block_occ) {
    plan.block_occ = agreed;
    blocked = true;
  }
  const std::size_t buffers = plan.blocks_loaded ? block_buffer_bytes(z, plan.block_occ) : 0;
  if (plan.blocks_loaded) {
    beside = buffers + z.visiting;
    blocked = true;
  }
  const Workspace workspace = rule.at(plan.block_occ, beside, blocked);
  plan.backend = workspace.backend;
  plan.workspace_bytes = workspace.bytes;
  plan.loop_memory_bytes = workspace.rest;
  if (device.gpu) plan.gpu = plan_on_gpu(spins, naux, plan.backend, precision, device, z.chunk, plan.block_occ);
  describe_energy_stage(plan, z, spins, naux, buffers);
  return plan;
}

namespace {

// Rows of this rank's share of one spin's B in precision Real: in place, or loaded into a buffer
// of fp64 rows (read from disk or converted; narrowed to Real in place).
template <typename Real>
class ShareRows {
 public:
  ShareRows(const BiaTensor& df, const Real* in_place) : df_(df), in_place_(in_place) {}
  const BiaTensor& df() const { return df_; }
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
  kernels::BiaView<Real> view(const Real* data, Range r) const {
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

  const BiaTensor& df_;
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
kernels::BiaView<Real> exchange(Step<Real>& step, const ShareRows<Real>& mine, int k, Range sent, Range summed,
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
// each loaded while the one before is summed; on a GPU, `then` travels during the last.
template <typename Real, typename Pairs>
void against_blocks(Step<Real>& step, const ShareRows<Real>& other, const std::vector<Range>& blocks, Pairs pairs,
                    kernels::GpuNextBlock then = {}) {
  if (blocks.empty()) return;
  std::future<const Real*> next =
      std::async(std::launch::deferred, [&] { return other.load(blocks[0], step.buffer_J[0]); });
  for (std::size_t j = 0; j < blocks.size(); ++j) {
    const Real* data = next.get();
    if (j + 1 < blocks.size())
      next = std::async(other.in_place() ? std::launch::deferred : std::launch::async,
                        [&, j] { return other.load(blocks[j + 1], step.buffer_J[(j + 1) % 2]); });
    // On a GPU, block j + 1 travels while this pair computes.
    step.kernel.gpu_next = j + 1 < blocks.size() ? other.next_block(blocks[j + 1]) : then;
    pairs(data, blocks[j]);
    step.kernel.gpu_next = {};
  }
}

// Block k's own pairs and its pairs with every earlier block of this rank. On a GPU the next
// call's new block travels while each call computes: the first earlier block during the own pairs,
// after the last earlier one block k + 1 (on one rank, where no visiting chunks come between).
template <typename Real>
void own_block_pairs(Step<Real>& step, const ShareRows<Real>& mine, const std::vector<Range>& blocks, std::size_t k,
                     const Real* B_I, kernels::EnergyResult& sum) {
  const BiaTensor& df = mine.df();
  const Range I = blocks[k];
  const kernels::GpuNextBlock next_I =
      step.comm.size() == 1 && k + 1 < blocks.size() ? mine.next_block(blocks[k + 1]) : kernels::GpuNextBlock{};
  step.kernel.gpu_next = k > 0 ? mine.next_block(blocks[0]) : next_I;
  const double flops = pair_flops(I.size() * (I.size() + 1) / 2, df.nvir, df.nvir, df.naux);
  add(sum, kernels::mp2_energy<Real>(step.backend, mine.view(B_I, I), mine.eps(I), df.eps_vir,
                                     step.progress.options_for(step.kernel, flops)));
  step.kernel.gpu_next = {};
  step.progress.finished(flops);
  const std::vector<Range> earlier(blocks.begin(), blocks.begin() + static_cast<long>(k));
  against_blocks(
      step, mine, earlier,
      [&](const Real* B_J, Range J) {
        const double f = pair_flops(I.size() * J.size(), df.nvir, df.nvir, df.naux);
        add(sum, kernels::mp2_energy_cross<Real>(step.backend, mine.view(B_I, I), mine.eps(I), mine.view(B_J, J),
                                                 mine.eps(J), df.eps_vir, step.progress.options_for(step.kernel, f)));
        step.progress.finished(f);
      },
      next_I);
}

// One spin's same-spin pairs (see distributed_energy.hpp).
template <typename Real>
kernels::EnergyResult same_spin_pairs(Step<Real>& step, const ShareRows<Real>& mine) {
  const int N = step.comm.size(), r = step.comm.rank();
  const BiaTensor& df = mine.df();
  const std::size_t nocc_total = df.eps_occ.size(), row = mine.row();
  const std::vector<Range> blocks = blocks_of(df.nocc, step.block);
  kernels::EnergyResult sum;
  for (std::size_t k = 0; k < rounds_of(nocc_total, step.block, N); ++k) {
    const Range I = k < blocks.size() ? blocks[k] : Range{df.nocc, df.nocc};
    const Real* B_I = I.size() > 0 ? mine.load(I, step.buffer_I) : nullptr;
    if (I.size() > 0) own_block_pairs(step, mine, blocks, k, B_I, sum);
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
  const BiaTensor &a = alpha.df(), &b = beta.df();
  const std::vector<Range> blocks_a = blocks_of(a.nocc, step.block), blocks_b = blocks_of(b.nocc, step.block);
  kernels::EnergyResult sum;
  for (std::size_t k = 0; k < rounds_of(a.eps_occ.size(), step.block, N); ++k) {
    const Range I = k < blocks_a.size() ? blocks_a[k] : Range{a.nocc, a.nocc};
    const Real* B_I = I.size() > 0 ? alpha.load(I, step.buffer_I) : nullptr;
    const auto pairs_with = [&](const kernels::BiaView<Real>& B_beta, std::span<const double> eps_beta) {
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
double rank_flops(const BiaTensor& alpha, const BiaTensor* beta, int ranks) {
  const double total = beta ? kernels::needed_flops_unrestricted(alpha.eps_occ.size(), alpha.nvir, beta->eps_occ.size(),
                                                                 beta->nvir, alpha.naux)
                            : kernels::needed_flops(alpha.eps_occ.size(), alpha.nvir, alpha.naux);
  return total / ranks;
}

// B in precision Real where the plan uses it in place: as stored, or converted whole into copy;
// null when the plan loads blocks.
template <typename Real>
const Real* b_in_place(const BiaTensor& df, const EnergyPlan& plan, MemoryBudget& budget, LargeArray<Real>& copy) {
  if (plan.blocks_loaded) return nullptr;
  const auto& stored = [&]() -> const auto& {
    if constexpr (std::is_same_v<Real, double>) return df.B64; else return df.B32;
  }();
  if (!stored.empty() || df.nocc == 0) return stored.data();
  copy = budget.allocate<Real>(df.nocc * df.nvir * df.naux, "B_ia^P converted to " + kernels::to_string(plan.precision));
  if constexpr (std::is_same_v<Real, double>)
    std::copy(df.B32.begin(), df.B32.end(), copy.begin());
  else
    std::copy(df.B64.begin(), df.B64.end(), copy.begin());
  return copy.data();
}

// The energies summed over ranks: one spin's e_ss sums both orderings of its
// exchange-antisymmetrised pairs, twice E_σσ.
void sum_over_ranks(const kernels::EnergyResult& aa, const kernels::EnergyResult& bb, const kernels::EnergyResult& ab,
                    bool unrestricted, Communicator& comm, DistributedEnergy& result) {
  double sums[3] = {unrestricted ? 0.5 * aa.e_ss : aa.e_ss, 0.5 * bb.e_ss, unrestricted ? ab.e_os : aa.e_os};
  comm.allreduce_sum(sums, 3);
  if (unrestricted) {
    result.e_aa = sums[0];
    result.e_bb = sums[1];
  }
  result.energy.e_ss = sums[0] + (unrestricted ? sums[1] : 0.0);
  result.energy.e_os = sums[2];
}

template <typename Real>
DistributedEnergy run_energy(const BiaTensor& alpha, const BiaTensor* beta, const EnergyPlan& plan, MemoryBudget& budget,
                             const std::function<void(double)>& progress, Communicator& comm) {
  const std::size_t row = std::max(alpha.nvir * alpha.naux, beta ? beta->nvir * beta->naux : 0);
  LargeArray<Real> copy_a, copy_b;
  const ShareRows<Real> a(alpha, b_in_place(alpha, plan, budget, copy_a));
  std::optional<ShareRows<Real>> b;
  if (beta) b.emplace(*beta, b_in_place(*beta, plan, budget, copy_b));
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
  sum_over_ranks(aa, bb, ab, beta != nullptr, comm, result);
  return result;
}

}  // namespace

DistributedEnergy distributed_mp2_energy(const BiaTensor& alpha, const BiaTensor* beta, const EnergyPlan& plan,
                                         MemoryBudget& budget, const std::function<void(double)>& progress,
                                         Communicator& comm) {
  return plan.precision == Precision::fp32 ? run_energy<float>(alpha, beta, plan, budget, progress, comm)
                                           : run_energy<double>(alpha, beta, plan, budget, progress, comm);
}

}  // namespace dfmp2
