#include "kernels/occupied_response.hpp"

#include <omp.h>

#include <algorithm>
#include <stdexcept>

#include "kernels/blas.hpp"

namespace dfmp2::kernels {
namespace {

// Positions outside the stored blocks are never written by unpack_upper: the square is zeroed once.
template <typename Buffers>
void size_buffers(Buffers& b, std::size_t nbf, std::size_t nocc) {
  b.square.assign(nbf * nbf, 0);
  b.Y.resize(nbf * nocc);
  b.W.resize(nocc * nocc);
  b.F.resize(nbf * nocc);
}

}  // namespace

OccupiedResponse::OccupiedResponse(const BlockPackedLayout& layout, const double* C_occ, std::size_t nocc,
                                   std::size_t rows, double* cache, float* cache_fp32, int threads)
    : layout_(layout),
      C_occ_(C_occ),
      nbf_(layout.n()),
      nocc_(nocc),
      rows_(rows),
      cache_(cache),
      cache_fp32_(cache_fp32),
      threads_(static_cast<std::size_t>(std::max(threads, 1))) {
  for (Thread& t : threads_) {
    size_buffers(t.fp64, nbf_, nocc_);
    if (cache_fp32_ != nullptr) size_buffers(t.fp32, nbf_, nocc_);
  }
  if (cache_fp32_ != nullptr) C_occ_fp32_.assign(C_occ, C_occ + nbf_ * nocc_);
}

std::size_t OccupiedResponse::workspace_bytes(std::size_t nbf, std::size_t nocc, int threads, bool fp32) {
  return std::size_t(std::max(threads, 1)) * (sizeof(double) + (fp32 ? sizeof(float) : 0)) *
         (nbf * nbf + 2 * nbf * nocc + nocc * nocc);
}

double OccupiedResponse::flops(std::size_t nbf, std::size_t nocc, std::size_t stored, std::size_t rows) {
  const double n = double(nbf), o = double(nocc);
  return double(rows) * (2.0 * n * n * o + 6.0 * n * o * o + 4.0 * n * o + double(stored));
}

double OccupiedResponse::symmetric_flops(std::size_t nbf, std::size_t nocc, std::size_t stored, std::size_t rows) {
  const double n = double(nbf), o = double(nocc);
  return double(rows) * (4.0 * n * n * o + 2.0 * n * o + 2.0 * double(stored));
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
  const std::size_t n = nbf_, o = nocc_, per_row = n * o + o * o;
  for_rows(first, count, rows, [&](Thread& t, std::size_t q, const double* row) {
    unpack_upper(layout_, row, t.fp64.square.data());
    double* X_q = cache_ + q * per_row;
    symm_upper_left(n, o, t.fp64.square.data(), n, C_occ_, n, X_q, n);
    gemm(Transpose::yes, Transpose::no, o, o, n, 1.0, C_occ_, n, X_q, n, 0.0, X_q + n * o, o);
    if (cache_fp32_ != nullptr) std::copy(X_q, X_q + per_row, cache_fp32_ + q * per_row);
  });
}

void OccupiedResponse::begin(const double* L, Precision precision) {
  if (precision == Precision::fp32 && cache_fp32_ == nullptr)
    throw std::logic_error("OccupiedResponse: an fp32 product needs the fp32 cache");
  L_ = L;
  D_ = nullptr;
  precision_ = precision;
  if (precision == Precision::fp32) L_fp32_.assign(L, L + nbf_ * nocc_);
  for (Thread& t : threads_) {
    std::fill(t.fp64.F.begin(), t.fp64.F.end(), 0.0);
    std::fill(t.fp32.F.begin(), t.fp32.F.end(), 0.0f);
  }
}

void OccupiedResponse::begin_symmetric(const double* D) {
  L_ = nullptr;
  D_ = D;
  precision_ = Precision::fp64;
  D_weights_ = pack_weighted(layout_, D);
  for (Thread& t : threads_) std::fill(t.fp64.F.begin(), t.fp64.F.end(), 0.0);
}

template <typename Real>
void OccupiedResponse::add_row(Buffers<Real>& b, const double* row, const Real* C, const Real* cache,
                               const Real* L) const {
  const std::size_t n = nbf_, o = nocc_;
  const Real* X = cache;
  const Real* M = cache + n * o;
  unpack_upper(layout_, row, b.square.data());
  symm_upper_left(n, o, b.square.data(), n, L, n, b.Y.data(), n);  // Y = B^Q L
  axpy(n * o, Real(4) * dot(n * o, X, L), X, b.F.data());          // 4 γ_Q X^Q
  gemm(Transpose::no, Transpose::no, n, o, o, Real(-1), b.Y.data(), n, M, o, Real(1), b.F.data(), n);
  gemm(Transpose::yes, Transpose::no, o, o, n, Real(1), C, n, b.Y.data(), n, Real(0), b.W.data(), o);
  gemm(Transpose::no, Transpose::yes, n, o, o, Real(-1), X, n, b.W.data(), o, Real(1), b.F.data(), n);
}

void OccupiedResponse::add(std::size_t first, std::size_t count, const double* rows) {
  const std::size_t n = nbf_, o = nocc_, per_row = n * o + o * o;
  if (D_ != nullptr) {
    for_rows(first, count, rows, [&](Thread& t, std::size_t q, const double* row) {
      const double* X_q = cache_ + q * per_row;
      Buffers<double>& b = t.fp64;
      unpack_upper(layout_, row, b.square.data());
      gemm(Transpose::no, Transpose::no, n, o, n, 1.0, D_, n, X_q, n, 0.0, b.Y.data(), n);   // Y = D X^Q
      axpy(n * o, 4.0 * dot(D_weights_.size(), row, D_weights_.data()), X_q, b.F.data());  // 4 γ_Q X^Q
      symm_upper_left(n, o, b.square.data(), n, b.Y.data(), n, b.F.data(), n, -2.0, 1.0);
    });
    return;
  }
  if (precision_ == Precision::fp32)
    for_rows(first, count, rows, [&](Thread& t, std::size_t q, const double* row) {
      add_row(t.fp32, row, C_occ_fp32_.data(), cache_fp32_ + q * per_row, L_fp32_.data());
    });
  else
    for_rows(first, count, rows, [&](Thread& t, std::size_t q, const double* row) {
      add_row(t.fp64, row, C_occ_, cache_ + q * per_row, L_);
    });
}

void OccupiedResponse::finish(double* FC_occ) {
  const std::size_t size = nbf_ * nocc_;
  std::fill(FC_occ, FC_occ + size, 0.0);
  for (const Thread& t : threads_) {
    if (precision_ == Precision::fp32)
      for (std::size_t x = 0; x < size; ++x) FC_occ[x] += static_cast<double>(t.fp32.F[x]);
    else
      axpy(size, 1.0, t.fp64.F.data(), FC_occ);
  }
  L_ = nullptr;
  D_ = nullptr;
}

}  // namespace dfmp2::kernels
