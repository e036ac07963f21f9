#include "kernels/occupied_response.hpp"

#include <omp.h>

#include <algorithm>
#include <stdexcept>
#include <type_traits>

#include "kernels/compute_engine.hpp"

namespace dfmp2::kernels {
namespace {

// Positions outside the stored blocks are never written by unpack_upper: the square is zeroed once.
template <typename Buffers>
void size_buffers(Buffers& b, std::size_t nbf, std::span<const std::size_t> nocc) {
  b.square.assign(nbf * nbf, 0);
  for (const std::size_t o : nocc) {
    b.Y.emplace_back(nbf * o);
    b.W.emplace_back(o * o);
    b.F.emplace_back(nbf * o);
  }
}

template <typename Buffers>
void zero_sums(Buffers& b) {
  for (auto& F : b.F) std::fill(F.begin(), F.end(), 0);
}

}  // namespace

OccupiedResponse::OccupiedResponse(const BlockPackedLayout& layout, std::vector<Set> sets, std::size_t rows,
                                   int threads)
    : layout_(layout),
      nbf_(layout.n()),
      rows_(rows),
      coulomb_weight_(4.0 / static_cast<double>(sets.size())),
      fp32_(std::any_of(sets.begin(), sets.end(), [](const Set& set) { return set.cache_fp32 != nullptr; })),
      threads_(static_cast<std::size_t>(std::max(threads, 1))) {
  std::vector<std::size_t> nocc;
  for (const Set& set : sets) {
    // A set without occupied orbitals (UHF's β of no electron) has empty caches.
    if (fp32_ && set.nocc > 0 && set.cache_fp32 == nullptr)
      throw std::logic_error("OccupiedResponse: an fp32 cache for every set or none");
    sets_.push_back({set, {}, {}, nullptr, nullptr, {}});
    if (fp32_) sets_.back().C_fp32.assign(set.C_occ, set.C_occ + nbf_ * set.nocc);
    nocc.push_back(set.nocc);
  }
  for (Thread& t : threads_) {
    size_buffers(t.fp64, nbf_, nocc);
    if (fp32_) size_buffers(t.fp32, nbf_, nocc);
  }
}

std::size_t OccupiedResponse::workspace_bytes(std::size_t nbf, std::span<const std::size_t> nocc, int threads,
                                              bool fp32) {
  std::size_t elements = nbf * nbf;
  for (const std::size_t o : nocc) elements += 2 * nbf * o + o * o;
  return std::size_t(std::max(threads, 1)) * (sizeof(double) + (fp32 ? sizeof(float) : 0)) * elements;
}

double OccupiedResponse::flops(std::size_t nbf, std::span<const std::size_t> nocc, std::size_t stored,
                               std::size_t rows) {
  const double n = double(nbf);
  double per_row = double(stored);
  for (const std::size_t set : nocc) {
    const double o = double(set);
    per_row += 2.0 * n * n * o + 6.0 * n * o * o + 4.0 * n * o;
  }
  return double(rows) * per_row;
}

double OccupiedResponse::symmetric_flops(std::size_t nbf, std::span<const std::size_t> nocc, std::size_t stored,
                                         std::size_t rows) {
  const double n = double(nbf);
  double per_row = 0.0;
  for (const std::size_t set : nocc)
    per_row += 4.0 * n * n * double(set) + 2.0 * n * double(set) + 2.0 * double(stored);
  return double(rows) * per_row;
}

template <typename Visit>
void OccupiedResponse::for_rows(std::size_t first, std::size_t count, const double* rows, const Visit& visit) {
  if (first + count > rows_) throw std::logic_error("OccupiedResponse: rows beyond those it was made for");
  const std::size_t stored = layout_.size();
#pragma omp parallel num_threads(static_cast<int>(threads_.size()))
  {
    Thread& t = threads_[static_cast<std::size_t>(omp_get_thread_num())];
#pragma omp for schedule(dynamic, 1)
    for (std::size_t q = 0; q < count; ++q) visit(t, first + q, rows + q * stored);
  }
}

void OccupiedResponse::cache(std::size_t first, std::size_t count, const double* rows) {
  const std::size_t n = nbf_;
  for_rows(first, count, rows, [&](Thread& t, std::size_t q, const double* row) {
    unpack_upper(layout_, row, t.fp64.square.data());
    for (std::size_t s = 0; s < sets_.size(); ++s) {
      const Set& set = sets_[s].set;
      const std::size_t o = set.nocc;
      if (o == 0) continue;  // BLAS refuses zero leading dimensions
      double* X_q = set.cache + q * per_row(s);
      const auto C_occ = host_matrix(set.C_occ, n, o, n);
      ComputeEngine& engine = cpu_engine();
      engine.symm_upper_left(1.0, host_matrix<const double>(t.fp64.square.data(), n, n, n), C_occ, 0.0,
                             host_matrix(X_q, n, o, n));
      engine.gemm(Op::transpose, Op::none, 1.0, C_occ, host_matrix<const double>(X_q, n, o, n), 0.0,
                  host_matrix(X_q + n * o, o, o, o));
      if (set.cache_fp32 != nullptr) std::copy(X_q, X_q + per_row(s), set.cache_fp32 + q * per_row(s));
    }
  });
}

void OccupiedResponse::begin(std::span<const double* const> L, Precision precision) {
  if (precision == Precision::fp32 && !fp32_)
    throw std::logic_error("OccupiedResponse: an fp32 product needs the fp32 cache");
  if (L.size() != sets_.size()) throw std::logic_error("OccupiedResponse: one L per set");
  symmetric_ = false;
  precision_ = precision;
  for (std::size_t s = 0; s < sets_.size(); ++s) {
    sets_[s].L = L[s];
    if (precision == Precision::fp32) sets_[s].L_fp32.assign(L[s], L[s] + nbf_ * sets_[s].set.nocc);
  }
  for (Thread& t : threads_) {
    zero_sums(t.fp64);
    zero_sums(t.fp32);
  }
}

void OccupiedResponse::begin_symmetric(std::span<const double* const> D) {
  if (D.size() != sets_.size()) throw std::logic_error("OccupiedResponse: one D per set");
  symmetric_ = true;
  precision_ = Precision::fp64;
  for (std::size_t s = 0; s < sets_.size(); ++s) {
    sets_[s].D = D[s];
    sets_[s].D_weights = pack_weighted(layout_, D[s]);
  }
  for (Thread& t : threads_) zero_sums(t.fp64);
}

template <typename Real>
void OccupiedResponse::add_row(Buffers<Real>& b, const double* row, std::size_t q) const {
  const std::size_t n = nbf_;
  constexpr bool fp64 = std::is_same_v<Real, double>;
  const auto cache_of = [&](std::size_t s) -> const Real* {
    if constexpr (fp64) return sets_[s].set.cache + q * per_row(s);
    else return sets_[s].set.cache_fp32 + q * per_row(s);
  };
  const auto L_of = [&](std::size_t s) -> const Real* {
    if constexpr (fp64) return sets_[s].L;
    else return sets_[s].L_fp32.data();
  };
  const auto C_of = [&](std::size_t s) -> const Real* {
    if constexpr (fp64) return sets_[s].set.C_occ;
    else return sets_[s].C_fp32.data();
  };
  unpack_upper(layout_, row, b.square.data());
  Real gamma = 0;
  for (std::size_t s = 0; s < sets_.size(); ++s) gamma += dot(n * sets_[s].set.nocc, cache_of(s), L_of(s));
  for (std::size_t s = 0; s < sets_.size(); ++s) {
    const std::size_t o = sets_[s].set.nocc;
    if (o == 0) continue;
    const Real *X = cache_of(s), *M = X + n * o, *L = L_of(s), *C = C_of(s);
    const auto Y = host_matrix(b.Y[s].data(), n, o, n), W = host_matrix(b.W[s].data(), o, o, o),
               F = host_matrix(b.F[s].data(), n, o, n);
    ComputeEngine& engine = cpu_engine();
    const auto B_Q = host_matrix<const Real>(b.square.data(), n, n, n);
    engine.symm_upper_left(Real(1), B_Q, host_matrix(L, n, o, n), Real(0), Y);  // Y = B^Q L
    axpy(n * o, Real(coulomb_weight_) * gamma, X, F.data);                      // 2w γ_Q X^Q
    engine.gemm(Op::none, Op::none, Real(-1), Y, host_matrix(M, o, o, o), Real(1), F);
    engine.gemm(Op::transpose, Op::none, Real(1), host_matrix(C, n, o, n), Y, Real(0), W);
    engine.gemm(Op::none, Op::transpose, Real(-1), host_matrix(X, n, o, n), W, Real(1), F);
  }
}

void OccupiedResponse::add_symmetric_row(Buffers<double>& b, const double* row, std::size_t q) const {
  const std::size_t n = nbf_;
  unpack_upper(layout_, row, b.square.data());
  double gamma = 0.0;
  for (const SetState& set : sets_) gamma += dot(set.D_weights.size(), row, set.D_weights.data());
  for (std::size_t s = 0; s < sets_.size(); ++s) {
    const std::size_t o = sets_[s].set.nocc;
    if (o == 0) continue;
    const double* X_q = sets_[s].set.cache + q * per_row(s);
    const auto Y = host_matrix(b.Y[s].data(), n, o, n);
    ComputeEngine& engine = cpu_engine();
    engine.gemm(Op::none, Op::none, 1.0, host_matrix(sets_[s].D, n, n, n), host_matrix(X_q, n, o, n), 0.0,
                Y);                                            // Y = D X^Q
    axpy(n * o, coulomb_weight_ * gamma, X_q, b.F[s].data());  // 2w γ_Q X^Q
    engine.symm_upper_left(-2.0, host_matrix<const double>(b.square.data(), n, n, n), Y, 1.0,
                           host_matrix(b.F[s].data(), n, o, n));
  }
}

void OccupiedResponse::add(std::size_t first, std::size_t count, const double* rows) {
  if (symmetric_)
    for_rows(first, count, rows,
             [&](Thread& t, std::size_t q, const double* row) { add_symmetric_row(t.fp64, row, q); });
  else if (precision_ == Precision::fp32)
    for_rows(first, count, rows, [&](Thread& t, std::size_t q, const double* row) { add_row(t.fp32, row, q); });
  else
    for_rows(first, count, rows, [&](Thread& t, std::size_t q, const double* row) { add_row(t.fp64, row, q); });
}

void OccupiedResponse::finish(std::span<double* const> FC_occ) {
  for (std::size_t s = 0; s < sets_.size(); ++s) {
    const std::size_t size = nbf_ * sets_[s].set.nocc;
    double* out = FC_occ[s];
    std::fill(out, out + size, 0.0);
    for (const Thread& t : threads_) {
      if (precision_ == Precision::fp32)
        for (std::size_t x = 0; x < size; ++x) out[x] += static_cast<double>(t.fp32.F[s][x]);
      else
        axpy(size, 1.0, t.fp64.F[s].data(), out);
    }
    sets_[s].L = nullptr;
    sets_[s].D = nullptr;
  }
}

}  // namespace dfmp2::kernels
