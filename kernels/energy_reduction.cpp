// SIMD energy kernel (Google Highway, compiled for several targets, chosen at runtime).
#include "kernels/energy_reduction.hpp"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/energy_reduction.cpp"
#include <hwy/foreach_target.h>  // re-includes this file once per SIMD target
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace dfmp2::kernels::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Square tile edge: a T_ab tile plus its transposed T_ba counterpart (64×64 fp64 = 32 KiB)
// stay in L1/L2 while they are combined.
constexpr std::size_t kTile = 64;

// kExchange: a same-spin pair, whose a and b run over one set of virtuals (nvir_b = nvir_a,
// eps_b = eps_a), so T_ba exists and ss is summed too. Otherwise an opposite-spin pair: T is
// nvir_a × nvir_b and only os has a meaning. kKeep (fp64 T): each T_ab / Δ_ab also stored at
// kept[a * ld_kept + b].
template <bool kExchange, bool kKeep = false, typename Real>
void ReducePairImpl(const Real* HWY_RESTRICT T, std::size_t ldt, std::size_t nvir_a, std::size_t nvir_b,
                    double eps_ij, const double* HWY_RESTRICT eps_a, const double* HWY_RESTRICT eps_b,
                    double* HWY_RESTRICT out, double* HWY_RESTRICT kept = nullptr, std::size_t ld_kept = 0) {
  static_assert(!kKeep || std::is_same_v<Real, double>, "amplitudes are kept from fp64 T only");
  const hn::ScalableTag<double> d;
  const hn::Rebind<Real, decltype(d)> dr;  // same lane count as d: float lanes promote 1:1
  const std::size_t N = hn::Lanes(d);
  HWY_ALIGN double Tba[kTile * kTile];  // Tba[a * kTile + b] = T_ba, so b runs contiguously as in T_ab

  auto os = hn::Zero(d), ss = hn::Zero(d);
  double os_tail = 0.0, ss_tail = 0.0;
  for (std::size_t a0 = 0; a0 < nvir_a; a0 += kTile) {
    const std::size_t na = std::min(kTile, nvir_a - a0);
    for (std::size_t b0 = 0; b0 < nvir_b; b0 += kTile) {
      const std::size_t nb = std::min(kTile, nvir_b - b0);
      if constexpr (kExchange) {
        for (std::size_t b = 0; b < nb; ++b) {
          const Real* row = T + (b0 + b) * ldt + a0;
          for (std::size_t a = 0; a < na; ++a) Tba[a * kTile + b] = double(row[a]);
        }
      }
      for (std::size_t a = 0; a < na; ++a) {
        const Real* HWY_RESTRICT tab = T + (a0 + a) * ldt + b0;
        const double* HWY_RESTRICT tba = Tba + a * kTile;
        const double* HWY_RESTRICT eb = eps_b + b0;
        const double e_ija = eps_ij - eps_a[a0 + a];
        const auto v_ija = hn::Set(d, e_ija);
        std::size_t b = 0;
        for (; b + N <= nb; b += N) {
          hn::Vec<decltype(d)> x;
          if constexpr (std::is_same_v<Real, double>) {
            x = hn::LoadU(d, tab + b);
          } else {
            x = hn::PromoteTo(d, hn::LoadU(dr, tab + b));
          }
          const auto x_over_delta = hn::Div(x, hn::Sub(v_ija, hn::LoadU(d, eb + b)));
          if constexpr (kKeep) hn::StoreU(x_over_delta, d, kept + (a0 + a) * ld_kept + b0 + b);
          os = hn::MulAdd(x, x_over_delta, os);
          if constexpr (kExchange) ss = hn::MulAdd(hn::Sub(x, hn::Load(d, tba + b)), x_over_delta, ss);
        }
        for (; b < nb; ++b) {
          const double x = double(tab[b]);
          const double x_over_delta = x / (e_ija - eb[b]);
          if constexpr (kKeep) kept[(a0 + a) * ld_kept + b0 + b] = x_over_delta;
          os_tail += x * x_over_delta;
          if constexpr (kExchange) ss_tail += (x - tba[b]) * x_over_delta;
        }
      }
    }
  }
  out[0] = hn::GetLane(hn::SumOfLanes(d, os)) + os_tail;
  out[1] = hn::GetLane(hn::SumOfLanes(d, ss)) + ss_tail;
}

// Highway exports plain functions, not templates: one thin entry per precision and pair kind.
void ReducePairF64(const double* T, std::size_t ldt, std::size_t nvir, double eps_ij, const double* eps_vir,
                   double* out) {
  ReducePairImpl<true>(T, ldt, nvir, nvir, eps_ij, eps_vir, eps_vir, out);
}
void ReducePairF32(const float* T, std::size_t ldt, std::size_t nvir, double eps_ij, const double* eps_vir,
                   double* out) {
  ReducePairImpl<true>(T, ldt, nvir, nvir, eps_ij, eps_vir, eps_vir, out);
}
void ReduceOppositeSpinF64(const double* T, std::size_t ldt, std::size_t nvir_a, std::size_t nvir_b, double eps_ij,
                           const double* eps_a, const double* eps_b, double* out) {
  ReducePairImpl<false>(T, ldt, nvir_a, nvir_b, eps_ij, eps_a, eps_b, out);
}
void ReduceOppositeSpinF32(const float* T, std::size_t ldt, std::size_t nvir_a, std::size_t nvir_b, double eps_ij,
                           const double* eps_a, const double* eps_b, double* out) {
  ReducePairImpl<false>(T, ldt, nvir_a, nvir_b, eps_ij, eps_a, eps_b, out);
}
void ReducePairKeepingF64(const double* T, std::size_t ldt, std::size_t nvir, double eps_ij, const double* eps_vir,
                          double* kept, std::size_t ld_kept, double* out) {
  ReducePairImpl<true, true>(T, ldt, nvir, nvir, eps_ij, eps_vir, eps_vir, out, kept, ld_kept);
}
void ReduceOppositeSpinKeepingF64(const double* T, std::size_t ldt, std::size_t nvir_a, std::size_t nvir_b,
                                  double eps_ij, const double* eps_a, const double* eps_b, double* kept,
                                  std::size_t ld_kept, double* out) {
  ReducePairImpl<false, true>(T, ldt, nvir_a, nvir_b, eps_ij, eps_a, eps_b, out, kept, ld_kept);
}
std::int64_t CompiledTarget() { return HWY_TARGET; }

}  // namespace dfmp2::kernels::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace dfmp2::kernels::detail {

HWY_EXPORT(ReducePairF64);
HWY_EXPORT(ReducePairF32);
HWY_EXPORT(ReduceOppositeSpinF64);
HWY_EXPORT(ReduceOppositeSpinF32);
HWY_EXPORT(ReducePairKeepingF64);
HWY_EXPORT(ReduceOppositeSpinKeepingF64);
HWY_EXPORT(CompiledTarget);

// Calls one exported kernel, which writes os and ss to its last argument.
template <typename Kernel, typename... Args>
PairEnergy run_kernel(Kernel&& kernel, Args... args) {
  double out[2];
  kernel(args..., out);
  return {out[0], out[1]};
}

template <typename Real>
PairEnergy reduce_pair(const Real* T, std::size_t ldt, std::size_t nvir, double eps_ij, const double* eps_vir) {
  if constexpr (std::is_same_v<Real, double>)
    return run_kernel(HWY_DYNAMIC_DISPATCH(ReducePairF64), T, ldt, nvir, eps_ij, eps_vir);
  else
    return run_kernel(HWY_DYNAMIC_DISPATCH(ReducePairF32), T, ldt, nvir, eps_ij, eps_vir);
}

template <typename Real>
PairEnergy reduce_pair_opposite_spin(const Real* T, std::size_t ldt, std::size_t nvir_a, std::size_t nvir_b,
                                     double eps_ij, const double* eps_a, const double* eps_b) {
  if constexpr (std::is_same_v<Real, double>)
    return run_kernel(HWY_DYNAMIC_DISPATCH(ReduceOppositeSpinF64), T, ldt, nvir_a, nvir_b, eps_ij, eps_a, eps_b);
  else
    return run_kernel(HWY_DYNAMIC_DISPATCH(ReduceOppositeSpinF32), T, ldt, nvir_a, nvir_b, eps_ij, eps_a, eps_b);
}
template PairEnergy reduce_pair<double>(const double*, std::size_t, std::size_t, double, const double*);
template PairEnergy reduce_pair<float>(const float*, std::size_t, std::size_t, double, const double*);
template PairEnergy reduce_pair_opposite_spin<double>(const double*, std::size_t, std::size_t, std::size_t, double,
                                                      const double*, const double*);
template PairEnergy reduce_pair_opposite_spin<float>(const float*, std::size_t, std::size_t, std::size_t, double,
                                                     const double*, const double*);

PairEnergy reduce_pair_keeping(const double* T, std::size_t ldt, std::size_t nvir, double eps_ij, const double* eps_vir,
                               double* kept, std::size_t ld_kept) {
  return run_kernel(HWY_DYNAMIC_DISPATCH(ReducePairKeepingF64), T, ldt, nvir, eps_ij, eps_vir, kept, ld_kept);
}
PairEnergy reduce_pair_opposite_spin_keeping(const double* T, std::size_t ldt, std::size_t nvir_a, std::size_t nvir_b,
                                             double eps_ij, const double* eps_a, const double* eps_b, double* kept,
                                             std::size_t ld_kept) {
  return run_kernel(HWY_DYNAMIC_DISPATCH(ReduceOppositeSpinKeepingF64), T, ldt, nvir_a, nvir_b, eps_ij, eps_a, eps_b,
                    kept, ld_kept);
}

const char* reduction_simd_target() { return hwy::TargetName(HWY_DYNAMIC_DISPATCH(CompiledTarget)()); }

}  // namespace dfmp2::kernels::detail
#endif
