// Public entry points: argument checks, `auto` resolution and the backend registry (dispatch);
// the names are in energy_names.cpp.
#include "kernels/mp2_energy.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <type_traits>

#include "kernels/backends.hpp"
#include "kernels/gpu/gpu_energy.hpp"
#include "kernels/pair_schedule.hpp"

namespace dfmp2::kernels {

// From the measurements (results/energy_backends*.md, results/amdahl*/amdahl.md, both OpenBLAS
// kernel sets): in fp32 fused is the fastest on the medium and large shapes and on every
// molecule; in fp64 fused is ahead on water and benzene, and from nvir ≈ 150 the two are within
// 8 % of each other, loop ahead by up to 8 % from nvir ≈ 300 (the medium shape, the tetracene
// dimer) — when its T_flat holds the nocc/16 rows it is designed for.
Backend resolve_automatic(Precision precision, std::size_t nocc, std::size_t nvir, std::size_t memory_bytes) {
  constexpr std::size_t kLoopFromNvir = 300;
  if (precision == Precision::fp32 || nvir < kLoopFromNvir) return Backend::fused;
  const std::size_t rows = std::max<std::size_t>(1, nocc / 16);
  const std::size_t t_flat_bytes = rows * nvir * nocc * nvir * sizeof(double);
  return t_flat_bytes <= memory_bytes ? Backend::loop : Backend::fused;
}

std::size_t energy_workspace_bytes(Backend backend, Precision precision, const PairSpaceShape& shape, int threads,
                                   std::size_t memory_bytes) {
  const std::size_t elem = precision == Precision::fp32 ? sizeof(float) : sizeof(double);
  const detail::PairShape pairs{shape.nrows, shape.ncols, shape.triangular};
  if (backend == Backend::automatic) backend = resolve_automatic(precision, shape.ncols, shape.nvir_rows, memory_bytes);
  const std::size_t per_thread = std::size_t(std::max(threads, 1)), pair = shape.nvir_rows * shape.nvir_cols * elem;
  switch (backend) {
    case Backend::reference: return per_thread * pair;
    case Backend::loop: return detail::loop_chunk_pairs(pairs, pair, memory_bytes) * pair;
    case Backend::fused: {
      const std::size_t edge = detail::pair_block_edge(pairs, shape.nvir_rows, threads);
      return per_thread * edge * edge * pair;
    }
    case Backend::automatic: break;
  }
  return 0;
}

double needed_flops(std::size_t nocc, std::size_t nvir, std::size_t naux) {
  return 2.0 * (double(nocc) * double(nocc + 1) / 2.0) * double(nvir) * double(nvir) * double(naux);
}

double needed_flops_unrestricted(std::size_t nocc_alpha, std::size_t nvir_alpha, std::size_t nocc_beta,
                                 std::size_t nvir_beta, std::size_t naux) {
  const double opposite_spin =
      2.0 * double(nocc_alpha) * double(nocc_beta) * double(nvir_alpha) * double(nvir_beta) * double(naux);
  return needed_flops(nocc_alpha, nvir_alpha, naux) + needed_flops(nocc_beta, nvir_beta, naux) + opposite_spin;
}

namespace {

template <typename Real>
void check_block(const char* what, const BiaView<Real>& B, std::span<const double> eps_occ,
                 std::span<const double> eps_vir) {
  const std::string name = what;
  if (eps_occ.size() != B.nocc)
    throw std::invalid_argument(name + ": eps_occ has " + std::to_string(eps_occ.size()) +
                                " entries but B has nocc = " + std::to_string(B.nocc));
  if (eps_vir.size() != B.nvir)
    throw std::invalid_argument(name + ": eps_vir has " + std::to_string(eps_vir.size()) +
                                " entries but B has nvir = " + std::to_string(B.nvir));
  if (B.data == nullptr && B.nocc * B.nvir * B.naux != 0)
    throw std::invalid_argument(name + ": B has no data");
}

template <typename Real>
void check_same_naux(const char* what, const BiaView<Real>& rows, const BiaView<Real>& cols) {
  if (rows.naux != cols.naux)
    throw std::invalid_argument(std::string(what) + ": blocks have naux " + std::to_string(rows.naux) + " and " +
                                std::to_string(cols.naux));
}

// The registry: one line per backend.
template <typename Real>
EnergyResult dispatch(Backend backend, const detail::PairSpace<Real>& pairs, const EnergyOptions& options) {
  if (options.threads < 0) throw std::invalid_argument("mp2_energy: threads must be >= 0");
  // Checked here, not by the engine inside the backends' threads, where a throw would terminate.
  if (options.gpu == nullptr && (options.engine == nullptr || options.engine->memory() != Memory::host))
    throw std::invalid_argument("mp2_energy: the CPU backends need a compute engine on host memory");
  if (backend == Backend::automatic && options.gpu == nullptr)
    backend = resolve_automatic(std::is_same_v<Real, float> ? Precision::fp32 : Precision::fp64, pairs.cols.nocc,
                                pairs.rows.nvir, options.memory_bytes);
  const auto start = std::chrono::steady_clock::now();
  EnergyResult r;
  if (pairs.rows.nocc == 0 || pairs.cols.nocc == 0 || pairs.rows.nvir == 0 || pairs.cols.nvir == 0) {
    r.backend = backend;  // nothing to correlate
  } else if (options.gpu != nullptr) {
    r = options.gpu->energy(backend, pairs, options);
  } else {
    switch (backend) {
      case Backend::reference: r = detail::reference_energy(pairs, options); break;
      case Backend::loop: r = detail::loop_energy(pairs, options); break;
      case Backend::fused: r = detail::fused_energy(pairs, options); break;
      case Backend::automatic: break;  // resolved above
    }
  }
  r.total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace

template <typename Real>
EnergyResult mp2_energy(Backend backend, const BiaView<Real>& B, std::span<const double> eps_occ,
                        std::span<const double> eps_vir, const EnergyOptions& options) {
  check_block("mp2_energy", B, eps_occ, eps_vir);
  return dispatch<Real>(backend, {B, B, eps_occ, eps_occ, eps_vir, eps_vir, true, true}, options);
}

template <typename Real>
EnergyResult mp2_energy_cross(Backend backend, const BiaView<Real>& B_I,
                              std::span<const double> eps_I, const BiaView<Real>& B_J,
                              std::span<const double> eps_J, std::span<const double> eps_vir,
                              const EnergyOptions& options) {
  check_block("mp2_energy_cross (I)", B_I, eps_I, eps_vir);
  check_block("mp2_energy_cross (J)", B_J, eps_J, eps_vir);
  check_same_naux("mp2_energy_cross", B_I, B_J);
  return dispatch<Real>(backend, {B_I, B_J, eps_I, eps_J, eps_vir, eps_vir, false, true}, options);
}

template <typename Real>
EnergyResult mp2_energy_opposite_spin(Backend backend, const BiaView<Real>& B_alpha,
                                      std::span<const double> eps_occ_alpha, std::span<const double> eps_vir_alpha,
                                      const BiaView<Real>& B_beta, std::span<const double> eps_occ_beta,
                                      std::span<const double> eps_vir_beta, const EnergyOptions& options) {
  check_block("mp2_energy_opposite_spin (alpha)", B_alpha, eps_occ_alpha, eps_vir_alpha);
  check_block("mp2_energy_opposite_spin (beta)", B_beta, eps_occ_beta, eps_vir_beta);
  check_same_naux("mp2_energy_opposite_spin", B_alpha, B_beta);
  return dispatch<Real>(
      backend, {B_alpha, B_beta, eps_occ_alpha, eps_occ_beta, eps_vir_alpha, eps_vir_beta, false, false}, options);
}

#define DFMP2_INSTANTIATE_ENTRY_POINTS(Real)                                                             \
  template EnergyResult mp2_energy<Real>(Backend, const BiaView<Real>&, std::span<const double>,   \
                                         std::span<const double>, const EnergyOptions&);                \
  template EnergyResult mp2_energy_cross<Real>(Backend, const BiaView<Real>&,                      \
                                               std::span<const double>, const BiaView<Real>&,      \
                                               std::span<const double>, std::span<const double>,        \
                                               const EnergyOptions&);                                   \
  template EnergyResult mp2_energy_opposite_spin<Real>(                                                 \
      Backend, const BiaView<Real>&, std::span<const double>, std::span<const double>,             \
      const BiaView<Real>&, std::span<const double>, std::span<const double>, const EnergyOptions&);
DFMP2_INSTANTIATE_ENTRY_POINTS(double)
DFMP2_INSTANTIATE_ENTRY_POINTS(float)

}  // namespace dfmp2::kernels
