#include "kernels/gpu/stacked_response.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/gpu/gpu_jk_plan.hpp"

namespace dfmp2::kernels {
namespace {

std::size_t doubles(std::size_t count) { return gpu_aligned(sizeof(double) * count); }

std::size_t most_occupied(const GpuResponsePlan& p) {
  return p.nocc.empty() ? 0 : *std::max_element(p.nocc.begin(), p.nocc.end());
}

// Each set's C, L, F (nbf × o) and D (nbf², of symmetric products), its caches X (nbf × o per Q)
// and M (o² per Q); a set without orbitals has none.
struct SetParts {
  std::size_t C = 0, L = 0, F = 0, D = 0, X = 0, M = 0;
};
SetParts set_parts(const GpuResponsePlan& p, std::size_t o) {
  if (o == 0) return {};
  const std::size_t n = p.nbf;
  return {doubles(n * o), doubles(n * o), doubles(n * o), doubles(n * n), doubles(p.rows * n * o),
          doubles(p.rows * o * o)};
}

// The plan's buffers for batches of batch_q.
GpuResponsePlan with_batch(GpuResponsePlan p, std::size_t batch_q) {
  const std::size_t n = p.nbf, o = most_occupied(p);
  p.batch_q = batch_q;
  p.rows_bytes = doubles(p.stored * (p.resident ? p.rows : batch_q));
  p.batch_bytes = doubles(batch_q * n * n) + doubles(batch_q * n * o) + doubles(batch_q * o * o);
  p.caches_bytes = 0;
  p.fixed_bytes = 2 * doubles(p.stored) + doubles(batch_q) + gpu_aligned(2 * sizeof(std::uint32_t) * p.stored);
  for (const std::size_t set : p.nocc) {
    const SetParts s = set_parts(p, set);
    p.caches_bytes += s.X + s.M;
    p.fixed_bytes += s.C + s.L + s.F + s.D;
  }
  return p;
}

// Σ_t pack_weighted(A_t) of the sets' n × n matrices A_t.
std::vector<double> packed_weights(const BlockPackedLayout& layout, const std::vector<std::vector<double>>& squares) {
  std::vector<double> sum(layout.size(), 0.0);
  for (const std::vector<double>& A : squares) {
    const std::vector<double> packed = pack_weighted(layout, A.data());
    for (std::size_t p = 0; p < sum.size(); ++p) sum[p] += packed[p];
  }
  return sum;
}

}  // namespace

GpuResponsePlan plan_gpu_response(std::size_t nbf, std::size_t stored, std::size_t rows,
                                  std::vector<std::size_t> nocc, std::size_t device_bytes) {
  GpuResponsePlan p;
  p.nbf = nbf;
  p.stored = stored;
  p.rows = rows;
  p.nocc = std::move(nocc);
  const std::size_t o = most_occupied(p);
  const std::size_t per_q = sizeof(double) * (nbf * nbf + nbf * o + o * o);
  return batched_plan(p, per_q, device_bytes, with_batch, [&](std::size_t least) {
    return "GPU: the Z-vector's products need at least " + format_gib(least) + " of GPU memory (" +
           std::to_string(nbf) + " functions, " + std::to_string(rows) + " rows B^Q, their B^Q C_o resident), but " +
           format_gib(device_bytes) + " is given";
  });
}

double gpu_response_flops(const GpuResponsePlan& plan, bool symmetric) {
  const double n = double(plan.nbf);
  double per_row = 4.0 * double(plan.stored);
  for (const std::size_t set : plan.nocc) {
    const double o = double(set);
    per_row += symmetric ? 4.0 * n * n * o : 2.0 * n * n * o + 6.0 * n * o * o;
  }
  return double(plan.rows) * per_row;
}

StackedResponse::StackedResponse(const BlockPackedLayout& layout, const GpuResponsePlan& plan, JKDevice& device,
                                 std::vector<OccupiedResponse::Set> sets)
    : layout_(layout), plan_(plan), device_(device), engine_(device.engine()) {
  if (layout.n() != plan.nbf || layout.size() != plan.stored || sets.size() != plan.nocc.size())
    throw std::invalid_argument("StackedResponse: the plan is for another layout or other sets");
  const std::size_t n = plan.nbf, o_most = most_occupied(plan);
  DeviceCarver carve(device.memory());
  rows_ = carve.take<double>(plan.rows_bytes);
  stack_ = carve.take<double>(doubles(plan.batch_q * n * n));
  Y_ = carve.take<double>(doubles(plan.batch_q * n * o_most));
  W_ = carve.take<double>(doubles(plan.batch_q * o_most * o_most));
  weighted_ = carve.take<double>(doubles(plan.stored));
  J_ = carve.take<double>(doubles(plan.stored));
  gamma_ = carve.take<double>(doubles(plan.batch_q));
  table_ = carve.take<std::uint32_t>(gpu_aligned(2 * sizeof(std::uint32_t) * plan.stored));
  for (std::size_t s = 0; s < sets.size(); ++s) {
    if (sets[s].nocc != plan.nocc[s] || sets[s].cache_fp32 != nullptr)
      throw std::invalid_argument("StackedResponse: set " + std::to_string(s) +
                                  " is not the plan's, or has an fp32 cache");
    const SetParts part = set_parts(plan, sets[s].nocc);
    SetBuffers b{sets[s]};
    b.C = carve.take<double>(part.C);
    b.L = carve.take<double>(part.L);
    b.F = carve.take<double>(part.F);
    b.D = carve.take<double>(part.D);
    b.X = carve.take<double>(part.X);
    b.M = carve.take<double>(part.M);
    if (b.set.nocc > 0) device.copy_to(b.C, b.set.C_occ, sizeof(double) * n * b.set.nocc);
    sets_.push_back(b);
  }
  table_host_ = packed_coordinates(layout);
  device.copy_to(table_, table_host_.data(), sizeof(std::uint32_t) * table_host_.size());
  device.zero(stack_, doubles(plan.batch_q * n * n));  // unpack writes the stored blocks only
  device.synchronise();
  batch_at_.assign(plan.rows, 0);
  if (plan.resident) loaded_.assign(plan.rows, 0);
}

bool StackedResponse::resident_rows_loaded(std::size_t first, std::size_t count) {
  const auto loaded = loaded_.begin() + std::ptrdiff_t(first);
  const bool all = std::all_of(loaded, loaded + std::ptrdiff_t(count), [](char l) { return l != 0; });
  std::fill(loaded, loaded + std::ptrdiff_t(count), char(1));
  return all;
}

template <typename Batch>
void StackedResponse::for_batches(std::size_t first, std::size_t count, const double* rows, const Batch& batch) {
  if (first + count > plan_.rows)
    throw std::invalid_argument("StackedResponse: rows " + std::to_string(first) + " + " + std::to_string(count) +
                                " beyond the plan's " + std::to_string(plan_.rows));
  const std::size_t stored = plan_.stored;
  bool copied = false;
  for (std::size_t done = 0; done < count; done += plan_.batch_q) {
    const std::size_t nq = std::min(plan_.batch_q, count - done), q0 = first + done;
    double* B = plan_.resident ? rows_ + q0 * stored : rows_;
    if (!plan_.resident || !resident_rows_loaded(q0, nq)) {
      device_.copy_to(B, rows + done * stored, sizeof(double) * nq * stored);  // after the last batch's reads
      uploaded_ += sizeof(double) * nq * stored;
      copied = true;
    }
    batch(B, q0, nq);
  }
  if (copied) device_.synchronise();  // the caller may reuse its rows
}

void StackedResponse::cache(std::size_t first, std::size_t count, const double* rows) {
  for_batches(first, count, rows, [&](const double* B, std::size_t q0, std::size_t nq) {
    batch_at_[q0] = nq;
    cache_batch(B, q0, nq);
    copy_caches_to_host(q0, nq);
  });
}

// X = S C_s and M = C_sᵀ X of the batch, at its rows' place in the caches.
void StackedResponse::cache_batch(const double* B, std::size_t first, std::size_t nq) {
  const std::size_t n = plan_.nbf, ld = plan_.batch_q * n;
  device_.unpack(B, nq, plan_.stored, table_, n, ld, stack_);
  for (SetBuffers& b : sets_) {
    const std::size_t o = b.set.nocc;
    if (o == 0) continue;
    double *X = b.X + first * n * o, *M = b.M + first * o * o;
    engine_.gemm(Op::none, Op::none, 1.0, view<const double>(stack_, nq * n, n, ld), view<const double>(b.C, n, o, n),
                 0.0, view(X, nq * n, o, nq * n));
    engine_.gemm(Op::transpose, Op::none, 1.0, view<const double>(b.C, n, o, n), view<const double>(X, n, nq * o, n),
                 0.0, view(M, o, nq * o, o));
  }
}

// The batch's X and M into each set's host cache, OccupiedResponse's layout (per Q: X^Q, then M^Q):
// column q + nq·c of the device's holds column c of row q's.
void StackedResponse::copy_caches_to_host(std::size_t first, std::size_t nq) {
  const std::size_t n = plan_.nbf;
  for (const SetBuffers& b : sets_) {
    const std::size_t o = b.set.nocc;
    if (o == 0) continue;
    caches_host_.resize(nq * (n * o + o * o));
    double *X = caches_host_.data(), *M = X + nq * n * o;
    device_.copy_from(X, b.X + first * n * o, sizeof(double) * nq * n * o);
    device_.copy_from(M, b.M + first * o * o, sizeof(double) * nq * o * o);
    device_.synchronise();
    for (std::size_t q = 0; q < nq; ++q) {
      double* row = b.set.cache + (first + q) * (n * o + o * o);
      for (std::size_t c = 0; c < o; ++c) {
        std::copy_n(X + n * (q + nq * c), n, row + n * c);
        std::copy_n(M + o * (q + nq * c), o, row + n * o + o * c);
      }
    }
  }
}

void StackedResponse::begin(std::span<const double* const> L) {
  if (L.size() != sets_.size()) throw std::logic_error("StackedResponse: one L per set");
  const std::size_t n = plan_.nbf;
  std::vector<std::vector<double>> LC;  // L_t C_tᵀ, whose weights give γ
  for (std::size_t s = 0; s < sets_.size(); ++s) {
    const std::size_t o = sets_[s].set.nocc;
    if (o == 0) continue;
    device_.copy_to(sets_[s].L, L[s], sizeof(double) * n * o);
    LC.emplace_back(n * n);
    cpu_engine().gemm(Op::none, Op::transpose, 1.0, host_matrix(L[s], n, o, n),
                      host_matrix(sets_[s].set.C_occ, n, o, n), 0.0, host_matrix(LC.back().data(), n, n, n));
  }
  symmetric_ = false;
  begin_product(packed_weights(layout_, LC));
}

void StackedResponse::begin_symmetric(std::span<const double* const> D) {
  if (D.size() != sets_.size()) throw std::logic_error("StackedResponse: one D per set");
  const std::size_t n = plan_.nbf;
  std::vector<std::vector<double>> squares;
  for (std::size_t s = 0; s < sets_.size(); ++s) {
    squares.emplace_back(D[s], D[s] + n * n);
    if (sets_[s].set.nocc > 0) device_.copy_to(sets_[s].D, D[s], sizeof(double) * n * n);
  }
  symmetric_ = true;
  begin_product(packed_weights(layout_, squares));
}

void StackedResponse::begin_product(const std::vector<double>& weighted) {
  weighted_host_ = weighted;
  device_.copy_to(weighted_, weighted_host_.data(), sizeof(double) * weighted_host_.size());
  device_.zero(J_, sizeof(double) * plan_.stored);
  for (const SetBuffers& b : sets_)
    if (b.set.nocc > 0) device_.zero(b.F, sizeof(double) * plan_.nbf * b.set.nocc);
  device_.synchronise();  // the caller's L or D may go
}

void StackedResponse::check_batch(std::size_t first, std::size_t nq) {
  if (batch_at_[first] != nq)
    throw std::logic_error("StackedResponse: rows " + std::to_string(first) + " + " + std::to_string(nq) +
                           " are not a batch of the caching pass");
}

void StackedResponse::add(std::size_t first, std::size_t count, const double* rows) {
  for_batches(first, count, rows, [&](const double* B, std::size_t q0, std::size_t nq) {
    check_batch(q0, nq);
    add_coulomb(B, nq);
    device_.unpack(B, nq, plan_.stored, table_, plan_.nbf, plan_.batch_q * plan_.nbf, stack_);
    add_exchange(q0, nq);
  });
}

// γ = Bᵀ D_w and J += B γ over the batch's packed rows.
void StackedResponse::add_coulomb(const double* B, std::size_t nq) {
  const std::size_t stored = plan_.stored;
  const MatrixView<const double> rows = view<const double>(B, stored, nq, stored);
  engine_.gemm(Op::transpose, Op::none, 1.0, rows, view<const double>(weighted_, stored, 1, stored), 0.0,
               view(gamma_, nq, 1, nq));
  engine_.gemm(Op::none, Op::none, 1.0, rows, view<const double>(gamma_, nq, 1, nq), 1.0, view(J_, stored, 1, stored));
}

// Each set's F_s −= Y Mᵀ + X (C_sᵀ Y)ᵀ, Y = S L_s; of D_s: F_s −= 2 Sᵀ (D_s X). The stack holds the batch.
void StackedResponse::add_exchange(std::size_t first, std::size_t nq) {
  const std::size_t n = plan_.nbf, ld = plan_.batch_q * n;
  const MatrixView<const double> S = view<const double>(stack_, nq * n, n, ld);
  for (const SetBuffers& b : sets_) {
    const std::size_t o = b.set.nocc;
    if (o == 0) continue;
    const MatrixView<const double> X = view<const double>(b.X + first * n * o, n, nq * o, n);
    const MatrixView<double> F = view(b.F, n, o, n);
    if (symmetric_) {
      engine_.gemm(Op::none, Op::none, 1.0, view<const double>(b.D, n, n, n), X, 0.0, view(Y_, n, nq * o, n));
      engine_.gemm(Op::transpose, Op::none, -2.0, S, view<const double>(Y_, nq * n, o, nq * n), 1.0, F);
      continue;
    }
    const MatrixView<const double> C = view<const double>(b.C, n, o, n), Y = view<const double>(Y_, n, nq * o, n);
    engine_.gemm(Op::none, Op::none, 1.0, S, view<const double>(b.L, n, o, n), 0.0, view(Y_, nq * n, o, nq * n));
    engine_.gemm(Op::none, Op::transpose, -1.0, Y, view<const double>(b.M + first * o * o, o, nq * o, o), 1.0, F);
    engine_.gemm(Op::transpose, Op::none, 1.0, C, Y, 0.0, view(W_, o, nq * o, o));
    engine_.gemm(Op::none, Op::transpose, -1.0, X, view<const double>(W_, o, nq * o, o), 1.0, F);
  }
}

// F_s += 2w J C_s (J unpacked into the stack's first square), then each F_s to the host.
void StackedResponse::finish(std::span<double* const> FC_occ) {
  const std::size_t n = plan_.nbf, ld = plan_.batch_q * n;
  device_.unpack(J_, 1, plan_.stored, table_, n, ld, stack_);
  const double coulomb_weight = 4.0 / double(sets_.size());
  for (std::size_t s = 0; s < sets_.size(); ++s) {
    const std::size_t o = sets_[s].set.nocc;
    if (o == 0 || FC_occ[s] == nullptr) continue;
    engine_.gemm(Op::none, Op::none, coulomb_weight, view<const double>(stack_, n, n, ld),
                 view<const double>(sets_[s].C, n, o, n), 1.0, view(sets_[s].F, n, o, n));
    device_.copy_from(FC_occ[s], sets_[s].F, sizeof(double) * n * o);
  }
  device_.synchronise();
}

}  // namespace dfmp2::kernels
