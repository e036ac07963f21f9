#include "kernels/gpu/stacked_transform.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/gpu/gpu_jk_plan.hpp"

namespace dfmp2::kernels {
namespace {

// A batch's squares and products take up to this much (as the J/K's batches).
constexpr std::size_t kBatchBytes = std::size_t(1) << 30;

GpuTransformPlan with_batch(GpuTransformPlan p, std::size_t batch_q) {
  p.batch_q = batch_q;
  p.rows_bytes = gpu_aligned(sizeof(double) * p.stored * batch_q);
  p.squares_bytes = gpu_aligned(sizeof(double) * p.nbf * p.nbf * batch_q);
  p.x_bytes = gpu_aligned(sizeof(double) * p.nbf * p.nocc_all * batch_q);
  p.out_bytes = gpu_aligned(sizeof(double) * p.nov_all * batch_q);
  p.fixed_bytes = gpu_aligned(sizeof(double) * p.nbf * p.nocc_all) + gpu_aligned(sizeof(double) * p.nbf * p.nvir_all) +
                  gpu_aligned(2 * sizeof(std::uint32_t) * p.stored);
  return p;
}

}  // namespace

GpuTransformPlan plan_gpu_transform(std::size_t nbf, std::size_t stored, std::size_t nocc_all, std::size_t nvir_all,
                                    std::size_t nov_all, std::size_t most_q, std::size_t device_bytes) {
  const GpuTransformPlan p{.nbf = nbf, .stored = stored, .nocc_all = nocc_all, .nvir_all = nvir_all, .nov_all = nov_all};
  const std::size_t per_q = sizeof(double) * (stored + nbf * (nbf + nocc_all) + nov_all);
  const std::size_t wanted = std::clamp<std::size_t>(kBatchBytes / std::max<std::size_t>(per_q, 1), 1,
                                                     std::max<std::size_t>(most_q, 1));
  const std::size_t batch =
      largest_fitting(wanted, [&](std::size_t q) { return with_batch(p, q).device_bytes() <= device_bytes; });
  if (batch == 0)
    throw GpuError("GPU: the DF transform needs at least " + format_gib(with_batch(p, 1).device_bytes()) +
                   " of GPU memory (" + std::to_string(nbf) + " functions, " + std::to_string(nov_all) +
                   " occupied-virtual pairs), but " + format_gib(device_bytes) +
                   " is given: raise --gpu-memory or use --device cpu");
  return with_batch(p, batch);
}

StackedTransform::StackedTransform(const BlockPackedLayout& layout, const GpuTransformPlan& plan,
                                   std::span<const TransformOrbitals> spins, JKDevice& device)
    : plan_(plan), device_(device), engine_(device.engine()) {
  if (layout.n() != plan.nbf || layout.size() != plan.stored)
    throw std::invalid_argument("StackedTransform: the plan is for another layout");
  std::size_t nocc_all = 0, nvir_all = 0;
  for (const TransformOrbitals& s : spins) {
    spins_.push_back({s.nocc, s.nvir, nocc_all, nvir_all, nov_all_});
    nocc_all += s.nocc;
    nvir_all += s.nvir;
    nov_all_ += s.nocc * s.nvir;
  }
  if (nocc_all != plan.nocc_all || nvir_all > plan.nvir_all || nov_all_ > plan.nov_all)
    throw std::invalid_argument("StackedTransform: the plan is for other orbitals");
  const std::size_t n = plan.nbf;
  C_occ_host_.resize(n * nocc_all);
  C_vir_host_.resize(n * nvir_all);
  for (std::size_t s = 0; s < spins.size(); ++s) {
    std::copy_n(spins[s].C_occ, n * spins[s].nocc, C_occ_host_.begin() + std::ptrdiff_t(n * spins_[s].occ_offset));
    std::copy_n(spins[s].C_vir, n * spins[s].nvir, C_vir_host_.begin() + std::ptrdiff_t(n * spins_[s].vir_offset));
  }
  table_host_ = packed_coordinates(layout);
  DeviceCarver carve(device.memory());
  rows_ = carve.take<double>(plan.rows_bytes);
  stack_ = carve.take<double>(plan.squares_bytes);
  X_ = carve.take<double>(plan.x_bytes);
  out_ = carve.take<double>(plan.out_bytes);
  C_occ_ = carve.take<double>(gpu_aligned(sizeof(double) * n * plan.nocc_all));
  C_vir_ = carve.take<double>(gpu_aligned(sizeof(double) * n * plan.nvir_all));
  table_ = carve.take<std::uint32_t>(gpu_aligned(2 * sizeof(std::uint32_t) * plan.stored));
  device.copy_to(C_occ_, C_occ_host_.data(), sizeof(double) * C_occ_host_.size());
  device.copy_to(C_vir_, C_vir_host_.data(), sizeof(double) * C_vir_host_.size());
  device.copy_to(table_, table_host_.data(), sizeof(std::uint32_t) * table_host_.size());
  device.zero(stack_, plan.squares_bytes);  // the blocks not stored stay zero: unpacks write the same places
  device.synchronise();
}

void StackedTransform::operator()(const double* ao, std::size_t nq, double* out) {
  for (std::size_t done = 0; done < nq; done += plan_.batch_q) {
    const std::size_t count = std::min(plan_.batch_q, nq - done);
    run_batch(ao + done * plan_.stored, count, out + done * nov_all_);
  }
  device_.synchronise();  // `out` is written, `ao` may be reused
}

// Queued on the device's stream: each buffer is rewritten only after the last batch's reads.
void StackedTransform::run_batch(const double* ao, std::size_t nq, double* out) {
  const std::size_t n = plan_.nbf, ld = plan_.batch_q * n;
  const Memory memory = engine_.memory();
  device_.copy_to(rows_, ao, sizeof(double) * nq * plan_.stored);
  device_.unpack(rows_, nq, plan_.stored, table_, n, ld, stack_);
  // X (nq·n × nocc_all, ld nq·n): rows q·n … q·n + n − 1 are (Q|μν) C_occ of the batch's q-th Q.
  const std::size_t ldx = nq * n;
  engine_.gemm(Op::none, Op::none, 1.0, MatrixView<const double>{stack_, nq * n, n, ld, memory},
               MatrixView<const double>{C_occ_, n, plan_.nocc_all, n, memory}, 0.0,
               MatrixView<double>{X_, nq * n, plan_.nocc_all, ldx, memory});
  for (std::size_t q = 0; q < nq; ++q)
    for (const Spin& s : spins_) {
      if (s.nocc * s.nvir == 0) continue;  // a spin without electrons (the H atom's β)
      // Column-major nvir × nocc is row-major [i][a].
      const double* C_vir = C_vir_ + n * s.vir_offset;
      engine_.gemm(Op::transpose, Op::none, 1.0, MatrixView<const double>{C_vir, n, s.nvir, n, memory},
                   MatrixView<const double>{X_ + q * n + ldx * s.occ_offset, n, s.nocc, ldx, memory}, 0.0,
                   MatrixView<double>{out_ + q * nov_all_ + s.ov_offset, s.nvir, s.nocc, s.nvir, memory});
    }
  device_.copy_from(out, out_, sizeof(double) * nq * nov_all_);
}

}  // namespace dfmp2::kernels
