#include "kernels/gpu/stacked_jk.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace dfmp2::kernels {
StackedJK::StackedJK(const BlockPackedLayout& layout, const GpuJKPlan& plan, JKDevice& device)
    : layout_(layout), plan_(plan), device_(device), engine_(device.engine()) {
  if (layout.n() != plan.nbf || layout.size() != plan.stored)
    throw std::invalid_argument("StackedJK: the plan is for another layout");
  DeviceCarver carve(device.memory());
  rows_ = carve.take<double>(plan.rows_bytes);
  stack_ = carve.take<void>(plan.squares_bytes);
  X_ = carve.take<void>(plan.x_bytes);
  const GpuJKParts parts = gpu_jk_parts(plan);
  J_ = carve.take<double>(parts.J);
  D_weighted_ = carve.take<double>(parts.D_weighted);
  K_ = carve.take<double>(parts.K);
  gamma_ = carve.take<double>(parts.gamma);
  factors64_ = carve.take<double>(parts.factors64);
  factors32_ = carve.take<float>(parts.factors32);
  K32_ = carve.take<float>(parts.K32);
  table_ = carve.take<std::uint32_t>(parts.table);
  table_host_ = packed_coordinates(layout);
  device.copy_to(table_, table_host_.data(), sizeof(std::uint32_t) * table_host_.size());
  device.zero(stack_, plan.squares_bytes);
  device.synchronise();
  if (plan.resident) loaded_.assign(plan.rows, 0);
}

void StackedJK::begin(std::span<const DensityFactors> densities, Precision precision) {
  if (densities.size() > plan_.densities)
    throw std::invalid_argument("StackedJK: " + std::to_string(densities.size()) + " densities, planned for " +
                                std::to_string(plan_.densities));
  precision_ = precision;
  copy_factors(densities);
  copy_densities(densities);
  const std::size_t n = plan_.nbf, d = densities.size();
  device_.zero(K_, sizeof(double) * d * n * n);
  device_.zero(J_, sizeof(double) * d * plan_.stored);
  prepare_stack();
}

// Each density's L (and R) in the build's precision, side by side in the factor buffer; the batch
// that X then has room for.
void StackedJK::copy_factors(std::span<const DensityFactors> densities) {
  const std::size_t n = plan_.nbf;
  factors_.clear();
  std::size_t columns = 0;
  for (const DensityFactors& d : densities) {
    Factor f{n * columns, 0, d.columns, d.symmetric()};
    columns += d.columns;
    if (!d.symmetric()) {
      f.right = n * columns;
      columns += d.columns;
    }
    factors_.push_back(f);
  }
  batch_ = gpu_jk_batch(plan_, columns, precision_);  // refuses more columns than the buffers hold
  factors64_host_.resize(n * columns);
  for (std::size_t s = 0; s < densities.size(); ++s) {
    const std::size_t size = n * factors_[s].columns;
    std::copy_n(densities[s].left, size, factors64_host_.begin() + std::ptrdiff_t(factors_[s].left));
    if (!factors_[s].symmetric)
      std::copy_n(densities[s].right, size, factors64_host_.begin() + std::ptrdiff_t(factors_[s].right));
  }
  if (precision_ == Precision::fp64) {
    device_.copy_to(factors64_, factors64_host_.data(), sizeof(double) * factors64_host_.size());
    return;
  }
  factors32_host_.assign(factors64_host_.begin(), factors64_host_.end());
  device_.copy_to(factors32_, factors32_host_.data(), sizeof(float) * factors32_host_.size());
}

// D_s = L_s R_sᵀ on the host, packed and weighted for γ_Q = Σ_p B^Q_p D_w,p.
void StackedJK::copy_densities(std::span<const DensityFactors> densities) {
  const std::size_t n = plan_.nbf, stored = plan_.stored;
  D_host_.resize(densities.size() * stored);
  std::vector<double> D(n * n);
  for (std::size_t s = 0; s < densities.size(); ++s) {
    const DensityFactors& d = densities[s];
    cpu_engine().gemm(Op::none, Op::transpose, 1.0, host_matrix(d.left, n, d.columns, n),
                      host_matrix(d.symmetric() ? d.left : d.right, n, d.columns, n), 0.0,
                      host_matrix(D.data(), n, n, n));
    const std::vector<double> packed = pack_weighted(layout_, D.data());
    std::copy(packed.begin(), packed.end(), D_host_.begin() + std::ptrdiff_t(s * stored));
  }
  device_.copy_to(D_weighted_, D_host_.data(), sizeof(double) * D_host_.size());
}

// The stack's unwritten elements (blocks not stored) must be zeros in the build's precision: a
// stack last written in the other precision is zeroed again.
void StackedJK::prepare_stack() {
  if (!stack_zero_ && stack_precision_ != precision_) device_.zero(stack_, plan_.squares_bytes);
  stack_zero_ = false;
  stack_precision_ = precision_;
}

void StackedJK::add(std::size_t first, const double* rows, std::size_t count) {
  if (first + count > plan_.rows)
    throw std::invalid_argument("StackedJK: rows " + std::to_string(first) + " + " + std::to_string(count) +
                                " beyond the plan's " + std::to_string(plan_.rows));
  if (plan_.resident)
    add_resident(first, rows, count);
  else
    add_streamed(rows, count);
}

void StackedJK::add_resident(std::size_t first, const double* rows, std::size_t count) {
  const std::size_t stored = plan_.stored;
  const auto range = loaded_.begin() + std::ptrdiff_t(first);
  const bool copy = !std::all_of(range, range + std::ptrdiff_t(count), [](char loaded) { return loaded != 0; });
  if (copy) {
    device_.copy_to(rows_ + first * stored, rows, sizeof(double) * count * stored);
    uploaded_ += sizeof(double) * count * stored;
    std::fill(range, range + std::ptrdiff_t(count), char(1));
  }
  for (std::size_t done = 0; done < count; done += batch_)
    add_batch(rows_ + (first + done) * stored, std::min(batch_, count - done));
  if (copy) device_.synchronise();  // the caller may reuse its rows
}

void StackedJK::add_streamed(const double* rows, std::size_t count) {
  const std::size_t stored = plan_.stored;
  for (std::size_t done = 0; done < count; done += batch_) {
    const std::size_t nq = std::min(batch_, count - done);
    device_.copy_to(rows_, rows + done * stored, sizeof(double) * nq * stored);  // after the last batch's reads
    uploaded_ += sizeof(double) * nq * stored;
    add_batch(rows_, nq);
  }
  device_.synchronise();  // the caller may reuse its rows
}

void StackedJK::add_batch(const double* B, std::size_t nq) {
  add_coulomb(B, nq);
  if (precision_ == Precision::fp32)
    add_exchange<float>(B, nq);
  else
    add_exchange<double>(B, nq);
}

void StackedJK::add_coulomb(const double* B, std::size_t nq) {
  const std::size_t stored = plan_.stored, d = factors_.size();
  if (d == 0) return;
  const MatrixView<const double> rows = view<const double>(B, stored, nq, stored);
  engine_.gemm(Op::transpose, Op::none, 1.0, rows, view<const double>(D_weighted_, stored, d, stored), 0.0,
               view(gamma_, nq, d, nq));
  engine_.gemm(Op::none, Op::none, 1.0, rows, view<const double>(gamma_, nq, d, nq), 1.0, view(J_, stored, d, stored));
}

template <typename Real>
void StackedJK::add_exchange(const double* B, std::size_t nq) {
  const std::size_t n = plan_.nbf, ld = plan_.batch_q * n;
  Real* stack = static_cast<Real*>(stack_);
  device_.unpack(B, nq, plan_.stored, table_, n, ld, stack);
  const Real* F = std::is_same_v<Real, float> ? reinterpret_cast<const Real*>(factors32_)
                                              : reinterpret_cast<const Real*>(factors64_);
  Real* X = static_cast<Real*>(X_);
  // X of the factor at `offset` (n·columns before it): nq·n × c, ld nq·n, after the earlier factors'.
  const auto product = [&](std::size_t offset, std::size_t c) {
    Real* X_f = X + nq * offset;
    engine_.gemm(Op::none, Op::none, Real(1), view<const Real>(stack, nq * n, n, ld),
                 view<const Real>(F + offset, n, c, n), Real(0), view(X_f, nq * n, c, nq * n));
    return X_f;
  };
  for (std::size_t s = 0; s < factors_.size(); ++s) {
    const Factor& f = factors_[s];
    if (f.columns == 0) continue;  // a spin without electrons (the H atom's β) has K = 0
    const Real* X_left = product(f.left, f.columns);
    const Real* X_right = f.symmetric ? nullptr : product(f.right, f.columns);
    add_product(s, X_left, X_right, nq * f.columns);
  }
}

// K_s += X_L X_Rᵀ (X_R null: the lower triangle of X_L X_Lᵀ), X n × k; fp32 products are summed
// into K_s in double.
template <typename Real>
void StackedJK::add_product(std::size_t s, const Real* X_left, const Real* X_right, std::size_t k) {
  const std::size_t n = plan_.nbf;
  const auto X = [&](const Real* data) { return view<const Real>(data, n, k, n); };
  double* K_s = K_ + s * n * n;
  if constexpr (std::is_same_v<Real, double>) {
    if (X_right == nullptr)
      engine_.syrk_lower(Op::none, 1.0, X(X_left), 1.0, view(K_s, n, n, n));
    else
      engine_.gemm(Op::none, Op::transpose, 1.0, X(X_left), X(X_right), 1.0, view(K_s, n, n, n));
  } else {
    if (X_right == nullptr)
      engine_.syrk_lower(Op::none, 1.0f, X(X_left), 0.0f, view(K32_, n, n, n));
    else
      engine_.gemm(Op::none, Op::transpose, 1.0f, X(X_left), X(X_right), 0.0f, view(K32_, n, n, n));
    device_.add_fp32(K32_, K_s, n, X_right == nullptr);
  }
}

void StackedJK::finish(std::span<double* const> J, std::span<double* const> K) {
  const std::size_t n = plan_.nbf, stored = plan_.stored, d = factors_.size();
  J_host_.resize(d * stored);
  K_host_.resize(d * n * n);
  device_.copy_from(J_host_.data(), J_, sizeof(double) * J_host_.size());
  device_.copy_from(K_host_.data(), K_, sizeof(double) * K_host_.size());
  device_.synchronise();
  for (std::size_t s = 0; s < d; ++s) {
    unpack_symmetric(layout_, J_host_.data() + s * stored, J[s]);
    const double* K_s = K_host_.data() + s * n * n;
    if (!factors_[s].symmetric) {
      std::copy_n(K_s, n * n, K[s]);
      continue;
    }
    for (std::size_t col = 0; col < n; ++col)
      for (std::size_t row = col; row < n; ++row) K[s][col * n + row] = K[s][row * n + col] = K_s[col * n + row];
  }
}

}  // namespace dfmp2::kernels
