#include "src/gradient/ri_passes.hpp"

#include <omp.h>

#include <algorithm>
#include <optional>

#include "kernels/block_packed.hpp"
#include "src/common/matrix_view.hpp"
#include "src/integrals/density_fitting.hpp"
#include "src/integrals/shell_ranges.hpp"
#include "src/integrals/three_index.hpp"

namespace dfmp2 {
namespace {

// Elements of every thread's buffers for the Lagrangian's products (sum_of_products).
std::size_t ri_transform_workspace(const Mp2GradientSizes& s) {
  return static_cast<std::size_t>(omp_get_max_threads()) * s.thread_buffers();
}

// Every set's (P|ia) of one RI function, and its occupied orbitals.
std::size_t ia_row_elements(const std::vector<Mp2GradientSizes>& sets) {
  std::size_t elements = 0;
  for (const Mp2GradientSizes& set : sets) elements += set.ov();
  return elements;
}
std::size_t active_orbitals(const std::vector<Mp2GradientSizes>& sets) {
  std::size_t orbitals = 0;
  for (const Mp2GradientSizes& set : sets) orbitals += set.active();
  return orbitals;
}

}  // namespace

Eigen::MatrixXd metric_lagrangian(const CoulombFitting& fit,
                                  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> V_inner,
                                  Communicator& comm, StageWork& work) {
  using RowMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const auto naux = static_cast<std::size_t>(V_inner.rows());
  comm.allreduce_sum(V_inner.data(), static_cast<std::size_t>(V_inner.size()));
  // Mᵀ on V_inner's rows, then on its product's transpose's: (Mᵀ V_inner M)ᵀ.
  fit.apply_transpose(V_inner.data(), naux);
  RowMajorMatrix V_transposed = V_inner.transpose();
  fit.apply_transpose(V_transposed.data(), naux);
  work.flops_fp64 += 2.0 * fit.flops(naux);
  return 0.5 * (V_transposed + V_transposed.transpose());
}

void fit_in_place(const CoulombFitting& fit, RowStore& B, std::span<double> buffer) {
  if (B.disk_rows() == 0) {
    fit.apply(B.ram(), B.cols());
    return;
  }
  const std::size_t width = buffer.size() / B.rows();
  for (std::size_t first = 0; first < B.cols(); first += width) {
    const std::size_t count = std::min(width, B.cols() - first);
    B.read(0, B.rows(), first, count, buffer.data(), count);
    fit.apply(buffer.data(), count);
    B.write(0, B.rows(), first, count, buffer.data(), count);
  }
}

std::size_t ri_read_buffer_elements(std::size_t naux, std::size_t row_elements, std::size_t disk_rows) {
  constexpr std::size_t kReadBufferBytes = std::size_t(128) << 20;
  const std::size_t row = std::max<std::size_t>(row_elements, 1);
  const std::size_t rows = std::clamp<std::size_t>(disk_rows / 4, 1, kReadBufferBytes / (sizeof(double) * row));
  return std::max(rows * row, naux);
}

std::size_t most_ram_rows(std::size_t naux, std::size_t ram_bytes,
                          const std::function<std::size_t(std::size_t)>& peak) {
  std::size_t lowest = 0, highest = naux;  // the count is in [lowest, highest]
  while (lowest < highest) {
    const std::size_t rows = (lowest + highest + 1) / 2;
    if (peak(rows) <= ram_bytes)
      lowest = rows;
    else
      highest = rows - 1;
  }
  return lowest;
}

StagePlan RiGradientPhases::peak() const {
  const auto larger = [](bool on_disk) {
    return [on_disk](const StagePlan* a, const StagePlan* b) {
      return on_disk ? a->disk_bytes() < b->disk_bytes() : a->ram_bytes() < b->ram_bytes();
    };
  };
  const std::vector<const StagePlan*> phases{&pass, &amplitudes, &z_vector, &separable_terms, &three_centre_terms};
  const StagePlan& in_ram = **std::max_element(phases.begin(), phases.end(), larger(false));
  const StagePlan& on_disk = **std::max_element(phases.begin(), phases.end(), larger(true));
  StagePlan out;
  for (const PlannedBlock& block : in_ram.blocks)
    if (!block.on_disk) out.blocks.push_back(block);
  for (const PlannedBlock& block : on_disk.blocks)
    if (block.on_disk) out.blocks.push_back(block);
  out.read_bytes = on_disk.read_bytes;
  out.read_per = on_disk.read_per;
  return out;
}

void RiGradientPhases::add_contraction(const std::vector<PlannedBlock>& held, const Mp2GradientSizes& sizes,
                                       const Mp2GradientPlan& p) {
  separable_terms = separable_term_plan(p.jk_terms, p.jk_layout);
  separable_terms.blocks.insert(separable_terms.blocks.end(), held.begin(), held.end());
  three_centre_terms.blocks = held;
  three_centre_terms.ram("a batch of Γ^P squares", squares_batch_bytes(sizes.nbf, sizes.naux, p.ri_largest_shell,
                                                                       p.jk_terms.ranks, p.jk_layout.block_bytes));
}

std::string rows_in_memory_note(const Mp2GradientPlan& p) {
  const std::size_t jk_rows = std::min(p.jk_layout.ram_rows, p.jk_terms.naux);
  if (p.ram_rows >= p.sets[0].naux && jk_rows >= p.jk_terms.naux) return "";
  return "the gradient's rows P in memory: B_ia^P and Γ_ia^P " + std::to_string(p.ram_rows) + " of " +
         std::to_string(p.sets[0].naux) + ", the JK set's c^P C " + std::to_string(jk_rows) + " of " +
         std::to_string(p.jk_terms.naux);
}

SeparableTermLayout separable_layout_that_fits(std::size_t naux, std::size_t ram_bytes,
                                               const std::function<std::size_t(const SeparableTermLayout&)>& peak) {
  SeparableTermLayout layout{0, 0};
  layout.ram_rows = most_ram_rows(naux, ram_bytes, [&](std::size_t rows) { return peak({rows, 0}); });
  for (std::size_t bytes = kLargestSeparableBlock; bytes >= (std::size_t(1) << 20); bytes /= 2)
    if (peak({layout.ram_rows, bytes}) <= ram_bytes) {
      layout.block_bytes = bytes;
      break;
    }
  return layout;
}

std::size_t ri_fit_bytes(std::size_t naux) { return CoulombFitting::peak_bytes(naux) + sizeof(double) * naux * naux; }

StagePlan ri_pass_plan(const std::vector<Mp2GradientSizes>& sets, std::size_t batch_functions,
                       const std::vector<PlannedBlock>& held, bool keeps_ao) {
  const Mp2GradientSizes& s = sets[0];
  StagePlan pass;
  pass.ram("the RI metric, its fit and V_PQ", ri_fit_bytes(s.naux));
  pass.blocks.insert(pass.blocks.end(), held.begin(), held.end());
  if (keeps_ao)
    pass.ram(kKeptRiIntegrals, MemoryBudget::double_array_bytes(s.ao_batch(s.naux)));
  else
    pass.ram("the RI integrals (P|μν) of a batch", MemoryBudget::double_array_bytes(s.ao_batch(batch_functions)));
  pass.ram("(P|ia) of a batch", MemoryBudget::double_array_bytes(batch_functions * ia_row_elements(sets)));
  pass.ram("the transform's per-thread buffers",
           std::max(MemoryBudget::double_array_bytes(ri_transform_workspace(s)),
                    OccupiedVirtualTransform::thread_buffer_bytes(s.nbf, active_orbitals(sets))));
  return pass;
}

std::size_t ri_batch_functions(const libint2::BasisSet& ri_aux, const std::vector<Mp2GradientSizes>& sets,
                               std::size_t ram_bytes, int ranks,
                               const std::function<RiGradientPhases(std::size_t batch_functions)>& phases,
                               bool keeps_ao) {
  const Mp2GradientSizes& sizes = sets[0];
  const std::size_t shell = largest_shell(ri_aux);
  const RiGradientPhases smallest_batches = phases(shell);
  const std::size_t room = std::min(ram_bytes, smallest_batches.amplitudes.ram_bytes());
  // What grows with the batch: its (P|ia), and its (P|μν) unless all of them are kept anyway.
  const std::size_t ao_per_function = keeps_ao ? 0 : sizes.ao_batch(1);
  const std::size_t smallest = MemoryBudget::double_array_bytes(ao_per_function * shell) +
                               MemoryBudget::double_array_bytes(ia_row_elements(sets) * shell);
  const std::size_t other = smallest_batches.pass.ram_bytes() - smallest + 2 * MemoryBudget::kPageSlack;
  const std::size_t per_function = sizeof(double) * (ao_per_function + ia_row_elements(sets));
  const std::size_t fit = room > other ? (room - other) / per_function : 0;
  const std::size_t share = share_of(sizes.naux, 0, ranks).size();  // the largest
  return std::clamp(fit, shell, std::max(shell, share));
}

std::vector<ShellRange> RiPasses::batches() const {
  return shell_batches(ri_aux, {0, ri_aux.size()}, batch_functions);
}

void RiPasses::share_rows(RowStore& store, std::span<double> buffer) const {
  const std::vector<ShellRange> all = batches();
  for (std::size_t b = 0; b < all.size(); ++b)
    broadcast_rows(store, first_function(ri_aux, all[b].first), function_count(ri_aux, all[b]),
                   round_robin_owner(b, comm.size()), buffer, comm);
}

void RiPasses::for_each_batch(const std::function<void(std::size_t first, std::size_t count, const double* ao)>& use,
                              StageWork& work) const {
  const std::vector<ShellRange> mine = round_robin_share(batches(), comm.rank(), comm.size());
  const bool made = kept != nullptr && kept->made;
  const std::optional<ThreeIndexIntegrals> integrals =
      made ? std::nullopt : std::optional<ThreeIndexIntegrals>(std::in_place, ri_aux, obs, pairs, metric);
  LargeArray<double> ao = kept != nullptr ? LargeArray<double>()
                                          : budget.allocate<double>(sizes.ao_batch(batch_functions),
                                                                    "the RI integrals (P|μν) of a batch");
  double* kept_rows = kept != nullptr ? kept->rows.data() : nullptr;
  for (std::size_t b = 0; b < mine.size(); ++b) {
    const ShellRange& batch = mine[b];
    const std::size_t count = function_count(ri_aux, batch);
    double* rows = kept != nullptr ? kept_rows : ao.data();
    if (!made) {
      integrals->compute(batch, {0, obs.size()}, rows);
      work.libint_seconds += integrals->libint_seconds(batch, {0, obs.size()});
    }
    use(first_function(ri_aux, batch.first), count, rows);
    if (kept != nullptr) kept_rows += sizes.ao_batch(count);
    if (progress) progress(static_cast<double>(b + 1) / static_cast<double>(mine.size()));
  }
  if (kept != nullptr) kept->made = true;
}

std::vector<Eigen::MatrixXd> RiPasses::sum_of_products(
    const std::vector<Eigen::Index>& columns,
    const std::function<void(std::size_t s, Eigen::Index P, double* R)>& right,
    const std::vector<double>& right_flops, StageWork& work) const {
  const auto nbf = static_cast<Eigen::Index>(obs.nbf());
  LargeArray<double> workspace =
      budget.allocate<double>(ri_transform_workspace(sizes), "the transform's per-thread buffers");
  // Each thread's sums: nbf × columns each, O(nbf²).
  std::vector<std::vector<Eigen::MatrixXd>> sums(static_cast<std::size_t>(omp_get_max_threads()));
  for (std::vector<Eigen::MatrixXd>& mine : sums)
    for (Eigen::Index c : columns) mine.push_back(Eigen::MatrixXd::Zero(nbf, c));
  for_each_batch(
      [&](std::size_t first, std::size_t count, const double* ao) {
#pragma omp parallel
        {
          const auto thread = static_cast<std::size_t>(omp_get_thread_num());
          double* square = workspace.data() + thread * sizes.thread_buffers();
          double* R = square + nbf * nbf;
          const Eigen::Map<const Eigen::MatrixXd> B(square, nbf, nbf);
#pragma omp for schedule(dynamic)
          for (std::size_t f = 0; f < count; ++f) {
            kernels::unpack_symmetric(pairs.layout, ao + f * pairs.layout.size(), square);
            for (std::size_t s = 0; s < columns.size(); ++s) {
              right(s, static_cast<Eigen::Index>(first + f), R);
              gemm(engine, kernels::Op::none, kernels::Op::none, 1.0, B,
                   Eigen::Map<const Eigen::MatrixXd>(R, nbf, columns[s]), 1.0, sums[thread][s]);
            }
          }
        }
        for (std::size_t s = 0; s < columns.size(); ++s)
          work.flops_fp64 +=
              static_cast<double>(count) * (right_flops[s] + 2.0 * double(nbf * nbf) * double(columns[s]));
      },
      work);
  for (std::size_t t = 1; t < sums.size(); ++t)
    for (std::size_t s = 0; s < columns.size(); ++s) sums[0][s] += sums[t][s];
  return sums[0];
}

void RiPasses::occupied_virtual(const std::vector<TransformSpin>& sets, std::vector<RowStore>& ia,
                                StageWork& work) const {
  std::size_t nocc_all = 0;
  for (const TransformSpin& set : sets) nocc_all += static_cast<std::size_t>(set.C_occ.cols());
  const auto buffers = budget.reserve(OccupiedVirtualTransform::thread_buffer_bytes(obs.nbf(), nocc_all),
                                      "the transform's per-thread buffers");
  OccupiedVirtualTransform transform(pairs.layout, sets, engine);
  LargeArray<double> rows = budget.allocate<double>(batch_functions * transform.row_elements(), "(P|ia) of a batch");
  for_each_batch(
      [&](std::size_t first, std::size_t count, const double* ao) {
        transform(ao, count, rows.data());
        work.flops_fp64 += static_cast<double>(count) * transform.flops_per_row();
        for (std::size_t s = 0; s < sets.size(); ++s)
          ia[s].write(first, count, 0, ia[s].cols(), rows.data() + transform.offset(s), transform.row_elements());
      },
      work);
}

}  // namespace dfmp2
