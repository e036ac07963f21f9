#include "kernels/occupied_response.hpp"

#include <omp.h>

#include <algorithm>
#include <stdexcept>

#include "kernels/blas.hpp"

namespace dfmp2::kernels {

OccupiedResponse::OccupiedResponse(const BlockPackedLayout& layout, const double* C_occ, std::size_t nocc,
                                   std::size_t rows, double* cache, int threads)
    : layout_(layout),
      C_occ_(C_occ),
      nbf_(layout.n()),
      nocc_(nocc),
      rows_(rows),
      cache_(cache),
      threads_(static_cast<std::size_t>(std::max(threads, 1))) {
  for (Thread& t : threads_) {
    // Positions outside the stored blocks are never written by unpack_upper: zero once.
    t.square.assign(nbf_ * nbf_, 0.0);
    t.Y.resize(nbf_ * nocc_);
    t.W.resize(nocc_ * nocc_);
    t.F.resize(nbf_ * nocc_);
  }
}

std::size_t OccupiedResponse::workspace_bytes(std::size_t nbf, std::size_t nocc, int threads) {
  return std::size_t(std::max(threads, 1)) * sizeof(double) * (nbf * nbf + 2 * nbf * nocc + nocc * nocc);
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
    for (std::size_t q = 0; q < count; ++q) {
      unpack_upper(layout_, rows + q * stored, t.square.data());
      visit(t, first + q, rows + q * stored);
    }
  }
}

void OccupiedResponse::cache(std::size_t first, std::size_t count, const double* rows) {
  const std::size_t n = nbf_, o = nocc_;
  for_rows(first, count, rows, [&](Thread& t, std::size_t q, const double*) {
    double* X_q = cache_ + q * (n * o + o * o);
    symm_upper_left(n, o, t.square.data(), n, C_occ_, n, X_q, n);
    gemm(Transpose::yes, Transpose::no, o, o, n, 1.0, C_occ_, n, X_q, n, 0.0, X_q + n * o, o);
  });
}

void OccupiedResponse::begin(const double* L) {
  L_ = L;
  D_ = nullptr;
  for (Thread& t : threads_) std::fill(t.F.begin(), t.F.end(), 0.0);
}

void OccupiedResponse::begin_symmetric(const double* D) {
  L_ = nullptr;
  D_ = D;
  D_weights_ = pack_weighted(layout_, D);
  for (Thread& t : threads_) std::fill(t.F.begin(), t.F.end(), 0.0);
}

void OccupiedResponse::add(std::size_t first, std::size_t count, const double* rows) {
  const std::size_t n = nbf_, o = nocc_;
  if (D_ != nullptr) {
    for_rows(first, count, rows, [&](Thread& t, std::size_t q, const double* row) {
      gemm(Transpose::no, Transpose::no, n, o, n, 1.0, D_, n, X(q), n, 0.0, t.Y.data(), n);  // Y = D X^Q
      axpy(n * o, 4.0 * dot(D_weights_.size(), row, D_weights_.data()), X(q), t.F.data());  // 4 γ_Q X^Q
      symm_upper_left(n, o, t.square.data(), n, t.Y.data(), n, t.F.data(), n, -2.0, 1.0);
    });
    return;
  }
  for_rows(first, count, rows, [&](Thread& t, std::size_t q, const double*) {
    symm_upper_left(n, o, t.square.data(), n, L_, n, t.Y.data(), n);  // Y = B^Q L
    axpy(n * o, 4.0 * dot(n * o, X(q), L_), X(q), t.F.data());        // 4 γ_Q X^Q
    gemm(Transpose::no, Transpose::no, n, o, o, -1.0, t.Y.data(), n, M(q), o, 1.0, t.F.data(), n);
    gemm(Transpose::yes, Transpose::no, o, o, n, 1.0, C_occ_, n, t.Y.data(), n, 0.0, t.W.data(), o);
    gemm(Transpose::no, Transpose::yes, n, o, o, -1.0, X(q), n, t.W.data(), o, 1.0, t.F.data(), n);
  });
}

void OccupiedResponse::finish(double* FC_occ) {
  std::copy(threads_[0].F.begin(), threads_[0].F.end(), FC_occ);
  for (std::size_t t = 1; t < threads_.size(); ++t) axpy(nbf_ * nocc_, 1.0, threads_[t].F.data(), FC_occ);
  L_ = nullptr;
  D_ = nullptr;
}

}  // namespace dfmp2::kernels
