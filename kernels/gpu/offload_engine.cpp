#include "kernels/gpu/offload_engine.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "kernels/gpu/gpu_plan.hpp"

namespace dfmp2::kernels {
namespace {

// Rows [r0, r0 + nr) and columns [c0, c0 + nc) of op(M), as a view of M's stored elements.
template <typename Real>
MatrixView<Real> op_block(const MatrixView<Real>& M, Op op, std::size_t r0, std::size_t nr, std::size_t c0,
                          std::size_t nc) {
  if (op == Op::none) return {M.data + r0 + c0 * M.ld, nr, nc, M.ld, M.memory};
  return {M.data + c0 + r0 * M.ld, nc, nr, M.ld, M.memory};
}

// The elements from a view's first to its last, as BLAS addresses them.
template <typename Real>
std::size_t extent(const MatrixView<Real>& M) {
  return M.cols == 0 ? 0 : M.ld * (M.cols - 1) + M.rows;
}

}  // namespace

std::size_t GpuOffloadPlan::device_bytes() const {
  return gpu_aligned(sizeof(double) * resident_elements) + gpu_aligned(sizeof(double) * staging_elements) +
         gpu_aligned(sizeof(double) * held_elements);
}

GpuOffloadPlan plan_gpu_offload(const std::vector<std::size_t>& ranges, std::size_t largest_other, std::size_t held,
                                std::size_t device_bytes, const std::string& what) {
  const std::size_t total = std::accumulate(ranges.begin(), ranges.end(), std::size_t(0));
  const std::size_t largest_range = ranges.empty() ? 0 : *std::max_element(ranges.begin(), ranges.end());
  // Elements, less three alignments' rounding.
  const std::size_t available = device_bytes > 768 ? (device_bytes - 768) / sizeof(double) : 0;
  GpuOffloadPlan plan;
  plan.resident = total + 3 * std::max(largest_other, kGpuLeastStagingElements / 3) <= available;
  if (plan.resident) plan.resident_elements = total;
  const std::size_t wanted =
      std::max(3 * (plan.resident ? largest_other : std::max(largest_other, largest_range)), kGpuLeastStagingElements);
  if (plan.resident_elements + held + wanted <= available) plan.held_elements = held;
  plan.staging_elements = std::min(wanted, available - plan.resident_elements - plan.held_elements);
  if (plan.staging_elements < kGpuLeastStagingElements)
    throw GpuError("GPU: " + format_gib(device_bytes) + " of GPU memory is less than the " +
                   format_gib(sizeof(double) * kGpuLeastStagingElements + 768) + " " + what +
                   " need there: raise --gpu-memory or use --device cpu");
  return plan;
}

OffloadEngine::OffloadEngine(const GpuOffloadPlan& plan, JKDevice& device, ComputeEngine& host,
                             std::span<const std::span<const double>> ranges)
    : plan_(plan), device_(device), host_(host) {
  if (host.memory() != Memory::host) throw std::invalid_argument("OffloadEngine: needs an engine on host memory");
  DeviceCarver carve(device.memory());
  double* resident = carve.take<double>(gpu_aligned(sizeof(double) * plan.resident_elements));
  staging_ = carve.take<double>(gpu_aligned(sizeof(double) * plan.staging_elements));
  held_room_ = carve.take<double>(gpu_aligned(sizeof(double) * plan.held_elements));
  if (!plan.resident) {  // every product copies them
    streamed_.assign(ranges.begin(), ranges.end());
    for (const std::span<const double> range : streamed_) pin_host(range);
    return;
  }
  std::size_t elements = 0;
  for (const std::span<const double> range : ranges) elements += range.size();
  if (elements > plan.resident_elements)
    throw std::invalid_argument("OffloadEngine: the resident ranges exceed the plan's");
  for (const std::span<const double> range : ranges) {
    if (range.empty()) continue;  // a spin without electrons: nothing to copy, nothing to read there
    device.copy_to(resident, range.data(), sizeof(double) * range.size());
    uploaded_ += sizeof(double) * range.size();
    ranges_.push_back({range.data(), range.size(), resident});
    resident += range.size();
  }
  device.synchronise();
}

OffloadEngine::~OffloadEngine() {
  for (const std::span<const double> range : streamed_) unpin_host(range);
}

void OffloadEngine::pin_host(std::span<const double> host) {
  if (!host.empty()) device_.pin(host.data(), sizeof(double) * host.size());
}

void OffloadEngine::unpin_host(std::span<const double> host) {
  if (!host.empty()) device_.unpin(host.data());
}

namespace {

// Whether a view's elements lie in a range of host elements.
template <typename Real>
bool inside(const MatrixView<Real>& view, const double* host, std::size_t elements) {
  return view.data >= host && view.data + extent(view) <= host + elements;
}

}  // namespace

const double* OffloadEngine::resident_copy(const MatrixView<const double>& view) const {
  for (const std::vector<Range>* kept : {&ranges_, &held_})
    for (const Range& range : *kept)
      if (inside(view, range.host, range.elements)) return range.device + (view.data - range.host);
  return nullptr;
}

double* OffloadEngine::placed_copy(const MatrixView<double>& C) const {
  for (const Range& range : held_)
    if (range.placed && inside(C, range.host, range.elements)) return range.device + (C.data - range.host);
  return nullptr;
}

double* OffloadEngine::take_room(std::span<const double> range, bool placed) {
  if (range.empty() || held_used_ + range.size() > plan_.held_elements) return nullptr;
  double* room = held_room_ + held_used_;
  held_.push_back({range.data(), range.size(), room, placed});
  held_used_ += range.size();
  return room;
}

const double* OffloadEngine::hold(std::span<const double> operands) {
  double* room = take_room(operands, false);
  if (room == nullptr) return nullptr;
  device_.copy_to(room, operands.data(), sizeof(double) * operands.size());
  uploaded_ += sizeof(double) * operands.size();
  return room;
}

double* OffloadEngine::place(std::span<const double> range) { return take_room(range, true); }

// Every product has finished when it returns (run_gemm synchronises), so the room is free.
void OffloadEngine::release_operands() {
  held_.clear();
  held_used_ = 0;
}

// The whole product when it fits the staging buffer; else the dimension that is largest among
// those the staging buffer holds is halved until it fits.
OffloadEngine::Tile OffloadEngine::tile_for(std::size_t m, std::size_t n, std::size_t k, bool a_resident,
                                            bool b_resident, bool c_placed) const {
  Tile t{m, n, k};
  const bool k_staged = !a_resident || !b_resident;
  const auto need = [&] {
    return (a_resident ? 0 : t.m * t.k) + (b_resident ? 0 : t.k * t.n) + (c_placed ? 0 : t.m * t.n);
  };
  while (need() > plan_.staging_elements) {
    std::size_t& largest = k_staged && t.k >= t.m && t.k >= t.n ? t.k : (t.m >= t.n ? t.m : t.n);
    if (largest == 1) throw GpuError("GPU: the staging buffer cannot hold one element of a product");
    largest = (largest + 1) / 2;
  }
  return t;
}

MatrixView<const double> OffloadEngine::on_device(const MatrixView<const double>& block, double*& staging) {
  if (const double* resident = resident_copy(block))
    return {resident, block.rows, block.cols, block.ld, device_memory()};
  device_.copy_matrix_to(staging, block);
  uploaded_ += sizeof(double) * block.rows * block.cols;
  const MatrixView<const double> copy{staging, block.rows, block.cols, block.rows, device_memory()};
  staging += block.rows * block.cols;
  return copy;
}

// C_tile (rows from `row`, columns from `column` of C) = alpha op(A) op(B) + beta C_tile, the inner
// dimension in pieces of tile_k, on the GPU: at C_placed, or in the staging buffer, copied there
// first only when beta reads it and back at the end.
void OffloadEngine::multiply_tile(Op op_a, Op op_b, double alpha, const MatrixView<const double>& A,
                                  const MatrixView<const double>& B, double beta, const MatrixView<double>& C_tile,
                                  double* C_placed, std::size_t row, std::size_t column, std::size_t tile_k) {
  const std::size_t k = op_cols(op_a, A), staged_c = C_placed ? 0 : C_tile.rows * C_tile.cols;
  const MatrixView<double> C_on_device = C_placed
      ? MatrixView<double>{C_placed, C_tile.rows, C_tile.cols, C_tile.ld, device_memory()}
      : MatrixView<double>{staging_, C_tile.rows, C_tile.cols, C_tile.rows, device_memory()};
  if (beta != 0.0 && !C_placed) {
    device_.copy_matrix_to(staging_, C_tile);
    uploaded_ += sizeof(double) * staged_c;
  }
  for (std::size_t k0 = 0; k0 < k; k0 += tile_k) {
    const std::size_t width = std::min(tile_k, k - k0);
    double* staging = staging_ + staged_c;  // the queue orders reuse after the last GEMM
    const MatrixView<const double> A_part = on_device(op_block(A, op_a, row, C_tile.rows, k0, width), staging);
    const MatrixView<const double> B_part = on_device(op_block(B, op_b, k0, width, column, C_tile.cols), staging);
    device_.engine().gemm(op_a, op_b, alpha, A_part, B_part, k0 == 0 ? beta : 1.0, C_on_device);
  }
  if (!C_placed) device_.copy_matrix_from(C_tile, staging_);
}

void OffloadEngine::run_gemm(Op op_a, Op op_b, double alpha, const MatrixView<const double>& A,
                             const MatrixView<const double>& B, double beta, const MatrixView<double>& C) {
  const std::size_t m = C.rows, n = C.cols, k = op_cols(op_a, A);
  double* const C_placed = placed_copy(C);
  if (k == 0) {  // C = beta C: nothing to multiply
    if (C_placed) throw std::logic_error("OffloadEngine: a product into a placed C needs an inner dimension");
    host_.gemm(op_a, op_b, alpha, A, B, beta, C);
    return;
  }
  const Tile t = tile_for(m, n, k, resident_copy(A) != nullptr, resident_copy(B) != nullptr, C_placed != nullptr);
  for (std::size_t i0 = 0; i0 < m; i0 += t.m)
    for (std::size_t j0 = 0; j0 < n; j0 += t.n) {
      const MatrixView<double> C_tile = op_block(C, Op::none, i0, std::min(t.m, m - i0), j0, std::min(t.n, n - j0));
      multiply_tile(op_a, op_b, alpha, A, B, beta, C_tile, C_placed ? C_placed + (C_tile.data - C.data) : nullptr, i0,
                    j0, t.k);
    }
  device_.synchronise();
  ++products_;
}

void OffloadEngine::run_gemm(Op op_a, Op op_b, float alpha, const MatrixView<const float>& A,
                             const MatrixView<const float>& B, float beta, const MatrixView<float>& C) {
  host_.gemm(op_a, op_b, alpha, A, B, beta, C);
}
void OffloadEngine::run_syrk_lower(Op op_x, double alpha, const MatrixView<const double>& X, double beta,
                                   const MatrixView<double>& C) {
  host_.syrk_lower(op_x, alpha, X, beta, C);
}
void OffloadEngine::run_syrk_lower(Op op_x, float alpha, const MatrixView<const float>& X, float beta,
                                   const MatrixView<float>& C) {
  host_.syrk_lower(op_x, alpha, X, beta, C);
}
void OffloadEngine::run_symm_upper_left(double alpha, const MatrixView<const double>& A,
                                        const MatrixView<const double>& B, double beta, const MatrixView<double>& C) {
  host_.symm_upper_left(alpha, A, B, beta, C);
}
void OffloadEngine::run_symm_upper_left(float alpha, const MatrixView<const float>& A, const MatrixView<const float>& B,
                                        float beta, const MatrixView<float>& C) {
  host_.symm_upper_left(alpha, A, B, beta, C);
}
// On the GPU when L is there (resident or held): B through the staging buffer in tiles of the rows
// (Side::right) or columns (Side::left) each solve keeps apart, every tile solved whole and copied
// back. Else (L would crowd the staging buffer at every call) on the host.
void OffloadEngine::run_solve_lower(Side side, Op op_l, double alpha, const MatrixView<const double>& L,
                                    const MatrixView<double>& B) {
  const double* L_device = resident_copy(L);
  const std::size_t n = L.rows, apart = side == Side::left ? B.cols : B.rows;
  const std::size_t tile = std::min(apart, plan_.staging_elements / n);
  if (L_device == nullptr || tile == 0) {
    host_.solve_lower(side, op_l, alpha, L, B);
    return;
  }
  const MatrixView<const double> L_there{L_device, L.rows, L.cols, L.ld, device_memory()};
  for (std::size_t first = 0; first < apart; first += tile) {
    const std::size_t count = std::min(tile, apart - first);
    const MatrixView<double> B_tile = side == Side::left ? op_block(B, Op::none, 0, n, first, count)
                                                         : op_block(B, Op::none, first, count, 0, n);
    device_.copy_matrix_to(staging_, B_tile);
    uploaded_ += sizeof(double) * B_tile.rows * B_tile.cols;
    device_.engine().solve_lower(side, op_l, alpha, L_there,
                                 MatrixView<double>{staging_, B_tile.rows, B_tile.cols, B_tile.rows, device_memory()});
    device_.copy_matrix_from(B_tile, staging_);
  }
  device_.synchronise();
  ++products_;
}
void OffloadEngine::run_solve_lower(Side side, Op op_l, float alpha, const MatrixView<const float>& L,
                                    const MatrixView<float>& B) {
  host_.solve_lower(side, op_l, alpha, L, B);
}

}  // namespace dfmp2::kernels
