#include "src/integrals/centre_derivatives.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include <libint2/cgshell_ordering.h>
#include <libint2/config.h>
#include <libint2/libint2_params.h>
#include <libint2/solidharmonics.h>

#include "src/common/errors.hpp"

namespace dfmp2 {
namespace {

std::size_t cartesian_count(int l) { return static_cast<std::size_t>((l + 1) * (l + 2) / 2); }

libint2::Shell cartesian_shell(const libint2::Shell& shell, int l, libint2::svector<double> coefficients) {
  return libint2::Shell(shell.alpha, {{l, false, std::move(coefficients)}}, shell.O, false);
}

// 2α_k c_k: the coefficients of the shell of l + 1.
libint2::svector<double> twice_alpha_times_coefficients(const libint2::Shell& shell) {
  libint2::svector<double> c = shell.contr[0].coeff;
  for (std::size_t k = 0; k < c.size(); ++k) c[k] *= 2.0 * shell.alpha[k];
  return c;
}

}  // namespace

int max_differentiable_l() { return std::min(LIBINT2_MAX_AM_default - 1, LIBINT2_MAX_AM_eri1); }

void require_max_l(const libint2::BasisSet& basis, int max_l, const char* what) {
  if (basis.max_l() > max_l)
    throw InputError(std::string(what) + " needs shells of l ≤ " + std::to_string(max_l) + " (libint2's limit), not " +
                     std::to_string(basis.max_l()));
}

CentreDerivative::CentreDerivative(const libint2::Shell& shell)
    : raised(cartesian_shell(shell, shell.contr[0].l + 1, twice_alpha_times_coefficients(shell))) {
  if (shell.contr[0].l > 0) lowered = cartesian_shell(shell, shell.contr[0].l - 1, shell.contr[0].coeff);
}

double derivative_norm_bound(libint2::Engine& engine, const libint2::Shell& a, const CentreDerivative& da,
                             const libint2::Shell& b) {
  using libint2::BraKet;
  using libint2::Operator;
  const auto largest_norm = [&](const libint2::Shell& x) {  // max over x's functions and b's of ‖φ_x φ_b‖
    engine.compute2<Operator::coulomb, BraKet::xx_xx, 0>(x, b, x, b);
    const double* values = engine.results()[0];
    if (values == nullptr) return 0.0;
    const std::size_t n = x.size() * b.size();
    double largest = 0.0;
    for (std::size_t f = 0; f < n; ++f) largest = std::max(largest, values[f * n + f]);
    return std::sqrt(largest);
  };
  const int l = a.contr[0].l;
  double transform = 1.0;
  if (a.contr[0].pure) {
    const auto& T = libint2::solidharmonics::SolidHarmonicsCoefficients<double>::instance(static_cast<unsigned>(l));
    transform = 0.0;
    for (std::size_t s = 0; s < static_cast<std::size_t>(2 * l + 1); ++s) {
      double row = 0.0;
      for (std::size_t k = 0; k < T.nnz(s); ++k) row += std::abs(T.row_values(s)[k]);
      transform = std::max(transform, row);
    }
  }
  return transform * (largest_norm(da.raised) + (da.lowered ? l * largest_norm(*da.lowered) : 0.0));
}

void CentreContraction::start(const libint2::Shell& a, std::size_t outer, std::size_t inner, const double* w) {
  l_ = a.contr[0].l;
  outer_ = outer;
  inner_ = inner;
  if (!a.contr[0].pure) {
    cartesian_weights_ = w;
    return;
  }
  // Σ_s w_s φ_s = Σ_c (Σ_s T_sc w_s) φ_c for solid harmonics φ_s = Σ_c T_sc φ_c.
  const auto& T = libint2::solidharmonics::SolidHarmonicsCoefficients<double>::instance(static_cast<unsigned>(l_));
  const std::size_t ncart = cartesian_count(l_), npure = static_cast<std::size_t>(2 * l_ + 1);
  transformed_.assign(outer * ncart * inner, 0.0);
  for (std::size_t s = 0; s < npure; ++s)
    for (std::size_t k = 0; k < T.nnz(s); ++k) {
      const std::size_t c = T.row_idx(s)[k];
      const double coefficient = T.row_values(s)[k];
      for (std::size_t o = 0; o < outer; ++o) {
        const double* from = w + (o * npure + s) * inner;
        double* to = transformed_.data() + (o * ncart + c) * inner;
        for (std::size_t i = 0; i < inner; ++i) to[i] += coefficient * from[i];
      }
    }
  cartesian_weights_ = transformed_.data();
}

void CentreContraction::add(const double* values, int step, Eigen::Vector3d& f) const {
  if (values == nullptr) return;  // screened: all zero
  const std::size_t ncart = cartesian_count(l_), nshifted = cartesian_count(l_ + step);
  for (int i = l_, c = 0; i >= 0; --i)
    for (int j = l_ - i; j >= 0; --j, ++c) {
      const int exponents[3] = {i, j, l_ - i - j};
      for (int k = 0; k < 3; ++k) {
        int shifted[3] = {exponents[0], exponents[1], exponents[2]};
        shifted[k] += step;
        if (shifted[k] < 0) continue;
        const double factor = step > 0 ? 1.0 : -exponents[k];
        const auto g = static_cast<std::size_t>(
            libint2::INT_CARTINDEX(static_cast<unsigned>(l_ + step), shifted[0], shifted[1]));
        double sum = 0.0;
        for (std::size_t o = 0; o < outer_; ++o) {
          const double* w = cartesian_weights_ + (o * ncart + static_cast<std::size_t>(c)) * inner_;
          const double* v = values + (o * nshifted + g) * inner_;
          for (std::size_t n = 0; n < inner_; ++n) sum += w[n] * v[n];
        }
        f(k) += factor * sum;
      }
    }
}

}  // namespace dfmp2
