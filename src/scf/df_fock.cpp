#include "src/scf/df_fock.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <tuple>

#include "src/integrals/density_fitting.hpp"
#include "src/integrals/shell_ranges.hpp"

namespace dfmp2 {
namespace {

// The workspace of builds of `spins` densities: a guess density's factor may have up to nbf columns.
std::size_t workspace_bytes(const kernels::BlockPackedLayout& layout, const kernels::ProductExtent& product,
                            std::size_t spins) {
  return kernels::PackedJK::workspace_bytes({layout.n(), layout.size(), spins, spins * layout.n(), 0, product},
                                            omp_get_max_threads());
}

// A read buffer: large sequential reads, and a small share of the memory.
constexpr std::size_t kReadBufferBytes = std::size_t(256) << 20;

std::size_t columns_of(const kernels::BlockPackedLayout& layout, ShellRange rows) {
  return layout.row_block_offset(rows.last) - layout.row_block_offset(rows.first);
}

// The set-up's rounds over MPI: the most columns one round trades, and how many rounds there are.
std::pair<std::size_t, std::size_t> exchange_of(const libint2::BasisSet& obs, const ShellPairs& pairs,
                                                const FittedTensorPlan& t) {
  std::vector<std::size_t> round_columns;
  for (int r = 0; r < t.ranks; ++r) {
    const auto batches = fitted_tensor_batches(obs, pairs, t, r, t.ranks);
    round_columns.resize(std::max(round_columns.size(), batches.size()), 0);
    for (std::size_t k = 0; k < batches.size(); ++k) round_columns[k] += columns_of(pairs.layout, batches[k]);
  }
  return {*std::max_element(round_columns.begin(), round_columns.end()), round_columns.size()};
}

// What the set-up holds beside the tensor's rows in memory, as planned blocks.
void add_setup_blocks(const FittedTensorPlan& t, std::size_t rounds, StagePlan& setup) {
  setup.ram("the DF-SCF fitting metric", CoulombFitting::peak_bytes(t.naux));
  if (t.in_place()) return;
  setup.ram("the DF-SCF integrals of a batch of shell rows",
            MemoryBudget::double_array_bytes(t.naux * t.batch_columns));
  if (t.ranks == 1) return;
  if (!(rounds == 1 && t.disk_rows() == 0))  // else traded straight into the tensor
    setup.ram("the DF-SCF tensor traded between ranks",
              MemoryBudget::double_array_bytes(t.q.size() * t.exchange_columns));
  setup.ram("the exchange between ranks", setup_exchange_bytes(t));
}

// Out of core: batches of about an eighth of the memory, every rank alike; when that does not fit
// on some rank, the least every rank can do with (one shell row at a time, one row read at a
// time); then as many of this rank's rows in memory as the rest leaves. others(): the bytes held
// beside the tensor's rows with t as it stands (it settles the set-up's rounds).
void plan_out_of_core(FittedTensorPlan& t, std::size_t widest_row, std::size_t widest_part, std::size_t ram_bytes,
                      const std::function<std::size_t()>& others, Communicator& comm) {
  const std::size_t row = sizeof(double) * t.stored;
  const std::size_t fit_columns = ram_bytes / 8 / (sizeof(double) * std::max<std::size_t>(t.naux, 1));
  const auto all = comm.allgather(double(std::clamp(fit_columns, widest_row, widest_part)));
  t.batch_columns = static_cast<std::size_t>(*std::min_element(all.begin(), all.end()));
  t.read_rows = std::clamp<std::size_t>(std::min(kReadBufferBytes, ram_bytes / 16) / row, 1, t.q.size());
  t.ram_rows = 0;
  const auto short_of = comm.allgather(others() > ram_bytes ? 1.0 : 0.0);
  if (*std::max_element(short_of.begin(), short_of.end()) > 0.0) {
    t.batch_columns = widest_row;
    t.read_rows = 1;
  }
  const std::size_t other = others() + MemoryBudget::kPageSlack;
  t.ram_rows = ram_bytes > other ? std::min(t.q.size(), (ram_bytes - other) / row) : 0;
  others();  // rounds with these rows in memory
}

// The set-up's, the builder's and the iterations' stage plans, and their note.
void describe_df_scf_plan(DensityFittedScfPlan& plan, std::size_t rounds, const libint2::BasisSet& obs,
                          const kernels::ProductExtent& product, const std::vector<PlannedBlock>& scf_blocks) {
  const FittedTensorPlan& t = plan.tensor;
  const std::size_t in_memory = MemoryBudget::double_array_bytes(t.ram_rows * t.stored);
  const std::size_t on_disk = t.disk_rows() * sizeof(double) * t.stored;
  for (StagePlan* stage : {&plan.setup, &plan.builder}) {
    stage->ram("the DF-SCF tensor, in memory", in_memory);
    stage->disk("the DF-SCF tensor, on disk", on_disk);
  }
  add_setup_blocks(t, rounds, plan.setup);
  if (on_disk > 0)
    plan.builder.ram("the DF-SCF tensor's read buffers", MemoryBudget::double_array_bytes(2 * t.read_rows * t.stored));
  plan.builder.ram("the J/K builds' workspace", plan.workspace_bytes);
  plan.iterations.blocks = plan.builder.blocks;
  plan.iterations.blocks.insert(plan.iterations.blocks.end(), scf_blocks.begin(), scf_blocks.end());
  plan.iterations.read_bytes = on_disk;
  plan.iterations.read_per = "SCF iteration";
  char note[192];
  std::snprintf(note, sizeof note,
                "the DF-SCF tensor stores %.1f %% of the packed μν pairs (Schwarz screening); its exchange "
                "multiplies %.1f %% of each square (%s)",
                100.0 * double(t.stored) / double(kernels::packed_size(obs.nbf())),
                100.0 * double(product.multiplied) / (double(obs.nbf()) * double(obs.nbf())),
                product.most_columns > 0 ? "row groups" : "one SYMM");
  plan.setup.note = plan.iterations.note = note;
}

}  // namespace

DensityFittedScfPlan plan_density_fitted_scf(const libint2::BasisSet& obs, const libint2::BasisSet& aux,
                                             const ShellPairs& pairs, std::size_t spins,
                                             const std::vector<PlannedBlock>& scf_blocks, std::size_t ram_bytes,
                                             Communicator& comm) {
  std::size_t scf_bytes = 0;
  for (const PlannedBlock& block : scf_blocks) scf_bytes += block.bytes;
  const kernels::BlockPackedLayout& layout = pairs.layout;
  DensityFittedScfPlan plan;
  FittedTensorPlan& t = plan.tensor;
  t.ranks = comm.size();
  t.naux = static_cast<std::size_t>(aux.nbf());
  t.q = share_of(t.naux, comm.rank(), comm.size());
  t.stored = layout.size();
  const kernels::ProductExtent product = kernels::PackedJK::product_extent(layout);
  plan.workspace_bytes = workspace_bytes(layout, product, spins);
  std::size_t widest_part = 0, widest_row = 0;
  for (int r = 0; r < t.ranks; ++r) widest_part = std::max(widest_part, columns_of(layout, shell_part_of_rows(obs, layout, r, t.ranks)));
  for (std::size_t s = 0; s < obs.size(); ++s) widest_row = std::max(widest_row, columns_of(layout, {s, s + 1}));

  // Beside the tensor's rows in memory: the set-up's batches and exchange, the builds' buffers.
  const auto others = [&](std::size_t& rounds) {
    std::tie(t.exchange_columns, rounds) = exchange_of(obs, pairs, t);
    StagePlan setup;
    add_setup_blocks(t, rounds, setup);
    const std::size_t read = t.disk_rows() > 0 ? MemoryBudget::double_array_bytes(2 * t.read_rows * t.stored) : 0;
    return std::max(setup.ram_bytes(), read + plan.workspace_bytes + scf_bytes);
  };
  std::size_t rounds = 1;
  t.ram_rows = t.q.size();  // all in memory: one batch of every rank's rows
  t.batch_columns = t.ranks == 1 ? t.stored : widest_part;
  // Every rank takes the same route: the set-up's rounds pair up.
  const auto too_big =
      comm.allgather(MemoryBudget::double_array_bytes(t.q.size() * t.stored) + others(rounds) > ram_bytes ? 1.0 : 0.0);
  if (*std::max_element(too_big.begin(), too_big.end()) > 0.0)
    plan_out_of_core(t, widest_row, widest_part, ram_bytes, [&] { return others(rounds); }, comm);
  describe_df_scf_plan(plan, rounds, obs, product, scf_blocks);
  return plan;
}

DensityFittedFock::DensityFittedFock(const libint2::BasisSet& obs, const libint2::BasisSet& aux,
                                     const ShellPairs& pairs, const DensityFittedScfPlan& plan, MemoryBudget& budget,
                                     const ScratchDirectory* scratch, Communicator& comm,
                                     const std::function<void(double)>& progress)
    : comm_(comm),
      layout_(pairs.layout),
      nbf_(obs.nbf()),
      store_(obs, aux, pairs, plan.tensor, budget, scratch, comm, progress),
      gpu_jk_(plan.gpu ? std::make_unique<kernels::GpuJK>(pairs.layout, *plan.gpu) : nullptr),
      gpu_gflops_(plan.gpu_gflops),
      jk_(pairs.layout, omp_get_max_threads()),
      budget_(budget),
      workspace_bytes_(plan.workspace_bytes) {}

std::vector<Eigen::MatrixXd> DensityFittedFock::two_electron_fock(std::span<const FactorPair> densities,
                                                                  kernels::Precision precision) {
  const auto n = static_cast<Eigen::Index>(nbf_);
  std::vector<kernels::DensityFactors> factors;
  std::vector<Eigen::MatrixXd> J, G;  // G holds K_s first
  for (const FactorPair& d : densities) {
    factors.push_back({d.left.data(), d.is_symmetric() ? nullptr : d.right.data(), std::size_t(d.left.cols())});
    J.emplace_back(n, n);
    G.emplace_back(n, n);
  }
  std::vector<double*> J_data, K_data;
  for (std::size_t s = 0; s < densities.size(); ++s) {
    J_data.push_back(J[s].data());
    K_data.push_back(G[s].data());
  }
  coulomb_exchange(factors, J_data, K_data, precision);
  const double w = 2.0 / double(densities.size());  // the electrons an orbital of a set holds
  for (std::size_t t = 1; t < J.size(); ++t) J[0] += J[t];  // J of the total density: J is linear in D
  for (Eigen::MatrixXd& G_s : G) {
    G_s = w * J[0] - G_s;
    comm_.allreduce_sum(G_s.data(), static_cast<std::size_t>(G_s.size()));
  }
  return G;
}

std::unique_ptr<FockResponse> DensityFittedFock::occupied_response(std::vector<Eigen::MatrixXd> C_occ,
                                                                   MemoryBudget& budget, bool fp32,
                                                                   const ResponseOnGpu* gpu) {
  return std::make_unique<OccupiedFockResponse>(store_, layout_, std::move(C_occ), budget, fp32, gpu, comm_);
}

void DensityFittedFock::set_aside_workspace() {
  if (!workspace_) workspace_ = budget_.reserve(workspace_bytes_, "the J/K builds' workspace");
}

void DensityFittedFock::coulomb_exchange(std::span<const kernels::DensityFactors> densities,
                                         std::span<double* const> J, std::span<double* const> K,
                                         kernels::Precision precision) {
  set_aside_workspace();
  if (gpu_jk_)
    gpu_jk_->begin(densities, precision);
  else
    jk_.begin(densities, precision);
  // In steps of a sixteenth of the rows, for progress.
  const std::size_t total = store_.rows(), step = std::max<std::size_t>(total / 16, 256);
  if (progress_) progress_(0.0);
  store_.for_each_block([&](std::size_t first, std::size_t count, const double* rows) {
    for (std::size_t done = 0; done < count; done += step) {
      const std::size_t n = std::min(step, count - done);
      if (gpu_jk_)
        gpu_jk_->add(first + done, rows + done * layout_.size(), n);
      else
        jk_.add(rows + done * layout_.size(), n);
      if (progress_) progress_(double(first + done + n) / double(std::max<std::size_t>(total, 1)));
    }
  });
  if (gpu_jk_)
    gpu_jk_->finish(J, K);
  else
    jk_.finish(J, K);
  kernels::JKShape shape = jk_.shape(densities);
  if (gpu_jk_) {  // whole squares multiplied, at cuBLAS's rate
    shape.product = {nbf_ * nbf_, 0, 0};
    work_.add_gpu_flops(kernels::PackedJK::flops(shape, store_.rows()), gpu_gflops_);
    return;
  }
  const double flops = kernels::PackedJK::flops(shape, store_.rows());
  (precision == kernels::Precision::fp32 ? work_.flops_fp32 : work_.flops_fp64) += flops;
}

namespace {

// Each set's B^Q C_s and C_sᵀ B^Q C_s of `rows` rows Q, drawn from the budget.
template <typename Real>
std::vector<LargeArray<Real>> occupied_caches(MemoryBudget& budget, std::size_t nbf,
                                              const std::vector<Eigen::MatrixXd>& C_occ, std::size_t rows,
                                              const char* what) {
  std::vector<LargeArray<Real>> caches;
  for (const Eigen::MatrixXd& C : C_occ)
    caches.push_back(
        budget.allocate<Real>(kernels::OccupiedResponse::cache_elements(nbf, std::size_t(C.cols()), rows), what));
  return caches;
}

}  // namespace

OccupiedFockResponse::OccupiedFockResponse(FittedTensorStore& factors, const kernels::BlockPackedLayout& layout,
                                           std::vector<Eigen::MatrixXd> C_occ, MemoryBudget& budget, bool fp32,
                                           const ResponseOnGpu* gpu, Communicator& comm)
    : factors_(factors),
      layout_(layout),
      comm_(comm),
      C_occ_(std::move(C_occ)),
      cache_(occupied_caches<double>(budget, layout.n(), C_occ_, factors.rows(),
                                     "the Z-vector's B^Q C_o and C_oᵀ B^Q C_o")) {
  if (gpu) {
    gpu_ = std::make_unique<kernels::StackedResponse>(layout, gpu->plan, gpu->device, response_sets());
    gpu_gflops_ = gpu->gflops;
  } else {
    if (fp32)
      cache_fp32_ = occupied_caches<float>(budget, layout.n(), C_occ_, factors.rows(),
                                           "the Z-vector's B^Q C_o and C_oᵀ B^Q C_o in fp32");
    workspace_ = budget.reserve(
        kernels::OccupiedResponse::workspace_bytes(layout.n(), nocc(), omp_get_max_threads(), fp32),
        "the Z-vector products' per-thread buffers");
    cpu_.emplace(layout, response_sets(), factors.rows(), omp_get_max_threads());
  }
  factors_.for_each_block([&](std::size_t first, std::size_t count, const double* rows) {
    if (gpu_)
      gpu_->cache(first, count, rows);
    else
      cpu_->cache(first, count, rows);
  });
}

std::vector<std::size_t> OccupiedFockResponse::nocc() const {
  std::vector<std::size_t> out;
  for (const Eigen::MatrixXd& C : C_occ_) out.push_back(std::size_t(C.cols()));
  return out;
}

std::vector<kernels::OccupiedResponse::Set> OccupiedFockResponse::response_sets() {
  std::vector<kernels::OccupiedResponse::Set> sets;
  for (std::size_t s = 0; s < C_occ_.size(); ++s)
    sets.push_back({C_occ_[s].data(), std::size_t(C_occ_[s].cols()), cache_[s].data(),
                    cache_fp32_.empty() ? nullptr : cache_fp32_[s].data()});
  return sets;
}

std::size_t OccupiedFockResponse::kept_products_bytes(std::size_t nbf, std::size_t nocc, std::size_t rows) {
  return MemoryBudget::double_array_bytes(kernels::OccupiedResponse::cache_elements(nbf, nocc, rows));
}

std::size_t OccupiedFockResponse::bytes(std::size_t nbf, std::span<const std::size_t> nocc, std::size_t rows,
                                        bool fp32, bool gpu) {
  fp32 = fp32 && !gpu;
  std::size_t bytes = gpu ? 0 : kernels::OccupiedResponse::workspace_bytes(nbf, nocc, omp_get_max_threads(), fp32);
  for (const std::size_t o : nocc)
    bytes += kept_products_bytes(nbf, o, rows) +
             (fp32 ? MemoryBudget::array_bytes(sizeof(float) * kernels::OccupiedResponse::cache_elements(nbf, o, rows))
                   : 0);
  return bytes;
}

std::vector<Eigen::MatrixXd> OccupiedFockResponse::of_changes(const std::vector<Eigen::MatrixXd>& L,
                                                              kernels::Precision precision) {
  std::vector<const double*> factors;
  for (const Eigen::MatrixXd& l : L) factors.push_back(l.data());
  if (gpu_) {
    gpu_->begin(factors);  // in fp64 whatever was asked: fp32 rounds would only cost iterations
    return product(kernels::gpu_response_flops(gpu_->plan(), false), 0.0);
  }
  cpu_->begin(factors, precision);
  const double flops = kernels::OccupiedResponse::flops(layout_.n(), nocc(), layout_.size(), factors_.rows());
  return product(precision == kernels::Precision::fp64 ? flops : 0.0, precision == kernels::Precision::fp32 ? flops : 0.0);
}

std::vector<Eigen::MatrixXd> OccupiedFockResponse::of_symmetric(const std::vector<Eigen::MatrixXd>& D) {
  std::vector<const double*> densities;
  for (const Eigen::MatrixXd& d : D) densities.push_back(d.data());
  if (gpu_) {
    gpu_->begin_symmetric(densities);
    return product(kernels::gpu_response_flops(gpu_->plan(), true), 0.0);
  }
  cpu_->begin_symmetric(densities);
  return product(
      kernels::OccupiedResponse::symmetric_flops(layout_.n(), nocc(), layout_.size(), factors_.rows()), 0.0);
}

std::vector<Eigen::MatrixXd> OccupiedFockResponse::product(double flops_fp64, double flops_fp32) {
  std::vector<Eigen::MatrixXd> FC_occ;
  std::vector<double*> out;
  for (const Eigen::MatrixXd& C : C_occ_) FC_occ.emplace_back(C.rows(), C.cols());
  for (Eigen::MatrixXd& F : FC_occ) out.push_back(F.data());
  factors_.for_each_block([&](std::size_t first, std::size_t count, const double* rows) {
    if (gpu_)
      gpu_->add(first, count, rows);
    else
      cpu_->add(first, count, rows);
  });
  if (gpu_)
    gpu_->finish(out);
  else
    cpu_->finish(out);
  for (Eigen::MatrixXd& F : FC_occ) comm_.allreduce_sum(F.data(), static_cast<std::size_t>(F.size()));
  if (gpu_) {
    work_.add_gpu_flops(flops_fp64 + flops_fp32, gpu_gflops_);
    return FC_occ;
  }
  work_.flops_fp64 += flops_fp64;
  work_.flops_fp32 += flops_fp32;
  return FC_occ;
}

}  // namespace dfmp2
