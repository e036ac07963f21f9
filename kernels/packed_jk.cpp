#include "kernels/packed_jk.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/blas.hpp"
#include "kernels/packed.hpp"

namespace dfmp2::kernels {
namespace {

// A SYRK wants k ≳ 1000 to run near its peak: that many columns of X^Q per SYRK.
constexpr std::size_t kSyrkColumns = 1024;

std::size_t q_per_syrk(std::size_t nf) { return std::max<std::size_t>(1, kSyrkColumns / std::max<std::size_t>(nf, 1)); }

// Packed D with the off-diagonal elements doubled: γ_Q is then one dot product with a packed row.
std::vector<double> weighted_packed_density(const double* F, std::size_t nbf, std::size_t nf) {
  std::vector<double> D(nbf * nbf);
  syrk_lower(nbf, nf, 1.0, F, nbf, 0.0, D.data(), nbf);
  std::vector<double> packed(packed_size(nbf));
  for (std::size_t m = 0; m < nbf; ++m)
    for (std::size_t n = 0; n <= m; ++n) packed[packed_index(m, n)] = (m == n ? 1.0 : 2.0) * D[n * nbf + m];
  return packed;
}

}  // namespace

// One thread's share: its batches of Q add to its packed J and the lower triangle of each spin's
// K. Buffers are raw storage, grown when needed and used as float or double.
struct PackedJK::Thread {
  std::vector<double> J;               // packed J
  std::vector<std::vector<double>> K;  // per spin: lower K, column-major
  std::vector<double> square, X, K_batch;

  template <typename Real>
  Real* as(std::vector<double>& buffer, std::size_t count) {
    if (buffer.size() * sizeof(double) < count * sizeof(Real)) buffer.resize((count * sizeof(Real) + 7) / 8);
    return reinterpret_cast<Real*>(buffer.data());
  }

  // Per Q, while its packed row is in cache: γ_Q and its share of J, and X^Q_s = B^Q F_s by
  // SYMM from the row copied into one triangle of a square (no mirrored, strided writes).
  template <typename Real>
  void add_batch(const PackedFactors& B, std::size_t q_begin, std::size_t q_end, const double* D_weighted,
                 const Real* F, std::span<const std::size_t> nf_per_spin) {
    const std::size_t nbf = B.nbf, npacked = packed_size(nbf), nq = q_end - q_begin;
    std::size_t nf = 0;
    for (std::size_t n : nf_per_spin) nf += n;
    Real* B_square = as<Real>(square, nbf * nbf);
    // Each spin's X^q of the batch side by side, so that one SYRK per spin takes them all.
    std::array<Real*, kMaxSpins> X_first{}, X_next{};
    X_first[0] = as<Real>(X, nq * nbf * nf);
    for (std::size_t s = 1; s < nf_per_spin.size(); ++s) X_first[s] = X_first[s - 1] + nq * nbf * nf_per_spin[s - 1];
    X_next = X_first;
    for (std::size_t q = q_begin; q < q_end; ++q) {
      const double* row = B.data + q * npacked;
      axpy(npacked, dot(npacked, row, D_weighted), row, J.data());
      unpack_upper(row, nbf, B_square);
      const Real* F_spin = F;
      for (std::size_t s = 0; s < nf_per_spin.size(); F_spin += nbf * nf_per_spin[s], ++s) {
        if (nf_per_spin[s] == 0) continue;  // a spin without electrons (the H atom's β) has K = 0
        symm_upper_left(nbf, nf_per_spin[s], B_square, nbf, F_spin, nbf, X_next[s], nbf);
        X_next[s] += nbf * nf_per_spin[s];
      }
    }
    for (std::size_t s = 0; s < nf_per_spin.size(); ++s)
      if (nf_per_spin[s] > 0) add_syrk(nbf, nq * nf_per_spin[s], X_first[s], K[s]);
  }

  // K += X Xᵀ (lower triangle), X nbf × k.
  template <typename Real>
  void add_syrk(std::size_t nbf, std::size_t k, const Real* X_all, std::vector<double>& K_spin) {
    if constexpr (std::is_same_v<Real, double>) {
      syrk_lower(nbf, k, 1.0, X_all, nbf, 1.0, K_spin.data(), nbf);
    } else {  // float products, double sum across batches
      float* K_float = as<float>(K_batch, nbf * nbf);
      syrk_lower(nbf, k, 1.0f, X_all, nbf, 0.0f, K_float, nbf);
      for (std::size_t col = 0; col < nbf; ++col)
        for (std::size_t row = col; row < nbf; ++row) K_spin[col * nbf + row] += K_float[col * nbf + row];
    }
  }
};

PackedJK::PackedJK(const PackedFactors& B) : B_(B), threads_(static_cast<std::size_t>(omp_get_max_threads())) {}
PackedJK::~PackedJK() = default;

template <typename Real>
void PackedJK::build(const double* F, std::span<const std::size_t> nf_per_spin, double* J,
                     std::span<double* const> K) {
  if (nf_per_spin.empty() || nf_per_spin.size() > kMaxSpins || K.size() != nf_per_spin.size())
    throw std::invalid_argument("PackedJK::build: 1 to " + std::to_string(kMaxSpins) + " spins, one K each");
  const std::size_t nbf = B_.nbf, npacked = packed_size(nbf), spins = nf_per_spin.size();
  std::size_t nf = 0;
  for (std::size_t n : nf_per_spin) nf += n;
  const std::vector<double> D_weighted = weighted_packed_density(F, nbf, nf);
  const std::vector<Real> F_real(F, F + nbf * nf);
  const std::size_t per_syrk = q_per_syrk(nf);
  const std::size_t nbatches = (B_.naux + per_syrk - 1) / per_syrk;
#pragma omp parallel num_threads(static_cast<int>(threads_.size()))
  {
    Thread& mine = threads_[static_cast<std::size_t>(omp_get_thread_num())];
    mine.J.assign(npacked, 0.0);
    mine.K.resize(spins);
    for (auto& K_spin : mine.K) K_spin.assign(nbf * nbf, 0.0);
#pragma omp for schedule(dynamic, 1)
    for (std::size_t batch = 0; batch < nbatches; ++batch)
      mine.add_batch<Real>(B_, batch * per_syrk, std::min(B_.naux, (batch + 1) * per_syrk), D_weighted.data(),
                           F_real.data(), nf_per_spin);
    // Sum the threads' shares, each thread a range of the elements.
#pragma omp for schedule(static)
    for (std::size_t p = 0; p < npacked; ++p)
      for (std::size_t t = 1; t < threads_.size(); ++t) threads_[0].J[p] += threads_[t].J[p];
    for (std::size_t s = 0; s < spins; ++s) {
#pragma omp for schedule(static)
      for (std::size_t x = 0; x < nbf * nbf; ++x)
        for (std::size_t t = 1; t < threads_.size(); ++t) threads_[0].K[s][x] += threads_[t].K[s][x];
    }
  }
  unpack_symmetric(threads_[0].J.data(), nbf, J);
  for (std::size_t s = 0; s < spins; ++s) {
    const std::vector<double>& K_sum = threads_[0].K[s];
    for (std::size_t col = 0; col < nbf; ++col)
      for (std::size_t row = col; row < nbf; ++row)
        K[s][col * nbf + row] = K[s][row * nbf + col] = K_sum[col * nbf + row];
  }
}

double packed_jk_flops(std::size_t naux, std::size_t nbf, std::size_t nf) {
  const double n = double(nbf), q = double(naux), k = double(nf);
  return 3.0 * n * n * k * q + 4.0 * double(packed_size(nbf)) * q;
}

std::size_t packed_jk_workspace_bytes(std::size_t nbf, std::size_t nf, int threads, std::size_t spins) {
  const std::size_t per_thread =
      sizeof(double) * (packed_size(nbf) + (spins + 2) * nbf * nbf + q_per_syrk(nf) * nbf * nf);
  return std::size_t(threads + 1) * per_thread;
}

template void PackedJK::build<double>(const double*, std::span<const std::size_t>, double*, std::span<double* const>);
template void PackedJK::build<float>(const double*, std::span<const std::size_t>, double*, std::span<double* const>);

}  // namespace dfmp2::kernels
